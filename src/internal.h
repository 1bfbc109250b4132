/* Shared internals: error reporting, tensor views and argument checks.
 * Validation happens once, here and in src/ops/, before a backend runs.
 * Host code only; nothing here knows which backend runs. */
#ifndef DSV4KV_INTERNAL_H
#define DSV4KV_INTERNAL_H

#include <stdint.h>

#include "dsv4kv.h"
#include "formats/records.h"

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
/* The view of an optional tensor not given: no elements, data a static
 * address (never NULL, so that row addresses are defined arithmetic). */
void tview_absent(tview *v);
/* Same, for a tensor that may be fp32 or bf16 (returns which in *dt_out). */
dsv4kv_status tview_make_f32_or_bf16(tview *v, const DLTensor *t, const char *name, int ndim,
                                     dt_kind *dt_out);

/* tview_make for a tensor of rows: its last dimension has exactly `width`
 * elements and is contiguous (k, out, k_pre, cos_sin_cache). */
dsv4kv_status tview_make_rows(tview *v, const DLTensor *t, const char *name, dt_kind dt, int ndim,
                              int64_t width);

/* The slot mapping of a writer: int64 [T] with T <= the rows of `rows` (the
 * rows past T are DP padding, never read). */
dsv4kv_status tview_make_slots(tview *slots, const DLTensor *t, const char *name, const tview *rows,
                               const char *rows_name);

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
/* DSV4KV_ERR_STRIDE when the output's span meets the input's (e.g. a gather's
 * out inside the cache it reads). */
dsv4kv_status tview_apart_from_input(const tview *out, const char *on, const tview *in, const char *in_name);
/* tview_apart_from_input for every output v[n_in .. n) against every input
 * v[0 .. n_in) (NULL entries: absent optional tensors).  An output that
 * partly overlaps an input would make the bytes depend on the order of the
 * writes (on the CPU, on the thread schedule): ERR_STRIDE naming both. */
dsv4kv_status tview_outputs_apart(const tview *const *v, const char *const *names, int n_in, int n);
/* Whether a and b are the same elements in the same layout (an in-place call). */
int tview_same(const tview *a, const tview *b);

/* A paged cache checked against its description (src/ops/cache_check.c). */
typedef struct {
  uint8_t *base;
  int64_t num_pages;
  int64_t page_stride;  /* bytes */
  int32_t block_size;   /* tokens per page */
  int32_t record_bytes;
  dsv4kv_record record;
  dsv4kv_fp8_flavor fp8;
  uint32_t flags;
  record_layout layout; /* the record's row of the table (formats/records.h) */
} cache_view;

/* The records of the main K cache and of the indexer cache (masks for
 * cache_view_make). */
#define MAIN_CACHE_RECORDS (1u << DSV4KV_RECORD_V4 | 1u << DSV4KV_RECORD_MXFP8 | 1u << DSV4KV_RECORD_NVFP4)
#define INDEXER_CACHE_RECORDS (1u << DSV4KV_RECORD_INDEXER_FP8 | 1u << DSV4KV_RECORD_INDEXER_MXFP4)

/* Checks a cache description alone (named `name` in messages) for an op
 * accepting the records in `allowed_mask`; fills *layout. */
dsv4kv_status cache_desc_check(const dsv4kv_cache_desc *desc, const char *name, unsigned allowed_mask,
                               record_layout *layout);

/* Validates k_cache (uint8, 2-D [pages, page_bytes] or 3-D [pages, bs, rec])
 * against `desc` for an op accepting the records in `allowed_mask`
 * (bit = 1 << record). */
dsv4kv_status cache_view_make(cache_view *c, tview *tv, const DLTensor *k_cache,
                              const dsv4kv_cache_desc *desc, unsigned allowed_mask);

/* a * b for non-negative a, b, saturating at INT64_MAX (0 when either is <= 0). */
int64_t sat_mul(int64_t a, int64_t b);

#endif
