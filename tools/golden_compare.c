/* golden_compare.c - the comparisons after a call: outputs against the
 * expected tensors, read-only inputs unchanged, sparse caches written only
 * where listed (see golden_case.h). */
#define _GNU_SOURCE /* mincore */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "golden_case.h"

/* ------------------------------------------------------------------------ */
/* comparison                                                                  */
/* ------------------------------------------------------------------------ */
typedef struct {
  int64_t first; /* -1 when equal */
  int64_t count;
} diff;

static diff find_diff(const uint8_t *got, const uint8_t *want, int64_t numel, size_t itemsize) {
  diff d = {-1, 0};
  if (!memcmp(got, want, (size_t)numel * itemsize)) return d;
  for (int64_t i = 0; i < numel; i++) {
    if (memcmp(got + i * itemsize, want + i * itemsize, itemsize)) {
      if (d.first < 0) d.first = i;
      d.count++;
    }
  }
  return d;
}

static void format_value(char *buf, size_t len, st_dtype dtype, const uint8_t *p) {
  switch (dtype) {
  case ST_BOOL:
  case ST_U8:
    snprintf(buf, len, "0x%02x", p[0]);
    break;
  case ST_BF16: {
    uint16_t v;
    memcpy(&v, p, 2);
    uint32_t bits = (uint32_t)v << 16;
    float f;
    memcpy(&f, &bits, 4);
    snprintf(buf, len, "0x%04x (%g)", v, (double)f);
    break;
  }
  case ST_I32: {
    int32_t v;
    memcpy(&v, p, 4);
    snprintf(buf, len, "0x%08" PRIx32 " (%" PRId32 ")", (uint32_t)v, v);
    break;
  }
  case ST_I64: {
    int64_t v;
    memcpy(&v, p, 8);
    snprintf(buf, len, "%" PRId64, v);
    break;
  }
  case ST_F32: {
    uint32_t bits;
    float f;
    memcpy(&bits, p, 4);
    memcpy(&f, p, 4);
    snprintf(buf, len, "0x%08" PRIx32 " (%.9g)", bits, (double)f);
    break;
  }
  }
}

/* Row-major coordinates of flat element `index`. */
static void format_coords(char *buf, size_t len, int ndim, const int64_t *shape, int64_t index) {
  int64_t coord[ST_MAX_NDIM];
  for (int d = ndim - 1; d >= 0; d--) {
    coord[d] = shape[d] ? index % shape[d] : 0;
    index = shape[d] ? index / shape[d] : 0;
  }
  gc_dims_string(buf, len, ndim, coord);
  buf[0] = '(';
  size_t n = strlen(buf);
  if (n) buf[n - 1] = ')';
}

/* Compares `numel` elements; on a difference records the standard line. */
static int report_diff(golden_case *c, const char *label, st_dtype dtype, int ndim,
                       const int64_t *shape, const uint8_t *got, const uint8_t *want,
                       int64_t numel, const char *suffix) {
  size_t isz = st_dtype_size(dtype);
  diff d = find_diff(got, want, numel, isz);
  if (d.first < 0) return 0;
  if (c->failed) /* one full line per file: later tensors get a short note */
    return gc_fail(c, "%s also differs (%" PRId64 " of %" PRId64 " elements)", label, d.count, numel);
  char coords[256], g[64], w[64];
  format_coords(coords, sizeof coords, ndim, shape, d.first);
  format_value(g, sizeof g, dtype, got + d.first * isz);
  format_value(w, sizeof w, dtype, want + d.first * isz);
  return gc_fail(c, "%s first differs at element %" PRId64 " %s: got %s expected %s; %" PRId64
                 " of %" PRId64 " elements differ%s",
                 label, d.first, coords, g, w, d.count, numel, suffix ? suffix : "");
}

static const st_tensor *expected_like(golden_case *c, const char *expected_name, st_dtype dtype,
                                      int ndim, const int64_t *shape) {
  const st_tensor *e = st_find(c->st, expected_name);
  if (!e) {
    gc_fail(c, "tensor '%s' is missing", expected_name);
    return NULL;
  }
  int same = e->dtype == dtype && e->ndim == ndim;
  for (int d = 0; same && d < ndim; d++) same = e->shape[d] == shape[d];
  if (!same) {
    char a[128], b[128];
    gc_fail(c, "'%s' is %s%s but the output is %s%s", expected_name, st_dtype_name(e->dtype),
            gc_dims_string(a, sizeof a, e->ndim, e->shape), st_dtype_name(dtype),
            gc_dims_string(b, sizeof b, ndim, shape));
    return NULL;
  }
  if (c->num_checked < (int)(sizeof c->checked / sizeof c->checked[0]))
    c->checked[c->num_checked++] = e;
  return e;
}

int gc_compare(golden_case *c, const gc_buf *out, const char *expected_name) {
  if (!out) return -1;
  const st_tensor *e = expected_like(c, expected_name, out->dtype, out->t.ndim, out->shape);
  if (!e) return -1;
  return report_diff(c, out->name, out->dtype, e->ndim, e->shape, out->data, e->data, e->numel,
                     NULL);
}

static int dl_to_st_dtype(DLDataType t, st_dtype *out) {
  for (int d = ST_BOOL; d <= ST_BF16; d++) {
    DLDataType s = st_dl_dtype((st_dtype)d);
    if (s.code == t.code && s.bits == t.bits && s.lanes == t.lanes) {
      *out = (st_dtype)d;
      return 0;
    }
  }
  return -1;
}

int gc_compare_dl(golden_case *c, const char *label, const DLTensor *got,
                  const char *expected_name) {
  st_dtype dtype;
  if (!got || !got->data)
    return gc_fail(c, "%s: the library returned no tensor", label);
  if (got->device.device_type != kDLCPU)
    return gc_fail(c, "%s: the library returned a tensor off the CPU", label);
  if (got->ndim < 0 || got->ndim > ST_MAX_NDIM || dl_to_st_dtype(got->dtype, &dtype))
    return gc_fail(c, "%s: the library returned an unexpected dtype or rank", label);
  /* Compact row-major only: the comparison walks bytes in order. */
  int64_t expect_stride = 1;
  for (int d = got->ndim - 1; got->strides && d >= 0; d--) {
    if (got->shape[d] > 1 && got->strides[d] != expect_stride)
      return gc_fail(c, "%s: the library returned a non-compact tensor", label);
    expect_stride *= got->shape[d];
  }
  const st_tensor *e = expected_like(c, expected_name, dtype, got->ndim, got->shape);
  if (!e) return -1;
  return report_diff(c, label, dtype, e->ndim, e->shape,
                     (const uint8_t *)got->data + got->byte_offset, e->data, e->numel, NULL);
}

/* Nothing outside the listed blocks may have been written.  A page of an
 * anonymous mapping that was never touched is not resident (mincore), so it
 * cannot hold a write; a resident page was touched (copied-in blocks, a read
 * of the shared zero page, or a write) and every byte of it that belongs to
 * an unlisted block must still read as zero.  Limits: a write of zeros is
 * invisible, and a written page swapped out before the check would be missed
 * (the mapping is a few MB resident at most, so that does not happen in
 * practice). */
static int sparse_check_untouched(golden_case *c, const gc_buf *b) {
  const size_t page = gc_page_bytes();
  size_t npages = (b->map_size + page - 1) / page;
  unsigned char *resident = malloc(npages);
  if (!resident) return gc_fail(c, "out of memory checking the sparse cache");
  if (mincore(b->data, b->map_size, resident)) {
    free(resident);
    return gc_fail(c, "mincore on the sparse cache failed: %s", strerror(errno));
  }
  const uint8_t *base = b->data;
  const int64_t *ids = b->sorted_ids, n = b->block_ids->shape[0], stride = b->block_stride;
  int64_t bad_offset = -1, bad_count = 0, k = 0; /* ids[k]: first listed id not yet passed */
  for (size_t p = 0; p < npages; p++) {
    if (!(resident[p] & 1)) continue;
    int64_t lo = (int64_t)(p * page);
    int64_t hi = lo + (int64_t)page < (int64_t)b->map_size ? lo + (int64_t)page : (int64_t)b->map_size;
    while (lo < hi) { /* walk the page one block segment at a time */
      int64_t blk = lo / stride;
      int64_t seg_end = (blk + 1) * stride < hi ? (blk + 1) * stride : hi;
      while (k < n && ids[k] < blk) k++;
      int listed = k < n && ids[k] == blk;
      for (int64_t o = lo; !listed && o < seg_end; o++) {
        if (base[o]) {
          if (bad_offset < 0) bad_offset = o;
          bad_count++;
        }
      }
      lo = seg_end;
    }
  }
  free(resident);
  if (bad_offset < 0) return 0;
  return gc_fail(c, "%s written outside the listed blocks: block %" PRId64 " byte %" PRId64
                 " is 0x%02x (was never written; %" PRId64 " such bytes)",
                 b->name, bad_offset / stride, bad_offset % stride, base[bad_offset], bad_count);
}

static int sparse_compare(golden_case *c, const gc_buf *b) {
  /* A written cache must hold expected.<name>.blocks; a read-only one its input. */
  char key[128];
  snprintf(key, sizeof key, "%s%s.blocks", b->written ? "expected." : "", b->name);
  int64_t shape[2] = {b->block_ids->shape[0], b->block_stride};
  const st_tensor *e = expected_like(c, key, ST_U8, 2, shape);
  if (!e) return -1;
  size_t stride = (size_t)b->block_stride;
  uint8_t *listed = malloc(e->nbytes ? e->nbytes : 1); /* the listed blocks, packed */
  if (!listed) return gc_fail(c, "out of memory comparing the sparse cache");
  for (int64_t i = 0; i < shape[0]; i++)
    memcpy(listed + (size_t)i * stride, (const uint8_t *)b->data + gc_block_id_at(b, i) * b->block_stride,
           stride);
  int rc = 0;
  diff d = find_diff(listed, e->data, e->numel, 1);
  if (d.first >= 0) {
    char suffix[96];
    snprintf(suffix, sizeof suffix, " (row %" PRId64 " is block id %" PRId64 ")",
             d.first / b->block_stride, gc_block_id_at(b, d.first / b->block_stride));
    char label[160];
    snprintf(label, sizeof label, "%s.blocks", b->name);
    rc = report_diff(c, label, ST_U8, 2, e->shape, listed, e->data, e->numel, suffix);
  }
  free(listed);
  return sparse_check_untouched(c, b) || rc ? -1 : 0;
}

int gc_compare_cache(golden_case *c, const gc_buf *cache) {
  if (!cache) return -1;
  if (cache->sparse) return sparse_compare(c, cache);
  if (!cache->written) return 0; /* a dense read-only copy: gc_check_inputs */
  char key[128];
  snprintf(key, sizeof key, "expected.%s", cache->name);
  return gc_compare(c, cache, key);
}

int gc_compare_bytes(golden_case *c, const char *label, st_dtype dtype, int ndim,
                     const int64_t *shape, const void *got, const void *want) {
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++) numel *= shape[d];
  return report_diff(c, label, dtype, ndim, shape, got, want, numel, NULL);
}

int gc_check_all_expected_used(golden_case *c) {
  for (size_t i = 0; i < st_num_tensors(c->st); i++) {
    const st_tensor *t = st_tensor_at(c->st, i);
    if (strncmp(t->name, "expected.", 9)) continue;
    int used = 0;
    for (int j = 0; j < c->num_checked && !used; j++) used = c->checked[j] == t;
    if (!used) gc_fail(c, "'%s' is not checked by the harness for this op", t->name);
  }
  return c->failed ? -1 : 0;
}

int gc_check_inputs(golden_case *c) {
  int rc = 0;
  for (const gc_buf *b = c->bufs; b; b = b->next) {
    if (b->written || b->sparse || !b->src) continue;
    char label[160];
    snprintf(label, sizeof label, "input %s (modified by the call)", b->name);
    if (report_diff(c, label, b->dtype, b->src->ndim, b->src->shape, b->data, b->src->data,
                    b->src->numel, NULL))
      rc = -1;
  }
  return rc;
}
