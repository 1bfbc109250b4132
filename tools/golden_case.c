/* golden_case.c - buffers and metadata of one golden file, and the checks
 * that bound what a file may make verify allocate (see golden_case.h; the
 * comparisons are in golden_compare.c). */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */

#include "golden_case.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* failures                                                                    */
/* ------------------------------------------------------------------------ */
int gc_fail(golden_case *c, const char *fmt, ...) {
  /* A failure already reported (two readers of one metadata key) is not
   * repeated. */
  char line[GC_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (c->failed && strstr(c->msg, line)) return -1;
  /* Before the first failure c->msg holds only the warnings of calls that
   * completed (gc_status); they follow the failure, in parentheses. */
  char warnings[GC_MSG_LEN] = "";
  if (!c->failed && c->msg[0]) {
    memcpy(warnings, c->msg, sizeof warnings);
    c->msg[0] = '\0';
  }
  size_t used = strlen(c->msg);
  if (c->failed && used + 3 < sizeof c->msg) {
    memcpy(c->msg + used, "; ", 3);
    used += 2;
  }
  if (used < sizeof c->msg) snprintf(c->msg + used, sizeof c->msg - used, "%s", line);
  if (warnings[0]) {
    used = strlen(c->msg);
    snprintf(c->msg + used, sizeof c->msg - used, " (warning: %s)", warnings);
  }
  c->failed = 1;
  return -1;
}

/* The buffers are host memory; with --device cuda, gc_device_begin / _end
 * (golden_device.c) stage them in device memory around each call. */
void gc_init(golden_case *c, const st_file *st, DLDeviceType device) {
  memset(c, 0, sizeof *c);
  c->st = st;
  c->path = st_path(st);
  c->device.device_type = device;
  c->device.device_id = 0;
  c->opt.skipped = &c->skipped;
  size_t size = st_file_size(st), extra;
  if (__builtin_mul_overflow(size, (size_t)GC_ALLOC_PER_FILE_BYTE, &extra) ||
      __builtin_add_overflow(extra, GC_ALLOC_BASE_BYTES, &c->alloc_cap) || c->alloc_cap > GC_ALLOC_MAX_BYTES)
    c->alloc_cap = GC_ALLOC_MAX_BYTES;
}

/* Charges `bytes` to the case before they are allocated (`what` names them). */
static int reserve(golden_case *c, const char *what, size_t bytes) {
  if (bytes > c->alloc_cap - c->alloc_bytes)
    return gc_fail(c, "%s needs %zu bytes, over the cap of %zu bytes this %zu-byte file may make "
                   "verify allocate (%zu MiB + %d x the file, at most %zu GiB; %zu in use already)",
                   what, bytes, c->alloc_cap, st_file_size(c->st), GC_ALLOC_BASE_BYTES >> 20,
                   GC_ALLOC_PER_FILE_BYTE, GC_ALLOC_MAX_BYTES >> 30, c->alloc_bytes);
  c->alloc_bytes += bytes;
  return 0;
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
    free(b->sorted_ids);
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
const char *gc_dims_string(char *buf, size_t len, int ndim, const int64_t *shape) {
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
  char what[160];
  snprintf(what, sizeof what, "tensor '%s'", b->name);
  if (nbytes > SIZE_MAX - 64 || reserve(c, what, nbytes)) return -1;
  b->nbytes = nbytes;
  if (c->dry_run) return 0;
  size_t rounded = (nbytes + 63) & ~(size_t)63;
  b->data = aligned_alloc(64, rounded ? rounded : 64);
  if (!b->data) return gc_fail(c, "out of memory for tensor '%s' (%zu bytes)", b->name, nbytes);
  b->t.data = b->data;
  return 0;
}

static gc_buf *copy_of(golden_case *c, const st_tensor *t, int written) {
  gc_buf *b = new_buf(c, t->name, t->dtype, t->ndim, t->shape);
  if (!b || alloc_data(c, b, t->nbytes)) return NULL;
  if (c->dry_run)
    b->t.data = (void *)t->data; /* a view: a dry run calls nothing that writes */
  else
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
  char key[128], a[128], e[128];
  snprintf(key, sizeof key, "expected.%s", name);
  const st_tensor *want = st_find(c->st, key);
  int same = want && want->dtype == dtype && want->ndim == ndim;
  for (int d = 0; same && d < ndim; d++) same = want->shape[d] == shape[d];
  if (!same) { /* the shape comes from metadata and inputs: never allocate it unchecked */
    if (!want) gc_fail(c, "tensor '%s' is missing", key);
    else gc_fail(c, "output '%s' would be %s%s (from the metadata and the inputs' shapes) but "
                 "'%s' is %s%s", name, st_dtype_name(dtype), gc_dims_string(a, sizeof a, ndim, shape),
                 key, st_dtype_name(want->dtype), gc_dims_string(e, sizeof e, want->ndim, want->shape));
    return NULL;
  }
  gc_buf *b = new_buf(c, name, dtype, ndim, shape);
  if (!b || alloc_data(c, b, want->nbytes)) return NULL;
  if (!c->dry_run) memset(b->data, GC_POISON_BYTE, b->nbytes);
  b->written = 1;
  return b;
}

/* ------------------------------------------------------------------------ */
/* sparse caches                                                               */
/* ------------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Checks <name>.block_ids / <name>.blocks against num_blocks x block_stride
 * and returns the ids sorted (duplicates found in O(n log n)). */
static int sparse_tensors(golden_case *c, const char *name, int64_t num_blocks, int64_t stride,
                          gc_buf *b) {
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
  const int64_t n = ids->shape[0];
  if (reserve(c, "the sorted block ids", ids->nbytes) ||
      !(b->sorted_ids = malloc(ids->nbytes ? ids->nbytes : 1)))
    return c->failed ? -1 : gc_fail(c, "out of memory sorting '%s.block_ids'", name);
  memcpy(b->sorted_ids, ids->data, ids->nbytes);
  for (int64_t i = 0; i < n; i++) {
    int64_t id = b->sorted_ids[i];
    if (id < 0 || id >= num_blocks)
      return gc_fail(c, "'%s.block_ids'[%" PRId64 "] = %" PRId64 " is outside [0, num_blocks = %"
                     PRId64 ")", name, i, id, num_blocks);
  }
  qsort(b->sorted_ids, (size_t)n, sizeof *b->sorted_ids, cmp_i64);
  for (int64_t i = 1; i < n; i++)
    if (b->sorted_ids[i] == b->sorted_ids[i - 1])
      return gc_fail(c, "'%s.block_ids' lists block %" PRId64 " twice", name, b->sorted_ids[i]);
  b->block_ids = ids;
  b->blocks = blocks;
  return 0;
}

int64_t gc_block_id_at(const gc_buf *b, int64_t i) {
  int64_t id;
  memcpy(&id, b->block_ids->data + 8 * i, 8);
  return id;
}

size_t gc_page_bytes(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (size_t)page : 4096;
}

/* Charges what a sparse cache makes resident: the pages its listed blocks
 * span once copied in (a block per page costs a page each, however small),
 * the mincore vector and the packed copy sparse_compare makes. */
static int sparse_reserve(golden_case *c, const gc_buf *b, size_t map_size) {
  const size_t page = gc_page_bytes();
  const int64_t n = b->block_ids->shape[0], stride = b->block_stride;
  size_t pages = 0;
  int64_t last = -1; /* highest page counted so far; ids ascend */
  for (int64_t i = 0; i < n; i++) {
    int64_t first = b->sorted_ids[i] * stride / (int64_t)page;
    int64_t end = (b->sorted_ids[i] * stride + stride - 1) / (int64_t)page;
    if (first <= last) first = last + 1;
    if (end >= first) pages += (size_t)(end - first + 1);
    if (end > last) last = end;
  }
  char what[256];
  snprintf(what, sizeof what, "sparse cache '%s': %" PRId64 " listed blocks of %" PRId64
           " bytes spanning %zu pages", b->name, n, stride, pages);
  if (pages > SIZE_MAX / page) return reserve(c, what, SIZE_MAX);
  if (reserve(c, what, pages * page)) return -1;
  snprintf(what, sizeof what, "sparse cache '%s': its residency check", b->name);
  return reserve(c, what, map_size / page + 1 + b->blocks->nbytes);
}

/* The real cache has num_blocks blocks (about 2.2 GB) of which the file holds
 * only the few an op touches.  An anonymous MAP_NORESERVE mapping gives the
 * full address range without committing memory: only the pages of the listed
 * blocks (copied in here) and whatever the op writes become resident.
 * Unlisted blocks read as zero, not as the reference's fill byte 0xA5
 * (k_cache_fill): filling 2.2 GB would defeat the point, and no correct op
 * reads or writes an unlisted block, so their contents never reach a result. */
static gc_buf *sparse_cache(golden_case *c, const char *name, int written) {
  int64_t num_blocks, stride, size;
  if (gc_meta_i64(c, "num_blocks", &num_blocks) || gc_meta_i64(c, "block_stride", &stride))
    return NULL;
  if (num_blocks <= 0 || stride <= 0) {
    gc_fail(c, "sparse cache '%s': metadata num_blocks = %" PRId64 " and block_stride = %" PRId64
            " must be positive", name, num_blocks, stride);
    return NULL;
  }
  if (__builtin_mul_overflow(num_blocks, stride, &size) || (uint64_t)size > GC_MAX_SPARSE_BYTES) {
    gc_fail(c, "sparse cache '%s': metadata num_blocks = %" PRId64 " x block_stride = %" PRId64
            " is over the %zu GiB a sparse cache may map", name, num_blocks, stride,
            GC_MAX_SPARSE_BYTES >> 30);
    return NULL;
  }
  int64_t shape[2] = {num_blocks, stride};
  gc_buf *b = new_buf(c, name, ST_U8, 2, shape);
  if (!b) return NULL;
  b->sparse = 1;
  b->block_stride = stride;
  b->written = written;
  if (sparse_tensors(c, name, num_blocks, stride, b) || sparse_reserve(c, b, (size_t)size))
    return NULL;
  b->map_size = (size_t)size;
  b->nbytes = (size_t)size;
  if (c->dry_run) return b;
  void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    gc_fail(c, "cannot map a sparse cache of %" PRId64 " bytes: %s", size, strerror(errno));
    return NULL;
  }
  b->data = p;
  b->t.data = p;
  for (int64_t i = 0; i < b->block_ids->shape[0]; i++)
    memcpy((uint8_t *)p + gc_block_id_at(b, i) * stride, b->blocks->data + i * stride, (size_t)stride);
  return b;
}

/* A dense cache's metadata (when given) must describe its tensor. */
static int dense_geometry(golden_case *c, const st_tensor *t) {
  static const char *const keys[2] = {"num_blocks", "block_stride"};
  for (int d = 0; d < 2; d++) {
    int64_t v;
    if (!st_meta(c->st, keys[d])) continue;
    if (gc_meta_i64(c, keys[d], &v)) return -1;
    if (v != t->shape[d]) {
      char dims[64];
      return gc_fail(c, "metadata %s = %" PRId64 " disagrees with the cache: '%s' is U8%s",
                     keys[d], v, t->name, gc_dims_string(dims, sizeof dims, 2, t->shape));
    }
  }
  return 0;
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
  if (dense_geometry(c, t)) return NULL;
  return copy_of(c, t, written);
}

int gc_check_extents(golden_case *c) {
  const size_t size = st_file_size(c->st);
  for (size_t i = 0; i < st_num_tensors(c->st); i++) {
    const st_tensor *t = st_tensor_at(c->st, i);
    for (int d = 0; t->numel == 0 && d < t->ndim; d++) {
      if ((uint64_t)t->shape[d] > size) {
        char dims[256];
        return gc_fail(c, "tensor '%s' %s: extent %" PRId64 " is larger than the file (%zu bytes)",
                       t->name, gc_dims_string(dims, sizeof dims, t->ndim, t->shape), t->shape[d], size);
      }
    }
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* status                                                                      */
/* ------------------------------------------------------------------------ */
int gc_status(golden_case *c, const char *call, dsv4kv_status st) {
  if (st == DSV4KV_OK) return 0;
  const char *why = dsv4kv_last_error();
  if (!why || !*why) why = "(no message)";
  const char *name = dsv4kv_status_string(st);
  int name_len = (int)strcspn(name, ":"); /* "DSV4KV_WARN_SKIPPED" of "...: text" */
  if (c->dev_msg[0]) why = c->dev_msg; /* --device cuda: a staging failure, or the report's warning */
  if (dsv4kv_is_error(st)) return gc_fail(c, "%s returned %s: %s", call, name, why);
  /* A warning: the call completed every valid entry (e.g. slots below -1,
   * which the reference skips too), so the expected bytes decide.  It is
   * kept in c->msg, where golden_verify_file hands it to the PASS line (or
   * gc_fail moves it behind a later failure). */
  char warning[GC_MSG_LEN];
  snprintf(warning, sizeof warning, "%.*s: %s", name_len, name, why);
  if (c->failed) { /* only after an earlier failure of this case */
    size_t used = strlen(c->msg);
    snprintf(c->msg + used, sizeof c->msg - used, "; %s returned %s", call, warning);
  } else if (!strstr(c->msg, warning)) { /* a second call may warn alike */
    size_t used = strlen(c->msg);
    snprintf(c->msg + used, sizeof c->msg - used, "%s%s", used ? "; " : "", warning);
  }
  return 0;
}
