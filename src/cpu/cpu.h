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
/* Division by a block size (or a compress ratio), by shift and mask when it
 * is a power of two (the common case; an integer division per entry or row
 * dominates the index ops and the indexer's row otherwise).  Only for x >= 0. */
typedef struct {
  int64_t bs;
  int shift; /* log2(bs), or -1 */
} pagediv;
static inline pagediv pagediv_of(int64_t bs) {
  pagediv d = {bs, -1};
  if (bs > 0 && (bs & (bs - 1)) == 0)
    for (d.shift = 0; ((int64_t)1 << d.shift) < bs; d.shift++) {
    }
  return d;
}
static inline int64_t pd_page(pagediv d, int64_t x) { return d.shift >= 0 ? x >> d.shift : x / d.bs; }
static inline int64_t pd_off(pagediv d, int64_t x) { return d.shift >= 0 ? x & (d.bs - 1) : x % d.bs; }

/* Threads (src/cpu/pool.c, where the choice is explained): a job runs
 * fn(ctx, t, nt) on the caller (t = 0) and on the workers t = 1 .. nt-1 that
 * join it before the caller has finished.  fn must take
 * all its work from cpu_chunk_next, since a worker may run no part of a job.
 * cpu_run returns the team size it asked for (1 when nt <= 1 or another
 * caller holds the pool); kernels must give the same bytes for every nt. */
typedef void (*cpu_task_fn)(void *ctx, int t, int nt);
int cpu_run(int nt, cpu_task_fn fn, void *ctx);

/* Below this single-thread estimate a call wakes no sleeping worker: a
 * sleeping worker takes ~60-100 us to wake on this kind of machine (and the
 * caller ~10 us to wake it), so a second thread gains only on calls several
 * times that long. */
#define CPU_PARALLEL_MIN_NS 200000.0
/* A worker watches for the next job this long after its last one
 * (DSV4KV_CPU_SPIN_US overrides it; 0: it sleeps at once, and short calls
 * stay on the calling thread). */
#define CPU_SPIN_US 50.0
/* Calls estimated from this up to CPU_PARALLEL_MIN_NS share their chunks
 * with the workers that are awake (watching); shorter ones stay on the
 * calling thread (calls of 3-6 us ran no faster on two). */
#define CPU_SHORT_TEAM_MIN_NS 8000.0
/* Processors a team may use (src/cpu/procs.c): omp_get_num_procs() capped by
 * the process's cgroup CPU quota, rounded up; read once. */
int cpu_procs(void);
/* The smallest CPU quota, in processors, that the cgroups named in the file
 * proc_cgroup (/proc/self/cgroup's format) and their ancestors set under
 * sys_cgroup (v2: cpu.max; v1: cpu.cfs_quota_us / cpu.cfs_period_us under
 * cpu/ or cpu,cpuacct/), or 0 where none sets one (the tests pass a fake tree). */
double cpu_cgroup_quota(const char *proc_cgroup, const char *sys_cgroup);
/* Threads for a call whose single-thread time is estimated at est_ns (the
 * requested threads: o->num_threads, else omp_get_max_threads(), at most
 * the processors): from CPU_PARALLEL_MIN_NS one per half of it; below it
 * the requested threads where a worker is awake (the call then wakes none)
 * or short calls arrive as a stream (it wakes one), else 1.  The next
 * cpu_run on the calling thread is the call's. */
int cpu_team(const exec_opts *o, double est_ns);

/* Outputs larger than this (bytes) are written with non-temporal stores
 * where a path has them and the rows are aligned: far past the last-level
 * cache they would only evict the inputs, and each normal store first reads
 * the line it fills.  DSV4KV_CPU_NT_MIN_BYTES overrides it (cpu_nt_min_bytes). */
#define CPU_NT_MIN_BYTES (32.0 * 1024 * 1024)
double cpu_nt_min_bytes(void);

/* Work handed out in chunks of `chunk` items from [0, n): each thread takes
 * the next chunk when done with its last (one thread's chunks come in
 * increasing order). */
#include <stdatomic.h>
typedef struct {
  _Atomic int64_t next;
  int64_t n, chunk;
} cpu_chunks;
static inline void cpu_chunks_init(cpu_chunks *c, int64_t n, int64_t chunk) {
  atomic_init(&c->next, 0);
  c->n = n, c->chunk = chunk < 1 ? 1 : chunk;
}
/* The next chunk [*lo, *hi); 0 when none is left. */
int cpu_chunk_next(cpu_chunks *c, int64_t *lo, int64_t *hi);

/* A thread's note from one row to the next (src/cpu/indexer_cpu.c): values
 * computed ahead for the rows row[at .. n), the rows that thread runs next in
 * that order (n = 0 at the start), so that a row's independent work (the
 * indexer's norm factor: a square root and a division) is done for many
 * rows at once, off each row's chain. */
enum { CPU_ROWS_AHEAD = 16 };
typedef struct {
  int64_t row[CPU_ROWS_AHEAD];
  float value[CPU_ROWS_AHEAD];
  int flag[CPU_ROWS_AHEAD];
  int at, n;
} cpu_row_carry;

/* The writers' rows (insert, indexer store), rows of one page on one thread
 * in row order, so when two rows name one slot the later wins whatever the
 * team (src/cpu/paged_rows.c).  bad_slot is called for every row whose slot
 * is neither -1 nor in [0, num_slots), on the calling thread; row for every
 * other row with slot != -1, and returns a count the driver sums.
 * ahead[0 .. n_ahead): rows the same thread may run after this one, in that
 * order (a hint: n_ahead <= CPU_ROWS_AHEAD, and a row there may turn out to
 * be skipped); carry: that thread's note, n = 0 at the start. */
typedef struct {
  const tview *slots;
  int64_t T, bs, num_slots;
  void (*bad_slot)(void *ctx, int64_t t, int64_t slot);
  int64_t (*row)(void *ctx, int64_t t, int64_t slot, const int64_t *ahead, int n_ahead, cpu_row_carry *carry);
  void *ctx;
  void (*finish)(void *ctx); /* NULL, or called on each thread of the team after its last row */
} cpu_paged_rows;
/* Runs them on nt threads; *sum = the rows' counts.  DSV4KV_ERR_ALLOC when
 * the row order cannot be allocated (nothing written then). */
dsv4kv_status cpu_rows_by_page(const cpu_paged_rows *p, int nt, int64_t *sum);

/* Adds n skipped entries to the report, keeping the values of the entry with
 * the lowest key (so the message is the same at any thread count).  Kernels
 * call it only on the rare skip path, so the lock is cheap. */
void cpu_note_n(dsv4kv_report *r, int64_t n, int64_t key, skip_reason reason, int64_t v0, int64_t v1,
                int64_t v2, int64_t v3, int64_t v4, int64_t v5);
#define cpu_note(r, key, reason, ...) cpu_note_n(r, 1, key, reason, __VA_ARGS__)

/* The kernel path calls use now (dsv4kv_cpu_path_*; backend_cpu.c): the
 * scalar reference, or a SIMD path the processor runs. */
typedef enum { CPU_PATH_SCALAR = 0, CPU_PATH_AVX512 = 1, CPU_PATH_AVX2 = 2 } cpu_path_kind;
cpu_path_kind cpu_path_now(void);

/* AVX-512 (F, BW, VL) + F16C + FMA path (src/cpu/gather_avx512.c): whether the
 * processor and OS run it, and the gather's record dequantization
 * (record_dequant_ref's bytes, main-cache records); nt = non-temporal stores,
 * out 64-byte aligned, each thread ending with cpu_store_fence(). */
int cpu_avx512_supported(void);
void record_dequant_avx512(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales,
                           uint16_t *out, int nt);
void cpu_store_fence(void);
/* The insert's record quantization on that path (src/cpu/insert_avx512.c):
 * record_quant_ref's bytes for V4, MXFP8 and NVFP4 records; returns 0 for
 * the others and a NVFP4 row holding a NaN, which take the scalar code.
 * nt = non-temporal stores of V4 records (values 64-byte aligned, scales
 * 8-byte, each thread ending with cpu_store_fence()). */
int record_quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales, int nt);

/* AVX2 + F16C + FMA path (src/cpu/gather_avx2.c), for processors without
 * AVX-512: whether the processor runs it, and the gather's record
 * dequantization (record_dequant_ref's bytes); nt as record_dequant_avx512's
 * (out 32-byte aligned). */
int cpu_avx2_supported(void);
/* Whether the processor has F16C (CPUID; src/cpu/gather_avx2.c). */
int cpu_has_f16c(void);
void record_dequant_avx2(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales, uint16_t *out,
                         int nt);
/* The V4 / MXFP8 / NVFP4 inserts on that path (src/cpu/insert_avx2.c): returns 0
 * (nothing written) for the indexer records (and a NVFP4 record holding a
 * NaN), which take the scalar code; nt as record_quant_avx512's (V4 only). */
int record_quant_avx2(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales, int nt);

/* The index builders on that path (src/cpu/index_avx512.c): one row,
 * byte-identical to the scalar row; 0 when the scalar row must write it
 * (a skip to note), having maybe written some of it.  The _ok checks are the
 * preconditions of a whole call (power-of-two pages of 2^shift tokens, rows
 * contiguous, table offsets in int32). */
int global_topk_row_avx512(const global_topk_args *a, int64_t t, int shift);
int flashinfer_row_avx512(const flashinfer_args *a, int64_t t, int swa_shift, int c_shift);
/* Prefill token t of request req (in range): its SWA start and length and
 * its top-k length before any clamp (SPEC §5.3), as every path computes them
 * (src/cpu/index_ops_cpu.c). */
void cpu_fi_prefill_span(const flashinfer_args *a, int64_t t, int64_t req, int64_t *swa_start, int64_t *swa_len,
                         int64_t *topk_len);
int index_avx512_ok_topk(const global_topk_args *a, int shift);
int index_avx512_ok_flashinfer(const flashinfer_args *a, int swa_shift, int c_shift);
/* The same rows on the avx2 path (src/cpu/index_avx2.c), 8 entries at a time,
 * under the same preconditions (index_avx512_ok_*: checks of the views). */
int global_topk_row_avx2(const global_topk_args *a, int64_t t, int shift);
int flashinfer_row_avx2(const flashinfer_args *a, int64_t t, int swa_shift, int c_shift);
/* combine's row on the SIMD paths (src/cpu/index_avx2.c; AVX-512 machines
 * take it too): out[j] = wrap32(topk[j] + mr) for j < topk_len, then
 * out[topk_len + j] = wrap32(first + j) for j < swa_len; contiguous rows. */
void combine_row_avx2(int32_t *out, const int32_t *topk, int64_t topk_len, int64_t mr, int64_t first, int64_t swa_len);

/* The indexer store on the SIMD paths (src/cpu/indexer_avx512.c,
 * indexer_avx2.c): the row's sum of squares (indexer_sum_squares_ref's
 * value), and RMSNorm + RoPE + the FP8 / MXFP4 quantizer
 * (indexer_norm_rope_ref then indexer_fp8_quant_ref /
 * indexer_mxfp4_quant_ref's bytes); we / wo: the weight's even / odd dims
 * (free of NaN: the caller checks), cos_sin[64] as indexer_norm_rope_ref's.
 * The quantizers return 0, with nothing meaningful written, for a row they
 * leave to the reference (results holding a NaN or an Inf, a table entry or
 * rstd not finite; each file says which others). */
float indexer_sum_squares_avx512(const uint16_t *k);
/* indexer_rstd_of_sum of 16 sums at once: rstd[16], nonfinite[16] (its flag). */
void indexer_rstd16_avx512(const float *sum, float eps, float *rstd, int *nonfinite);
int indexer_fp8_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                       int fnuz, uint8_t *codes, float *scale, uint8_t *ue);
int indexer_mxfp4_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                         uint8_t *packed, uint8_t *scales);
float indexer_sum_squares_avx2(const uint16_t *k);
void indexer_rstd16_avx2(const float *sum, float eps, float *rstd, int *nonfinite);
int indexer_fp8_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd, int fnuz,
                     uint8_t *codes, float *scale, uint8_t *ue);
int indexer_mxfp4_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                       uint8_t *packed, uint8_t *scales);

/* The operations of the CPU backend table (src/cpu/<op>_cpu.c). */
dsv4kv_status cpu_insert(const insert_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_gather(const gather_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_global_topk(const global_topk_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_combine(const combine_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_flashinfer(const flashinfer_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cpu_indexer_store(const indexer_args *a, const exec_opts *o, dsv4kv_report *r);

#endif
