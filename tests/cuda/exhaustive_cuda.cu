/* exhaustive_cuda.cu - the CUDA kernels' conversions against formats/ref.h
 * over their whole input spaces, on the GPU itself (the case registry checks
 * them on random and adversarial rows; this checks every value):
 *
 *   e4m3 encode  e4m3x2_quant (cvt.rn.satfinite.e4m3x2) == fp8_quant_code
 *                for every fp32 bit pattern (2^32)
 *   fp8 decode   e4m3x2_decode + bf16x2_of, and bf16x2_high where the gather
 *                uses it, == f32_to_bf16(e4m3_decode(c) * scale) for every
 *                code and scale byte
 *   e2m1 encode  e2m1_encode_div == e2m1_encode(x / sv) for every bf16 x and
 *                every NVFP4 block scale (device division, --fmad=false)
 *   e2m1 pairs   e2m1x2_encode_bf16x2 (paired bf16 compares) == e2m1_encode_div
 *                of each half, every non-NaN bf16 in each half, every scale;
 *                and == e2m1_encode(x * 2^-l) for the MXFP4 scales 2^l of
 *                E2M1_PAIRS_POW2_MIN .. MAX (the indexer's fast range)
 *   e2m1 decode  e2m1x2_decode_2m14 x (sv x 2^14) -> bf16x2_high (and
 *                bf16x2_of) == f32_to_bf16(e2m1_decode(c) * sv)
 *   bf16 round   bf16x2_rn (cvt.rn.bf16x2.f32) == f32_to_bf16 for every fp32
 *                in each half, a NaN staying a NaN
 *   scale exp    ceil_log2_ratio_bits (the device's UE8M0 exponent) == the
 *                double division and frexp for every normal fp32 amax and
 *                each quantizer maximum (448, 240, 6)
 *
 * Exit 0 when every check matched, 1 on a mismatch (the first printed), 77
 * when no CUDA device of compute capability 9.0+ runs here. */
#include <stdio.h>

#include "cuda/cuda_common.cuh"
#include "formats/e2m1_div.h"

typedef struct {
  unsigned long long bad[8];
  unsigned long long first[8]; /* the first failing input, packed per check */
} results;

__global__ void e4m3_encode_all(results *r) {
  for (uint64_t u = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; u < (1ull << 32);
       u += (uint64_t)gridDim.x * blockDim.x) {
    const float f = f32_from_bits((uint32_t)u);
    const uint32_t hw = e4m3x2_quant(f, 0.0f) & 0xFF;
    if (hw != fp8_quant_code(f, 0) && atomicAdd(&r->bad[0], 1ull) == 0) r->first[0] = u;
  }
}

__global__ void fp8_decode_all(results *r) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; /* code << 8 | scale byte */
  if (i >= 65536) return;
  const uint32_t code = i >> 8, sb = i & 0xFF;
  const float s = ue8m0_decode_ftz((uint8_t)sb);
  const uint16_t want = f32_to_bf16(e4m3_decode((uint8_t)code) * s);
  const float2 v = e4m3x2_decode(code | code << 8);
  const uint32_t got = bf16x2_of(v.x * s, v.y * s);
  int bad = (got & 0xFFFF) != want || (got >> 16) != want;
  /* the gather's shortcut: scale bytes 10..246 and a code that is not NaN */
  if (sb >= 10 && sb <= 246 && (code & 0x7F) != 0x7F) bad |= (bf16x2_high(v.x * s, v.y * s) & 0xFFFF) != want;
  if (bad && atomicAdd(&r->bad[1], 1ull) == 0) r->first[1] = i;
}

__global__ void e2m1_encode_all(results *r) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; /* scale code (1..0x7E) << 16 | bf16 */
  const uint32_t sc = (i >> 16) + 1, u = i & 0xFFFF;
  if (sc > 0x7E) return;
  const float sv = e4m3_decode((uint8_t)sc), x = bf16_to_f32((uint16_t)u);
  const e2m1_bounds b = e2m1_bounds_of(sv);
  if (e2m1_encode_div(x, &b) != e2m1_encode(x / sv) && atomicAdd(&r->bad[2], 1ull) == 0) r->first[2] = i;
}

__global__ void e2m1_pairs_all(results *r) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; /* as e2m1_encode_all */
  const uint32_t sc = (i >> 16) + 1, u = i & 0xFFFF, v = (u * 40503u + 0x1234u) & 0xFFFFu;
  if (sc > 0x7E || (u & 0x7FFF) > 0x7F80 || (v & 0x7FFF) > 0x7F80) return;
  const float sv = e4m3_decode((uint8_t)sc);
  const e2m1_bounds b = e2m1_bounds_of(sv);
  const e2m1_bounds_bf16x2 b2 = e2m1_bounds_bf16x2_of(sv);
  const uint32_t want = e2m1_encode_div(bf16_to_f32((uint16_t)u), &b) |
                        (uint32_t)e2m1_encode_div(bf16_to_f32((uint16_t)v), &b) << 4;
  if (e2m1x2_encode_bf16x2(u | v << 16, &b2) != want && atomicAdd(&r->bad[5], 1ull) == 0) r->first[5] = i;
}

__global__ void e2m1_pairs_pow2_all(results *r) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; /* (l - E2M1_PAIRS_POW2_MIN) << 16 | bf16 */
  const int l = (int)(i >> 16) + E2M1_PAIRS_POW2_MIN;
  const uint32_t u = i & 0xFFFF, v = (u * 40503u + 0x1234u) & 0xFFFFu;
  if (l > E2M1_PAIRS_POW2_MAX || (u & 0x7FFF) > 0x7F80 || (v & 0x7FFF) > 0x7F80) return;
  const float inv = pow2f(-l);
  const e2m1_bounds_bf16x2 b2 = e2m1_bounds_bf16x2_of(pow2f(l));
  const uint32_t want = e2m1_encode(bf16_to_f32((uint16_t)u) * inv) |
                        (uint32_t)e2m1_encode(bf16_to_f32((uint16_t)v) * inv) << 4;
  if (e2m1x2_encode_bf16x2(u | v << 16, &b2) != want && atomicAdd(&r->bad[6], 1ull) == 0) r->first[6] = i;
}

__global__ void e2m1_decode_all(results *r) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; /* packed byte << 8 | scale code */
  if (i >= 65536) return;
  const uint32_t byte = i >> 8, sc = i & 0xFF;
  const float sv = e4m3_decode((uint8_t)sc);
  const uint16_t lo = f32_to_bf16(e2m1_decode((uint8_t)(byte & 0xF)) * sv);
  const uint16_t hi = f32_to_bf16(e2m1_decode((uint8_t)(byte >> 4)) * sv);
  const float2 v = e2m1x2_decode_2m14(byte);
  const float s14 = sv * 16384.0f;
  const uint32_t want = (uint32_t)lo | (uint32_t)hi << 16;
  int bad = bf16x2_of(v.x * s14, v.y * s14) != want;
  if (sv == sv) bad |= bf16x2_high(v.x * s14, v.y * s14) != want; /* the gather's shortcut */
  if (bad && atomicAdd(&r->bad[3], 1ull) == 0) r->first[3] = i;
}

__global__ void scale_exp_all(results *r) {
  const float max[3] = {FP8_OCP_MAX, FP8_FNUZ_MAX, E2M1_MAX};
  for (uint64_t u = 0x00800000u + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; u < 0x7F800000u;
       u += (uint64_t)gridDim.x * blockDim.x) {
    const float amax = f32_from_bits((uint32_t)u);
    for (int k = 0; k < 3; k++) {
      int e;
      const double f = frexp((double)amax / (double)max[k], &e); /* the reference's recipe (NUMERICS §9) */
      const int want = f == 0.5 ? e - 1 : e;
      if (ceil_log2_ratio_bits(amax, max[k]) != want && atomicAdd(&r->bad[4], 1ull) == 0)
        r->first[4] = u | (uint64_t)k << 32;
    }
  }
}

/* bf16x2_rn (the indexer's norm and RoPE) == f32_to_bf16 in each half, and
 * a NaN stays a NaN. */
__global__ void bf16_round_all(results *r) {
  for (uint64_t u = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; u < (1ull << 32);
       u += (uint64_t)gridDim.x * blockDim.x) {
    const float f = f32_from_bits((uint32_t)u), z = f32_from_bits(0x3F800000u);
    const uint32_t lo = bf16x2_rn(f, z), hi = bf16x2_rn(z, f);
    const int bad = f == f ? (lo & 0xFFFF) != f32_to_bf16(f) || (hi >> 16) != f32_to_bf16(f) || (lo >> 16) != 0x3F80 ||
                                 (hi & 0xFFFF) != 0x3F80
                           : (lo & 0x7FFF) <= 0x7F80 || (hi >> 16 & 0x7FFF) <= 0x7F80;
    if (bad && atomicAdd(&r->bad[7], 1ull) == 0) r->first[7] = u;
  }
}

static int check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "exhaustive_cuda: %s: %s\n", what, cudaGetErrorString(e));
  return 1;
}

int main(void) {
  int n = 0, major = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1 ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess || major < 9) {
    printf("exhaustive_cuda: no CUDA device of compute capability 9.0+ here: skipped\n");
    return 77;
  }
  results *d = NULL, h;
  if (check(cudaMalloc(&d, sizeof *d), "cudaMalloc") || check(cudaMemset(d, 0, sizeof *d), "cudaMemset")) return 1;
  e4m3_encode_all<<<4096, 256>>>(d);
  fp8_decode_all<<<256, 256>>>(d);
  e2m1_encode_all<<<(0x7E << 16) / 256, 256>>>(d);
  e2m1_pairs_all<<<(0x7E << 16) / 256, 256>>>(d);
  e2m1_pairs_pow2_all<<<((E2M1_PAIRS_POW2_MAX - E2M1_PAIRS_POW2_MIN + 1) << 16) / 256, 256>>>(d);
  e2m1_decode_all<<<256, 256>>>(d);
  scale_exp_all<<<4096, 256>>>(d);
  bf16_round_all<<<4096, 256>>>(d);
  if (check(cudaGetLastError(), "launch") || check(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost), "copy back"))
    return 1;
  cudaFree(d);
  static const char *const name[8] = {"e4m3 encode (2^32 fp32)", "fp8 decode (256 codes x 256 scales)",
                                      "e2m1 encode by compares (65536 bf16 x 126 scales)",
                                      "e2m1 decode (256 bytes x 256 scales)",
                                      "scale exponent from bits (every normal fp32 x 3 maxima)",
                                      "e2m1 encode two a word (every bf16 in each half x 126 scales)",
                                      "e2m1 encode two a word, MXFP4 scales (every bf16 x 226 powers of 2)",
                                      "bf16 rounding of two values (2^32 fp32 in each half)"};
  int bad = 0;
  for (int k = 0; k < 8; k++) {
    printf("%-62s %s", name[k], h.bad[k] ? "MISMATCH" : "identical");
    if (h.bad[k]) printf(": %llu inputs, the first 0x%llx", h.bad[k], h.first[k]);
    printf("\n");
    bad |= h.bad[k] != 0;
  }
  return bad;
}
