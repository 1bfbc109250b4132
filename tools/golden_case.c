/* golden_case.c - buffers, metadata and comparisons of one golden file (see
 * golden_case.h). */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, mincore */

#include "golden_case.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A sparse cache larger than this is a corrupt num_blocks / block_stride, not
 * a test case (the golden ones are ~2.2 GB of address space). */
#define GC_MAX_SPARSE_BYTES ((size_t)64 << 30)

/* ------------------------------------------------------------------------ */
/* failures                                                                    */
/* ------------------------------------------------------------------------ */
int gc_fail(golden_case *c, const char *fmt, ...) {
  size_t used = strlen(c->msg);
  if (c->failed && used + 3 < sizeof c->msg) {
    memcpy(c->msg + used, "; ", 3);
    used += 2;
  }
  if (used < sizeof c->msg) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + used, sizeof c->msg - used, fmt, ap);
    va_end(ap);
  }
  c->failed = 1;
  return -1;
}

/* The buffers are host memory whatever `device` says.  With --device cuda that
 * is only sound while the library has no CUDA backend (it answers
 * DSV4KV_ERR_BACKEND_NOT_BUILT from the tensors' device before touching any
 * data); a CUDA build needs this harness to stage every buffer in device
 * memory (and copy outputs back) before such a run can mean anything. */
void gc_init(golden_case *c, const st_file *st, DLDeviceType device) {
  memset(c, 0, sizeof *c);
  c->st = st;
  c->path = st_path(st);
  c->device.device_type = device;
  c->device.device_id = 0;
  c->opt.skipped = &c->skipped;
}

void gc_free(golden_case *c) {
  gc_buf *b = c->bufs;
  while (b) {
    gc_buf *next = b->next;
    if (b->sparse) {
      if (b->data) munmap(b->data, b->map_size);
    } else {
      free(b->data);
    }
    free(b);
    b = next;
  }
  c->bufs = NULL;
}

/* ------------------------------------------------------------------------ */
/* metadata                                                                    */
/* ------------------------------------------------------------------------ */
static const char *meta_required(golden_case *c, const char *key) {
  const char *v = st_meta(c->st, key);
  if (!v) gc_fail(c, "metadata '%s' is missing", key);
  return v;
}

static int parse_i64(const char *s, int64_t *out) {
  if (!*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

int gc_meta_i64(golden_case *c, const char *key, int64_t *out) {
  const char *v = meta_required(c, key);
  if (!v) return -1;
  if (parse_i64(v, out)) return gc_fail(c, "metadata '%s' = '%s' is not an integer", key, v);
  return 0;
}

int gc_meta_i32(golden_case *c, const char *key, int32_t *out) {
  const char *v = st_meta(c->st, key);
  if (v && !strcmp(v, "none"))
    return gc_fail(c, "metadata '%s' is 'none' where a number is needed", key);
  return gc_meta_i32_or_none(c, key, 0, out);
}

int gc_meta_i32_or_none(golden_case *c, const char *key, int32_t none_value, int32_t *out) {
  const char *v = meta_required(c, key);
  if (!v) return -1;
  if (!strcmp(v, "none")) {
    *out = none_value;
    return 0;
  }
  int64_t x;
  if (parse_i64(v, &x)) return gc_fail(c, "metadata '%s' = '%s' is not an integer", key, v);
  if (x < INT32_MIN || x > INT32_MAX)
    return gc_fail(c, "metadata '%s' = %s does not fit in int32", key, v);
  *out = (int32_t)x;
  return 0;
}

int gc_meta_bool(golden_case *c, const char *key, int default_value, int *out) {
  const char *v = st_meta(c->st, key);
  if (!v) {
    if (default_value < 0) return gc_fail(c, "metadata '%s' is missing", key);
    *out = default_value;
    return 0;
  }
  if (!strcmp(v, "1")) *out = 1;
  else if (!strcmp(v, "0")) *out = 0;
  else return gc_fail(c, "metadata '%s' = '%s' is not a boolean (\"1\" or \"0\")", key, v);
  return 0;
}

int gc_meta_f64(golden_case *c, const char *key, double *out) {
  const char *v = meta_required(c, key);
  if (!v) return -1;
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || errno || *end) return gc_fail(c, "metadata '%s' = '%s' is not a number", key, v);
  *out = x;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* buffers                                                                     */
/* ------------------------------------------------------------------------ */
static const char *dims_string(char *buf, size_t len, int ndim, const int64_t *shape) {
  size_t n = (size_t)snprintf(buf, len, "[");
  for (int d = 0; d < ndim && n < len; d++)
    n += (size_t)snprintf(buf + n, len - n, "%s%" PRId64, d ? ", " : "", shape[d]);
  if (n < len) snprintf(buf + n, len - n, "]");
  return buf;
}

/* A zeroed gc_buf linked into the case, its view set to `dtype`/`shape`. */
static gc_buf *new_buf(golden_case *c, const char *name, st_dtype dtype, int ndim,
                       const int64_t *shape) {
  gc_buf *b = calloc(1, sizeof *b);
  if (!b) {
    gc_fail(c, "out of memory for tensor '%s'", name);
    return NULL;
  }
  b->name = name;
  b->dtype = dtype;
  memcpy(b->shape, shape, (size_t)ndim * sizeof *shape);
  b->t.device = c->device;
  b->t.ndim = ndim;
  b->t.dtype = st_dl_dtype(dtype);
  b->t.shape = b->shape;
  b->next = c->bufs;
  c->bufs = b;
  return b;
}

/* 64-byte aligned storage of `nbytes` (at least one cache line, so a
 * zero-element tensor still has a valid, distinct pointer). */
static int alloc_data(golden_case *c, gc_buf *b, size_t nbytes) {
  size_t rounded = (nbytes + 63) & ~(size_t)63;
  b->data = aligned_alloc(64, rounded ? rounded : 64);
  if (!b->data) return gc_fail(c, "out of memory for tensor '%s' (%zu bytes)", b->name, nbytes);
  b->nbytes = nbytes;
  b->t.data = b->data;
  return 0;
}

static gc_buf *copy_of(golden_case *c, const st_tensor *t, int written) {
  gc_buf *b = new_buf(c, t->name, t->dtype, t->ndim, t->shape);
  if (!b || alloc_data(c, b, t->nbytes)) return NULL;
  memcpy(b->data, t->data, t->nbytes);
  b->src = t;
  b->written = written;
  return b;
}

const DLTensor *gc_input(golden_case *c, const char *name, int required, int ndim) {
  const st_tensor *t = st_find(c->st, name);
  if (!t) {
    if (required) gc_fail(c, "tensor '%s' is missing", name);
    return NULL;
  }
  if (ndim >= 0 && t->ndim != ndim) {
    gc_fail(c, "tensor '%s' has rank %d, expected %d", name, t->ndim, ndim);
    return NULL;
  }
  gc_buf *b = copy_of(c, t, 0);
  return b ? &b->t : NULL;
}

gc_buf *gc_output_copy(golden_case *c, const char *name) {
  const st_tensor *t = st_find(c->st, name);
  if (!t) {
    gc_fail(c, "tensor '%s' (the pre-filled output) is missing", name);
    return NULL;
  }
  return copy_of(c, t, 1);
}

gc_buf *gc_output_new(golden_case *c, const char *name, st_dtype dtype, int ndim,
                      const int64_t *shape) {
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0 || __builtin_mul_overflow(numel, shape[d], &numel)) {
      gc_fail(c, "output '%s' has an invalid shape", name);
      return NULL;
    }
  }
  gc_buf *b = new_buf(c, name, dtype, ndim, shape);
  if (!b || alloc_data(c, b, (size_t)numel * st_dtype_size(dtype))) return NULL;
  memset(b->data, GC_POISON_BYTE, b->nbytes);
  b->written = 1;
  return b;
}

/* ------------------------------------------------------------------------ */
/* sparse caches                                                               */
/* ------------------------------------------------------------------------ */

/* Checks <name>.block_ids / <name>.blocks against num_blocks x block_stride. */
static int sparse_tensors(golden_case *c, const char *name, int64_t num_blocks, int64_t stride,
                          const st_tensor **ids_out, const st_tensor **blocks_out) {
  char key[128];
  snprintf(key, sizeof key, "%s.block_ids", name);
  const st_tensor *ids = st_find(c->st, key);
  snprintf(key, sizeof key, "%s.blocks", name);
  const st_tensor *blocks = st_find(c->st, key);
  if (!ids || !blocks)
    return gc_fail(c, "sparse cache '%s' needs tensors '%s.block_ids' and '%s.blocks'", name,
                   name, name);
  if (ids->dtype != ST_I64 || ids->ndim != 1)
    return gc_fail(c, "'%s.block_ids' must be I64 [n]", name);
  if (blocks->dtype != ST_U8 || blocks->ndim != 2 || blocks->shape[0] != ids->shape[0] ||
      blocks->shape[1] != stride)
    return gc_fail(c, "'%s.blocks' must be U8 [%" PRId64 ", %" PRId64 "] (block_ids x block_stride)",
                   name, ids->shape[0], stride);
  for (int64_t i = 0; i < ids->shape[0]; i++) {
    int64_t id;
    memcpy(&id, ids->data + 8 * i, 8);
    if (id < 0 || id >= num_blocks)
      return gc_fail(c, "'%s.block_ids'[%" PRId64 "] = %" PRId64 " is outside [0, %" PRId64 ")",
                     name, i, id, num_blocks);
    for (int64_t j = 0; j < i; j++) {
      int64_t other;
      memcpy(&other, ids->data + 8 * j, 8);
      if (other == id) return gc_fail(c, "'%s.block_ids' lists block %" PRId64 " twice", name, id);
    }
  }
  *ids_out = ids;
  *blocks_out = blocks;
  return 0;
}

static int64_t block_id_at(const gc_buf *b, int64_t i) {
  int64_t id;
  memcpy(&id, b->block_ids->data + 8 * i, 8);
  return id;
}

/* The real cache has num_blocks blocks (about 2.2 GB) of which the file holds
 * only the few an op touches.  An anonymous MAP_NORESERVE mapping gives the
 * full address range without committing memory: only the pages of the listed
 * blocks (copied in here) and whatever the op writes become resident.
 * Unlisted blocks read as zero, not as the reference's fill byte 0xA5
 * (k_cache_fill): filling 2.2 GB would defeat the point, and no correct op
 * reads or writes an unlisted block, so their contents never reach a result. */
static gc_buf *sparse_cache(golden_case *c, const char *name, int written) {
  int64_t num_blocks, stride;
  if (gc_meta_i64(c, "num_blocks", &num_blocks) || gc_meta_i64(c, "block_stride", &stride))
    return NULL;
  int64_t size;
  if (num_blocks <= 0 || stride <= 0 || __builtin_mul_overflow(num_blocks, stride, &size) ||
      (uint64_t)size > GC_MAX_SPARSE_BYTES) {
    gc_fail(c, "sparse cache of %" PRId64 " blocks x %" PRId64 " bytes is not a sensible size",
            num_blocks, stride);
    return NULL;
  }
  const st_tensor *ids = NULL, *blocks = NULL;
  if (sparse_tensors(c, name, num_blocks, stride, &ids, &blocks)) return NULL;
  int64_t shape[2] = {num_blocks, stride};
  gc_buf *b = new_buf(c, name, ST_U8, 2, shape);
  if (!b) return NULL;
  void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    gc_fail(c, "cannot map a sparse cache of %" PRId64 " bytes: %s", size, strerror(errno));
    return NULL;
  }
  b->sparse = 1;
  b->data = p;
  b->t.data = p;
  b->map_size = (size_t)size;
  b->nbytes = (size_t)size;
  b->block_ids = ids;
  b->blocks = blocks;
  b->block_stride = stride;
  b->written = written;
  for (int64_t i = 0; i < ids->shape[0]; i++)
    memcpy((uint8_t *)p + block_id_at(b, i) * stride, blocks->data + i * stride, (size_t)stride);
  return b;
}

gc_buf *gc_cache(golden_case *c, const char *name, int written) {
  const char *layout = st_meta(c->st, "k_cache_layout");
  char key[128];
  snprintf(key, sizeof key, "%s.blocks", name);
  /* Older files may lack k_cache_layout; the tensors say which it is. */
  int sparse = layout ? !strcmp(layout, "sparse") : (!st_find(c->st, name) && st_find(c->st, key));
  if (layout && !sparse && strcmp(layout, "dense")) {
    gc_fail(c, "metadata k_cache_layout = '%s' is neither 'dense' nor 'sparse'", layout);
    return NULL;
  }
  if (sparse) return sparse_cache(c, name, written);
  const st_tensor *t = st_find(c->st, name);
  if (!t) {
    gc_fail(c, "tensor '%s' is missing", name);
    return NULL;
  }
  if (t->dtype != ST_U8 || t->ndim != 2) {
    gc_fail(c, "cache '%s' must be U8 [num_blocks, block_stride]", name);
    return NULL;
  }
  return copy_of(c, t, written);
}

/* ------------------------------------------------------------------------ */
/* status                                                                      */
/* ------------------------------------------------------------------------ */
int gc_status(golden_case *c, const char *call, dsv4kv_status st) {
  if (st == DSV4KV_OK) return 0;
  const char *why = dsv4kv_last_error();
  if (st == DSV4KV_WARN_SKIPPED)
    return gc_fail(c, "%s returned %s (%" PRId64 " entries skipped): %s", call,
                   dsv4kv_status_string(st), c->skipped, why && *why ? why : "(no message)");
  return gc_fail(c, "%s returned %s: %s", call, dsv4kv_status_string(st),
                 why && *why ? why : "(no message)");
}

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
  dims_string(buf, len, ndim, coord);
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
            dims_string(a, sizeof a, e->ndim, e->shape), st_dtype_name(dtype),
            dims_string(b, sizeof b, ndim, shape));
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
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  size_t npages = (b->map_size + (size_t)page - 1) / (size_t)page;
  unsigned char *resident = malloc(npages);
  if (!resident) return gc_fail(c, "out of memory checking the sparse cache");
  if (mincore(b->data, b->map_size, resident)) {
    free(resident);
    return gc_fail(c, "mincore on the sparse cache failed: %s", strerror(errno));
  }
  const uint8_t *base = b->data;
  const int64_t nlisted = b->block_ids->shape[0];
  int64_t bad_offset = -1, bad_count = 0;
  for (size_t p = 0; p < npages; p++) {
    if (!(resident[p] & 1)) continue;
    int64_t lo = (int64_t)(p * (size_t)page);
    int64_t hi = lo + page < (int64_t)b->map_size ? lo + page : (int64_t)b->map_size;
    while (lo < hi) { /* walk the page one block segment at a time */
      int64_t blk = lo / b->block_stride;
      int64_t seg_end = (blk + 1) * b->block_stride < hi ? (blk + 1) * b->block_stride : hi;
      int listed = 0;
      for (int64_t i = 0; i < nlisted && !listed; i++) listed = block_id_at(b, i) == blk;
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
                 b->name, bad_offset / b->block_stride, bad_offset % b->block_stride,
                 base[bad_offset], bad_count);
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
    memcpy(listed + (size_t)i * stride, (const uint8_t *)b->data + block_id_at(b, i) * b->block_stride,
           stride);
  int rc = 0;
  diff d = find_diff(listed, e->data, e->numel, 1);
  if (d.first >= 0) {
    char suffix[96];
    snprintf(suffix, sizeof suffix, " (row %" PRId64 " is block id %" PRId64 ")",
             d.first / b->block_stride, block_id_at(b, d.first / b->block_stride));
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
