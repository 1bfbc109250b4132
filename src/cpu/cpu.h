/* What the CPU kernels share: strided reads of index tensors, the thread
 * count of a parallel region, the report under a lock, and the CPU paths.
 * CPU-only code lives in src/cpu/ and nowhere else. */
#ifndef DSV4KV_CPU_H
#define DSV4KV_CPU_H

#include "backend.h"

static inline int32_t tv_i32_1(const tview *v, int64_t i) {
  return *(const int32_t *)(v->data + i * v->stride[0] * 4);
}
static inline int32_t tv_i32_2(const tview *v, int64_t i, int64_t j) {
  return *(const int32_t *)(v->data + (i * v->stride[0] + j * v->stride[1]) * 4);
}
static inline int32_t *tv_i32_2p(const tview *v, int64_t i, int64_t j) {
  return (int32_t *)(v->data + (i * v->stride[0] + j * v->stride[1]) * 4);
}
static inline int64_t tv_i64_1(const tview *v, int64_t i) {
  return *(const int64_t *)(v->data + i * v->stride[0] * 8);
}
static inline int tv_bool_1(const tview *v, int64_t i) {
  return v->data[i * v->stride[0]] != 0;
}
/* Threads for a parallel region over `items` units of about equal cost: one
 * thread per `grain` items at most, so a small call stays on the calling
 * thread (waking a team costs more than it saves, and on a loaded machine
 * far more), and never more than the processors. */
int cpu_threads(const exec_opts *o, int64_t items, int64_t grain);

/* Adds n skipped entries to the report, keeping the values of the entry with
 * the lowest key (so the message is the same at any thread count).  Kernels
 * call it only on the rare skip path, so the lock is cheap. */
void cpu_note_n(dsv4kv_report *r, int64_t n, int64_t key, skip_reason reason, int64_t v0, int64_t v1,
                int64_t v2, int64_t v3, int64_t v4, int64_t v5);
#define cpu_note(r, key, reason, ...) cpu_note_n(r, 1, key, reason, __VA_ARGS__)

/* The kernel path calls use now (dsv4kv_cpu_path_*; backend_cpu.c): the
 * scalar reference, or a SIMD path the processor runs. */
typedef enum { CPU_PATH_SCALAR = 0, CPU_PATH_AVX512 = 1 } cpu_path_kind;
cpu_path_kind cpu_path_now(void);

/* AVX-512 (F, BW, VL) + F16C path (src/cpu/gather_avx512.c): whether the
 * processor and OS run it, and the gather's record dequantization
 * (record_dequant_ref's bytes, main-cache records). */
int cpu_avx512_supported(void);
void record_dequant_avx512(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales,
                           uint16_t *out);
/* The insert's record quantization on that path (src/cpu/insert_avx512.c):
 * record_quant_ref's bytes for V4 and MXFP8 records; returns 0 (nothing
 * written) for the others, which take the scalar code. */
int record_quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales);

/* The operations of the CPU backend table (src/cpu/<op>_cpu.c). */
dsv4kv_status cpu_insert(const insert_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_gather(const gather_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_global_topk(const global_topk_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_combine(const combine_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_flashinfer(const flashinfer_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_indexer_store(const indexer_args *a, const exec_opts *o, dsv4kv_report *r);

#endif
