/* Compile check of the C/CUDA seam: every function of src/formats/ instantiated in
 * device code.  Built (never run) wherever nvcc is found, with warnings as
 * errors, so a host-only construct in formats/ breaks the build here and not
 * later in the CUDA backend. */
#include "formats/numfmt.h"
#include "formats/records.h"
#include "formats/ref.h"

extern "C" __global__ void formats_quant_rows(const uint16_t *k, uint8_t *page, int32_t bs, int fnuz,
                                              dsv4kv_record rec) {
  record_layout l;
  if (!record_layout_of(rec, &l)) return;
  const int p = (int)(threadIdx.x % (unsigned)bs);
  record_quant_ref(rec, fnuz, k + HEAD_DIM * threadIdx.x, page + record_values_off(&l, bs, p),
                   page + record_scales_off(&l, bs, p));
}

extern "C" __global__ void formats_dequant_rows(const uint8_t *page, uint16_t *out, int32_t bs, int fnuz,
                                                dsv4kv_record rec) {
  record_layout l;
  if (!record_layout_of(rec, &l)) return;
  const int p = (int)(threadIdx.x % (unsigned)bs);
  record_dequant_ref(rec, fnuz, page + record_values_off(&l, bs, p), page + record_scales_off(&l, bs, p),
                     out + HEAD_DIM * threadIdx.x);
}

extern "C" __global__ void formats_indexer_rows(const uint16_t *k, const float *weight, const float *cos_sin,
                                                float eps, uint8_t *page, int32_t bs, int fnuz, int64_t *nonfinite) {
  float r[INDEXER_DIM];
  const int p = (int)(threadIdx.x % (unsigned)bs);
  const uint16_t *row = k + INDEXER_DIM * threadIdx.x;
  int norm_bad;
  const float rstd = indexer_rstd_ref(row, eps, &norm_bad);
  atomicAdd((unsigned long long *)nonfinite, (unsigned long long)count_nonfinite_bf16(row, INDEXER_DIM) + norm_bad);
  indexer_norm_rope_ref(row, weight, cos_sin, rstd, r);
  record_layout l8, l4;
  record_layout_of(DSV4KV_RECORD_INDEXER_FP8, &l8);
  record_layout_of(DSV4KV_RECORD_INDEXER_MXFP4, &l4);
  uint8_t codes[INDEXER_DIM], ue;
  float scale;
  indexer_fp8_quant_ref(r, fnuz, codes, &scale, &ue);
  for (int d = 0; d < INDEXER_DIM; d++) page[idx_tiled_off(p, d)] = codes[d];
  memcpy(page + record_scales_off(&l8, bs, p), &scale, sizeof scale);
  indexer_mxfp4_quant_ref(r, page + record_values_off(&l4, bs, p), page + record_scales_off(&l4, bs, p));
}

extern "C" __global__ void formats_scalars(const float *x, uint8_t *codes, float *values) {
  const unsigned i = threadIdx.x;
  codes[4 * i] = e4m3_encode(x[i]);
  codes[4 * i + 1] = e4m3fnuz_encode(x[i]);
  codes[4 * i + 2] = e2m1_encode(x[i]);
  codes[4 * i + 3] = (uint8_t)f32_to_bf16(x[i]);
  values[4 * i] = e4m3_decode((uint8_t)i) + e4m3fnuz_decode((uint8_t)i);
  values[4 * i + 1] = e2m1_decode((uint8_t)i) * ue8m0_decode((uint8_t)i) + ue8m0_decode_ftz((uint8_t)i);
  values[4 * i + 2] = bf16_to_f32((uint16_t)i) + pow2f((int)(i % 200) - 149);
  values[4 * i + 3] = (float)ceil_log2_ratio(x[i] > 0 ? x[i] : 1.0f, FP8_OCP_MAX);
}
