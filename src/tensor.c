/* DLTensor checks and strided views. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* What the view of an empty tensor given with data NULL, or of an optional
 * tensor not given, points at: the kernels' row addresses (base + row x
 * stride, never read: no entry) are then not arithmetic on a null pointer,
 * which C leaves undefined even for an offset of 0. */
static _Alignas(64) uint8_t empty_data[64];

void tview_absent(tview *v) {
  memset(v, 0, sizeof *v);
  v->data = empty_data;
}

static const char *dt_name(dt_kind dt) {
  switch (dt) {
    case DT_BF16: return "bfloat16";
    case DT_F32: return "float32";
    case DT_I32: return "int32";
    case DT_I64: return "int64";
    case DT_U8: return "uint8";
    case DT_BOOL: return "bool";
  }
  return "?";
}

static int dtype_is(DLDataType t, dt_kind dt) {
  if (t.lanes != 1) return 0;
  switch (dt) {
    case DT_BF16: return t.code == kDLBfloat && t.bits == 16;
    case DT_F32: return t.code == kDLFloat && t.bits == 32;
    case DT_I32: return t.code == kDLInt && t.bits == 32;
    case DT_I64: return t.code == kDLInt && t.bits == 64;
    case DT_U8: return t.code == kDLUInt && t.bits == 8;
    case DT_BOOL: return (t.code == DSV4KV_DL_BOOL || t.code == kDLUInt) && t.bits == 8;
  }
  return 0;
}

/* "float32", "int64", ...; other dtypes by DLPack's code names (codes 0-6:
 * "float16", "int8x4"), or "(code C, B bits, L lanes)" past them. */
static const char *dl_dtype_name(DLDataType t, char *buf, size_t n) {
  static const dt_kind all[] = {DT_BF16, DT_F32, DT_I32, DT_I64, DT_U8, DT_BOOL};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (dtype_is(t, all[i]) && !(all[i] == DT_BOOL && t.code == kDLUInt)) return dt_name(all[i]);
  static const char *const codes[] = {"int", "uint", "float", "handle", "bfloat", "complex", "bool"};
  if (t.code >= sizeof codes / sizeof codes[0])
    snprintf(buf, n, "(code %u, %u bits, %u lanes)", t.code, t.bits, t.lanes);
  else if (t.lanes == 1)
    snprintf(buf, n, "%s%u", codes[t.code], t.bits);
  else
    snprintf(buf, n, "%s%ux%u", codes[t.code], t.bits, t.lanes);
  return buf;
}

static int dt_bytes(dt_kind dt) {
  switch (dt) {
    case DT_BF16: return 2;
    case DT_F32: return 4;
    case DT_I32: return 4;
    case DT_I64: return 8;
    case DT_U8: return 1;
    case DT_BOOL: return 1;
  }
  return 1;
}

static dsv4kv_status fill_view(tview *v, const DLTensor *t, const char *name, dt_kind dt, int ndim) {
  if (t->ndim != ndim)
    return dsv4kv_fail(DSV4KV_ERR_RANK, "%s has %d dimensions; expected %d", name, t->ndim, ndim);
  if (ndim > 0 && !t->shape) return dsv4kv_fail(DSV4KV_ERR_NULL, "%s.shape is NULL", name);
  v->ndim = ndim;
  v->elem_bytes = dt_bytes(dt);
  v->device = t->device.device_type;
  v->device_id = t->device.device_id;
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++) {
    if (t->shape[d] < 0)
      return dsv4kv_fail(DSV4KV_ERR_SHAPE, "%s.shape[%d] = %lld is negative", name, d,
                         (long long)t->shape[d]);
    /* No real tensor has 2^48 elements along one axis; the cap keeps every
     * sum of extents in the ops far from overflow. */
    if (t->shape[d] > ((int64_t)1 << 48))
      return dsv4kv_fail(DSV4KV_ERR_SHAPE, "%s.shape[%d] = %lld exceeds 2^48", name, d,
                         (long long)t->shape[d]);
    v->shape[d] = t->shape[d];
    if (t->shape[d] != 0 && numel > INT64_MAX / t->shape[d])
      return dsv4kv_fail(DSV4KV_ERR_SHAPE, "%s has more elements than int64 can count", name);
    numel *= t->shape[d];
  }
  /* Compact row-major strides when none are given; the product saturates
   * (a dimension of 0 lets the others multiply past int64), and the span
   * check below then refuses such a stride. */
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    v->stride[d] = t->strides ? t->strides[d] : s;
    const int64_t m = v->shape[d] > 0 ? v->shape[d] : 1;
    s = s > INT64_MAX / m ? INT64_MAX : s * m;
  }
  /* The byte span of the tensor must fit in int64 so index arithmetic
   * (i * stride * elem) can never overflow. */
  int64_t span = 0;
  for (int d = 0; d < ndim; d++) {
    if (v->stride[d] < 0)
      return dsv4kv_fail(DSV4KV_ERR_STRIDE, "%s.strides[%d] = %lld is negative; not supported",
                         name, d, (long long)v->stride[d]);
    if (v->shape[d] == 0) continue;
    int64_t ext = v->shape[d] - 1;
    if (ext != 0 && v->stride[d] > (INT64_MAX / 16) / ext)
      return dsv4kv_fail(DSV4KV_ERR_STRIDE, "%s.strides[%d] = %lld overflows the address space",
                         name, d, (long long)v->stride[d]);
    span += ext * v->stride[d];
    if (span > INT64_MAX / 16)
      return dsv4kv_fail(DSV4KV_ERR_STRIDE, "%s spans more bytes than int64 can address", name);
  }
  if (numel > 0 && !t->data) return dsv4kv_fail(DSV4KV_ERR_NULL, "%s.data is NULL", name);
  v->data = t->data ? (uint8_t *)t->data + t->byte_offset : empty_data; /* (empty: see empty_data) */
  if ((uintptr_t)v->data % (uintptr_t)v->elem_bytes != 0)
    return dsv4kv_fail(DSV4KV_ERR_ALIGNMENT, "%s.data + byte_offset = %p is not aligned to its %d-byte elements",
                       name, (void *)v->data, v->elem_bytes);
  return DSV4KV_OK;
}

dsv4kv_status tview_make(tview *v, const DLTensor *t, const char *name, dt_kind dt, int ndim) {
  if (!t) return dsv4kv_fail(DSV4KV_ERR_NULL, "%s is NULL", name);
  if (!dtype_is(t->dtype, dt))
  {
    char buf[64];
    return dsv4kv_fail(DSV4KV_ERR_DTYPE, "%s has dtype %s; expected %s", name,
                       dl_dtype_name(t->dtype, buf, sizeof buf), dt_name(dt));
  }
  return fill_view(v, t, name, dt, ndim);
}

dsv4kv_status tview_make_f32_or_bf16(tview *v, const DLTensor *t, const char *name, int ndim,
                                     dt_kind *dt_out) {
  if (!t) return dsv4kv_fail(DSV4KV_ERR_NULL, "%s is NULL", name);
  dt_kind dt;
  if (dtype_is(t->dtype, DT_F32))
    dt = DT_F32;
  else if (dtype_is(t->dtype, DT_BF16))
    dt = DT_BF16;
  else
  {
    char buf[64];
    return dsv4kv_fail(DSV4KV_ERR_DTYPE, "%s has dtype %s; expected float32 or bfloat16", name,
                       dl_dtype_name(t->dtype, buf, sizeof buf));
  }
  *dt_out = dt;
  return fill_view(v, t, name, dt, ndim);
}

dsv4kv_status tview_make_rows(tview *v, const DLTensor *t, const char *name, dt_kind dt, int ndim,
                              int64_t width) {
  dsv4kv_status st;
  if ((st = tview_make(v, t, name, dt, ndim))) return st;
  if ((st = tview_dim_eq(v, name, ndim - 1, width))) return st;
  return tview_last_contiguous(v, name);
}

dsv4kv_status tview_make_slots(tview *slots, const DLTensor *t, const char *name, const tview *rows,
                               const char *rows_name) {
  dsv4kv_status st;
  if ((st = tview_make(slots, t, name, DT_I64, 1))) return st;
  if (slots->shape[0] > rows->shape[0])
    return dsv4kv_fail(DSV4KV_ERR_SHAPE,
                       "%s has %lld entries but %s has only %lld rows (T comes from %s, T <= rows of %s)", name,
                       (long long)slots->shape[0], rows_name, (long long)rows->shape[0], name, rows_name);
  return DSV4KV_OK;
}

dsv4kv_status tview_dim_eq(const tview *v, const char *name, int d, int64_t n) {
  if (v->shape[d] != n)
    return dsv4kv_fail(DSV4KV_ERR_SHAPE, "%s.shape[%d] = %lld; expected %lld", name, d,
                       (long long)v->shape[d], (long long)n);
  return DSV4KV_OK;
}

dsv4kv_status tview_dim_ge(const tview *v, const char *name, int d, int64_t n) {
  if (v->shape[d] < n)
    return dsv4kv_fail(DSV4KV_ERR_SHAPE, "%s.shape[%d] = %lld; expected at least %lld", name, d,
                       (long long)v->shape[d], (long long)n);
  return DSV4KV_OK;
}

dsv4kv_status tview_last_contiguous(const tview *v, const char *name) {
  int d = v->ndim - 1;
  for (int i = 0; i < v->ndim; i++)
    if (v->shape[i] == 0) return DSV4KV_OK; /* no element: any strides (numpy exports 0s) */
  if (v->shape[d] > 1 && v->stride[d] != 1)
    return dsv4kv_fail(DSV4KV_ERR_STRIDE, "%s.strides[%d] = %lld; the last dimension must be contiguous",
                       name, d, (long long)v->stride[d]);
  return DSV4KV_OK;
}

/* Byte span [lo, hi) of a view (hi == lo when empty). */
static void span_of(const tview *v, uintptr_t *lo, uintptr_t *hi) {
  int64_t last = 0;
  for (int d = 0; d < v->ndim; d++) {
    if (v->shape[d] == 0) {
      *lo = *hi = (uintptr_t)v->data;
      return;
    }
    last += (v->shape[d] - 1) * v->stride[d];
  }
  *lo = (uintptr_t)v->data;
  *hi = *lo + (uintptr_t)(last + 1) * (uintptr_t)v->elem_bytes;
}

dsv4kv_status tview_output(const tview *v, const char *name) {
  /* Sort the dims with more than one element by stride; each stride must
   * step past everything the smaller dims cover.  (A sufficient test: exotic
   * interleavings with distinct elements, e.g. shape [3, 2] strides [2, 3],
   * are refused too.) */
  int order[4], n = 0;
  for (int d = 0; d < v->ndim; d++) {
    if (v->shape[d] == 0) return DSV4KV_OK; /* no elements, nothing to overlap */
    if (v->shape[d] > 1) order[n++] = d;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v->stride[order[j]] < v->stride[order[j - 1]]; j--) {
      int tmp = order[j];
      order[j] = order[j - 1];
      order[j - 1] = tmp;
    }
  int64_t covered = 1; /* elements spanned by the dims so far, + 1 */
  for (int i = 0; i < n; i++) {
    int d = order[i];
    if (v->stride[d] < covered)
      return dsv4kv_fail(DSV4KV_ERR_STRIDE,
                         "%s.strides[%d] = %lld: an output's dimensions must nest without overlap (each stride past the extent of the smaller ones)",
                         name, d, (long long)v->stride[d]);
    covered = (v->shape[d] - 1) * v->stride[d] + covered;
  }
  return DSV4KV_OK;
}

/* Whether [blo, bhi) meets one of v's dim-0 slices (rows, pages) given that
 * it meets v's whole span [alo, ahi): exact where the slices leave gaps (a
 * cache's pages a stride apart with another layer's pages between them),
 * the whole span otherwise.  Strides are >= 0 (checked before). */
static int meets_a_slice(const tview *v, uintptr_t alo, uintptr_t blo, uintptr_t bhi) {
  if (v->ndim < 2 || v->shape[0] < 2 || blo < alo) return 1; /* (blo < alo: it meets slice 0's start) */
  uint64_t inner = 0; /* bytes one slice spans */
  for (int d = 1; d < v->ndim; d++) inner += (uint64_t)(v->shape[d] - 1) * (uint64_t)v->stride[d];
  inner = (inner + 1) * (uint64_t)v->elem_bytes;
  const uint64_t step = (uint64_t)v->stride[0] * (uint64_t)v->elem_bytes, off = blo - alo;
  if (step <= inner) return 1; /* no gaps */
  const uint64_t p = off / step;
  if (off % step < inner) return 1;                       /* starts inside slice p */
  return p + 1 < (uint64_t)v->shape[0] && bhi - alo > (p + 1) * step; /* reaches slice p + 1 */
}

dsv4kv_status tview_apart_from_input(const tview *out, const char *on, const tview *in, const char *in_name) {
  uintptr_t alo, ahi, blo, bhi;
  span_of(out, &alo, &ahi);
  span_of(in, &blo, &bhi);
  if (alo < ahi && blo < bhi && alo < bhi && blo < ahi && meets_a_slice(out, alo, blo, bhi))
    return dsv4kv_fail(DSV4KV_ERR_STRIDE,
                       "%s overlaps %s in memory: the rows written would change what later rows read, so the bytes "
                       "would depend on the order of the writes",
                       on, in_name);
  return DSV4KV_OK;
}

dsv4kv_status tview_disjoint(const tview *a, const char *an, const tview *b, const char *bn) {
  uintptr_t alo, ahi, blo, bhi;
  span_of(a, &alo, &ahi);
  span_of(b, &blo, &bhi);
  if (alo < ahi && blo < bhi && alo < bhi && blo < ahi) /* (an empty tensor overlaps nothing) */
    return dsv4kv_fail(DSV4KV_ERR_STRIDE, "outputs %s and %s overlap in memory", an, bn);
  return DSV4KV_OK;
}

dsv4kv_status tview_outputs_apart(const tview *const *v, const char *const *names, int n_in, int n) {
  dsv4kv_status st;
  for (int o = n_in; o < n; o++)
    for (int i = 0; i < n_in; i++)
      if (v[o] && v[i] && (st = tview_apart_from_input(v[o], names[o], v[i], names[i]))) return st;
  return DSV4KV_OK;
}

int tview_same(const tview *a, const tview *b) {
  if (a->data != b->data || a->ndim != b->ndim || a->elem_bytes != b->elem_bytes) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->stride[d] != b->stride[d])) return 0;
  return 1;
}
