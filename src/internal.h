/* Shared internals: error reporting, tensor views and argument checks.
 * Validation happens once, here and in src/ops/, before a backend runs. */
#ifndef DSV4KV_INTERNAL_H
#define DSV4KV_INTERNAL_H

#include <stdint.h>

#include "dsv4kv.h"

/* Record the message of a failed (or warning) call; returns `st` so that
 * `return dsv4kv_fail(DSV4KV_ERR_SHAPE, "...", ...)` reads naturally. */
dsv4kv_status dsv4kv_fail(dsv4kv_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void dsv4kv_clear_error(void);

/* Up to 4-D strided view of a DLTensor: element strides, byte pointer with
 * byte_offset applied.  Index tensors are read through these accessors so any
 * stride works. */
typedef struct {
  uint8_t *data;
  int ndim;
  int64_t shape[4];
  int64_t stride[4]; /* in elements */
  int elem_bytes;
  DLDeviceType device;
  int device_id;
} tview;

typedef enum {
  DT_BF16,
  DT_F32,
  DT_I32,
  DT_I64,
  DT_U8,
  DT_BOOL
} dt_kind;

/* Checks that `t` (named `name` in messages) is non-NULL, has dtype `dt` and
 * rank `ndim`, non-negative shape and strides, a data pointer when non-empty,
 * and extents whose byte span fits in int64; fills `v`. */
dsv4kv_status tview_make(tview *v, const DLTensor *t, const char *name, dt_kind dt, int ndim);
/* Same, for a tensor that may be fp32 or bf16 (returns which in *dt_out). */
dsv4kv_status tview_make_f32_or_bf16(tview *v, const DLTensor *t, const char *name, int ndim,
                                     dt_kind *dt_out);

/* Require dimension d of view v (named name) to equal / be at least n. */
dsv4kv_status tview_dim_eq(const tview *v, const char *name, int d, int64_t n);
dsv4kv_status tview_dim_ge(const tview *v, const char *name, int d, int64_t n);
/* Require the last dimension to be contiguous (stride 1) when it has > 1 element. */
dsv4kv_status tview_last_contiguous(const tview *v, const char *name);
/* An output: no two of its elements may share memory (a zero or interleaved
 * stride would make the bytes depend on the thread schedule). */
dsv4kv_status tview_output(const tview *v, const char *name);
/* Two outputs must not overlap. */
dsv4kv_status tview_disjoint(const tview *a, const char *an, const tview *b, const char *bn);

/* All views of one call must be on one device (NULL entries are absent
 * optional tensors); selects the backend: OK for the CPU, BACKEND_NOT_BUILT
 * for CUDA, DEVICE for mixed or other devices. */
dsv4kv_status select_backend(const tview *const *views, const char *const *names, int n);

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

/* A paged cache checked against its description. */
typedef struct {
  uint8_t *base;
  int64_t num_pages;
  int64_t page_stride;  /* bytes */
  int32_t block_size;   /* tokens per page */
  int32_t record_bytes;
  dsv4kv_record record;
  dsv4kv_fp8_flavor fp8;
  uint32_t flags;
} cache_view;

/* Validates k_cache (uint8, 2-D [pages, page_bytes] or 3-D [pages, bs, rec])
 * against `desc` for an op accepting the records in `allowed_mask`
 * (bit = 1 << record). */
dsv4kv_status cache_view_make(cache_view *c, tview *tv, const DLTensor *k_cache,
                              const dsv4kv_cache_desc *desc, unsigned allowed_mask);

/* Options with defaults filled in. */
typedef struct {
  int64_t *skipped;
  int64_t *nonfinite;
  int check_nonfinite;
  int num_threads;
} run_opts;
run_opts run_opts_of(const dsv4kv_options *opt);
/* Threads for a parallel region over `items` units of about equal cost: one
 * thread per `grain` items at most, so a small call stays on the calling
 * thread (waking a team costs more than it saves, and on a loaded machine
 * far more). */
int threads_for(const run_opts *o, int64_t items, int64_t grain);
/* a * b for non-negative a, b, saturating at INT64_MAX (0 when either is <= 0). */
int64_t sat_mul(int64_t a, int64_t b);

#endif

/* Ordering key of a skipped entry: (major, minor) with minor saturated at
 * 2^bits - 1; unsigned arithmetic, so no overflow whatever the values. */
static inline int64_t skip_key(int64_t major, int64_t minor, int bits) {
  uint64_t lim = ((uint64_t)1 << bits) - 1;
  uint64_t m = minor < 0 ? 0 : (uint64_t)minor > lim ? lim : (uint64_t)minor;
  return (int64_t)((((uint64_t)major << bits) | m) >> 1);
}

/* The first (lowest-keyed) out-of-range entry of a call, for its message.
 * Kernels call skiplog_note only on the rare skip path, so the lock is cheap. */
typedef struct {
  int64_t count;
  int64_t first_key;
  char msg[256];
} skiplog;
void skiplog_init(skiplog *s);
void skiplog_note(skiplog *s, int64_t key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for n entries skipped at once (n > 0). */
void skiplog_note_n(skiplog *s, int64_t n, int64_t key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Finishes an op: stores counts, sets the message of a warning. */
/* `input` names the tensor whose non-finite values were counted (or NULL). */
dsv4kv_status skiplog_finish(const skiplog *s, const run_opts *o, int64_t nonfinite,
                             const char *input);
