/* Scalar quantizers of one K row into one record (NUMERICS §2.1-§2.3, §9).
 * Written to be obviously right: they are the oracle of the faster paths. */
#ifndef DSV4KV_CPU_QUANT_H
#define DSV4KV_CPU_QUANT_H

#include <stdint.h>

#include "dsv4kv.h"

/* Quantize n bf16 values (n = 32 or 64) with one UE8M0 scale: codes[0..n) and
 * the scale byte, fp8 flavour OCP (max 448) or FNUZ (max 240). */
void quant_fp8_block(const uint16_t *x, int n, dsv4kv_fp8_flavor fp8, uint8_t *codes,
                     uint8_t *scale_byte);

/* V4 record of one token: 448 e4m3 + 64 raw bf16 at `data`, 8 scale bytes at `scales`. */
void quant_v4_record(const uint16_t *x, dsv4kv_fp8_flavor fp8, uint8_t *data, uint8_t *scales);
/* MXFP8 record (528 B) of one token. */
void quant_mxfp8_record(const uint16_t *x, dsv4kv_fp8_flavor fp8, uint8_t *rec);
/* NVFP4 record (288 B) of one token. */
void quant_nvfp4_record(const uint16_t *x, uint8_t *rec);

/* Number of NaN / Inf values among n bf16 values. */
int64_t count_nonfinite_bf16(const uint16_t *x, int n);

#endif
