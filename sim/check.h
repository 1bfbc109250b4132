/* Verification: the bounds a gathered key must meet, error statistics, and
 * the record of failures. */
#ifndef DSV4KV_SIM_CHECK_H
#define DSV4KV_SIM_CHECK_H

#include <stdarg.h>
#include <stdint.h>

#include "dsv4kv.h"

/* Quantization error accumulated over verified values.  max_abs_err is
 * absolute, in the keys' own units; max_rel_amax is the largest |err| / amax,
 * amax the max |x| of the value's scale block (the quantizer's unit). */
typedef struct {
  double sum_err2, sum_ref2, max_abs_err, max_rel_amax;
  int64_t values, rows;
} sim_errstat;

/* The first element of a row outside its bound, for the failure message. */
typedef struct {
  int dim;                          /* -1: none                            */
  double value, expected, bound;    /* decoded, original / reference, |bound| */
} sim_outlier;

void sim_errstat_add(sim_errstat *dst, const sim_errstat *src);
double sim_errstat_rel_rms(const sim_errstat *s); /* sqrt(sum err^2 / sum ref^2) */
double sim_errstat_snr_db(const sim_errstat *s);  /* 10 log10(sum ref^2 / sum err^2) */

typedef enum {
  SIM_FAIL_STATUS,      /* a library call returned an error status             */
  SIM_FAIL_SKIPPED,     /* the library skipped out-of-range entries            */
  SIM_FAIL_KEY,         /* a gathered key is outside its format's error bound  */
  SIM_FAIL_INDEX_PAGE,  /* an index points outside the request's pages         */
  SIM_FAIL_INDEX_VALUE, /* an index differs from the one its inputs define     */
  SIM_FAIL_LENS,        /* a length output is wrong                            */
  SIM_FAIL_INDEXER,     /* an indexer record is outside its error bound        */
  SIM_NUM_FAILS
} sim_fail_kind;

const char *sim_fail_name(sim_fail_kind k);

#define SIM_MAX_FAIL_MESSAGES 8

typedef struct {
  int64_t fails[SIM_NUM_FAILS];
  int64_t rows_checked;    /* gathered key rows compared with their originals */
  int64_t indices_checked; /* index entries checked                           */
  int64_t indexer_checked; /* indexer records decoded and compared            */
  int num_messages;
  char messages[SIM_MAX_FAIL_MESSAGES][320];
} sim_verdict;

void sim_fail(sim_verdict *v, sim_fail_kind k, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int64_t sim_verdict_failures(const sim_verdict *v);

/* Compares a gathered bf16 row (512 dims) of a main-cache record with its
 * original.  The bound per element (x original, amax the max |x| of its scale
 * block):
 *   V4 / MXFP8: |err| <= |x| 2^-4 + 2^(e-10), 2^e = the block's power-of-two
 *               scale (smallest with amax <= fp8_max 2^e, amax floored at 1e-4);
 *               V4 RoPE dims 448..511 exactly;
 *   NVFP4:      |err| <= max(|x|, s) / 4 + max(0, |x| - 6 s), s = the e4m3 block
 *               scale e4m3(clamp(amax / 6, 2^-9, 448)).
 * Accumulates the error into st.  Returns the number of elements out of bound. */
int sim_check_key_row(dsv4kv_record rec, float fp8_max, const uint16_t *orig, const uint16_t *got,
                      sim_errstat *st, sim_outlier *first);

/* Reference of the indexer store for one key (head dim 128): RMSNorm with
 * weight w, GPT-J RoPE on dims 64..127 with cos/sin row cs (32 + 32 floats).
 * tol[d]: how far the library's value before quantization may be from
 * out[d], derived from the arithmetic (see check.c). */
void sim_indexer_reference(const uint16_t *k_pre, const float *w, float eps, const float *cs,
                           float *out, double *tol);

/* Decodes one indexer record (values + scale bytes, SPEC §6 layout) and
 * compares it with the reference.  Returns elements out of bound. */
int sim_check_indexer_record(dsv4kv_record rec, const uint8_t *values, const uint8_t *scale,
                             const float *ref, const double *tol, sim_errstat *st,
                             sim_outlier *first);

#endif
