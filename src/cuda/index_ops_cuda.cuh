/* What the two CUDA global top-k kernels share (SPEC §5.1): the parameter
 * struct, the launch of one block a row, and the 4-entry launcher.
 * src/cuda/index_ops_cuda.cu holds the general kernels of every index op
 * (any strides) and the launchers; src/cuda/index_rows4_cuda.cu the global
 * top-k for rows whose entries are contiguous and 16-byte aligned. */
#ifndef DSV4KV_INDEX_OPS_CUDA_CUH
#define DSV4KV_INDEX_OPS_CUDA_CUH
#include "cuda/cuda_common.cuh"

/* §5.1 */
typedef struct {
  dix topk, req, block_table, valid, out, lens;
  int64_t T, K, R, P;
  dpagediv pd;
  dnote note;
} topk_params;

/* Rows from which a warp takes a row (index_warp_rows). */
enum { INDEX_WARP_ROWS_MIN = 1024 };

/* Threads per row: more when rows are few, so that about 8192 warps run. */
static inline unsigned index_block(int64_t rows) {
  unsigned b = 32;
  while (b < CUDA_BLOCK && (int64_t)b * rows < 8192 * 32) b *= 2;
  return b;
}
static inline unsigned index_grid(int64_t rows) {
  return rows < 1 ? 1u : rows > (1 << 20) ? (1u << 20) : (unsigned)rows;
}

/* The threads a row DSV4KV_CUDA_INDEX_THREADS (32, 64, 128 or 256) forces
 * for the tests, so that the registry's narrow rows reach the kernels' loops
 * over entries past what a block holds at once; else 0 (read once). */
int cuda_index_threads_forced(void);

/* DSV4KV_CUDA_INDEX_ROWS: "warp" forces the kernels of a warp a row,
 * "block" those of a block a row, for the tests and the A/B timings; else 0
 * (the sizes choose; read once). */
enum { INDEX_ROWS_ANY = 0, INDEX_ROWS_BLOCK = 1, INDEX_ROWS_WARP = 2 };
int cuda_index_rows_forced(void);

/* Whether a row of rows4-style (16-byte) entries goes to a warp instead of a
 * block: where rows are many (a block a row would give each of its threads
 * few entries, and the GPU a block a row to schedule). */
static inline int index_warp_rows(int64_t rows, int vec) {
  const int f = cuda_index_rows_forced();
  if (!vec || f == INDEX_ROWS_BLOCK) return 0;
  return f == INDEX_ROWS_WARP || rows >= INDEX_WARP_ROWS_MIN;
}
/* Warps a block for `rows` rows of a warp each: 1 to 8, the most that
 * leave at least about 128 blocks (one a multiprocessor) to the grid. */
static inline unsigned index_warps_a_block(int64_t rows) {
  unsigned w = 1;
  while (w < CUDA_WARPS && (int64_t)w * 2 * 128 <= rows) w *= 2;
  return w;
}

/* CUDA_LAUNCH_REPORTED with one block of `threads` a row. */
#define INDEX_LAUNCH_BLOCK(kernel, rows, threads, call, p)                           \
  do {                                                                               \
    const unsigned f_ = (unsigned)cuda_index_threads_forced();                      \
    const unsigned g_ = index_grid(rows), b_ = f_ ? f_ : (threads);                  \
    (kernel)<<<g_, b_, 0, (call).stream>>>(p);                                       \
    if ((p).note.rep) {                                                              \
      (p).note.detail = 1;                                                           \
      (kernel)<<<g_, b_, 0, (call).stream>>>(p);                                     \
    }                                                                                \
  } while (0)
#define INDEX_LAUNCH(kernel, rows, call, p) INDEX_LAUNCH_BLOCK(kernel, rows, index_block(rows), call, p)

/* ---- rows of 4-entry groups: 32-bit offsets, predicated lookups (the
 * 4-entry kernels of index_rows4_cuda.cu and flashinfer_cuda.cu) ---- */
/* Whether rows of `width` int32 entries of v can be read 4 at a time. */
static inline int rows4_view(const tview *v, int64_t width) {
  if (width % 4) return 0;
  if (v->ndim >= 2 && v->shape[1] > 1 && v->stride[1] != 1) return 0;
  if (v->shape[0] > 1 && v->stride[0] % 4) return 0;
  return (uintptr_t)v->data % 16 == 0;
}

/* Stride d of v in bytes when it fits 32 bits (else returns 0 and leaves *s). */
static inline int stride32(const tview *v, int d, int64_t elem, uint32_t *s) {
  const int64_t x = v->ndim > d ? v->stride[d] : 0;
  if (x < 0 || x > (int64_t)(UINT32_MAX / (uint64_t)elem)) return 0;
  *s = (uint32_t)(x * elem);
  return 1;
}

/* base + i x s bytes (i, s < 2^32); at_wide: in one wide multiply-add, for
 * an address only an inline-assembly load takes (the compiler no longer
 * knows it is global). */
static __device__ __forceinline__ const uint8_t *at(const uint8_t *base, uint32_t i, uint32_t s) {
  return base + (uint64_t)i * s;
}
static __device__ __forceinline__ const uint8_t *at_wide(const uint8_t *base, uint32_t i, uint32_t s) {
  const uint8_t *r;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(i), "r"(s), "l"(base));
  return r;
}

/* *a when u < lim, else 0: a predicated load (no branch, the address
 * computed whether or not it is read). */
static __device__ __forceinline__ int32_t load_if_below(const int32_t *a, uint32_t u, uint32_t lim) {
  int32_t e = 0;
  asm("{\n\t.reg .pred p;\n\tsetp.lt.u32 p, %1, %2;\n\t@p ld.global.b32 %0, [%3];\n\t}"
      : "+r"(e)
      : "r"(u), "r"(lim), "l"(a));
  return e;
}

/* The 4-entry global top-k (index_rows4_cuda.cu): launches and returns 1
 * when topk_indices and global_out are contiguous along the row with 16-byte
 * aligned rows and K a multiple of 4; else 0 and nothing is launched (the
 * general kernel runs). */
int rows4_global_topk(topk_params *p, const global_topk_args *a, const cuda_call *call);
#endif
