/* safetensors.c - strict safetensors reader (see safetensors.h). */
#define _POSIX_C_SOURCE 200809L

#include "safetensors.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "dsv4kv.h" /* DSV4KV_DL_BOOL */

/* The safetensors format caps the header at 100 MB; anything larger is a
 * corrupt length field, not a real header. */
#define ST_MAX_HEADER_BYTES (100u * 1000u * 1000u)

/* JSON numbers arrive as doubles: integers above 2^53 are no longer exact, so
 * larger shape entries / offsets cannot be trusted and are rejected. */
#define ST_MAX_JSON_INT 9007199254740992.0 /* 2^53 */

struct st_file {
  char *path;
  const uint8_t *map;   /* whole file, read-only                          */
  size_t map_size;
  int mapped;           /* map is ours to munmap (not st_open_memory's)    */
  cJSON *header;        /* parsed header; tensor names / metadata point in */
  st_tensor *tensors;
  size_t num_tensors;
  const cJSON **meta;   /* string items of __metadata__                   */
  size_t num_meta;
};

/* ------------------------------------------------------------------------ */
/* dtypes                                                                      */
/* ------------------------------------------------------------------------ */
static const struct {
  const char *name;
  size_t size;
  DLDataType dl;
} dtype_table[] = {
    [ST_BOOL] = {"BOOL", 1, {DSV4KV_DL_BOOL, 8, 1}},
    [ST_U8] = {"U8", 1, {kDLUInt, 8, 1}},
    [ST_I32] = {"I32", 4, {kDLInt, 32, 1}},
    [ST_I64] = {"I64", 8, {kDLInt, 64, 1}},
    [ST_F32] = {"F32", 4, {kDLFloat, 32, 1}},
    [ST_BF16] = {"BF16", 2, {kDLBfloat, 16, 1}},
};
#define NUM_DTYPES (sizeof dtype_table / sizeof dtype_table[0])

size_t st_dtype_size(st_dtype dtype) {
  return (unsigned)dtype < NUM_DTYPES ? dtype_table[dtype].size : 0;
}

const char *st_dtype_name(st_dtype dtype) {
  return (unsigned)dtype < NUM_DTYPES ? dtype_table[dtype].name : "?";
}

DLDataType st_dl_dtype(st_dtype dtype) {
  DLDataType none = {0, 0, 0};
  return (unsigned)dtype < NUM_DTYPES ? dtype_table[dtype].dl : none;
}

static int dtype_from_name(const char *name, st_dtype *out) {
  for (size_t i = 0; i < NUM_DTYPES; i++) {
    if (!strcmp(name, dtype_table[i].name)) {
      *out = (st_dtype)i;
      return 0;
    }
  }
  return -1;
}

/* ------------------------------------------------------------------------ */
/* errors                                                                      */
/* ------------------------------------------------------------------------ */
static void set_err(char *err, size_t err_len, const char *path, const char *fmt, ...) {
  if (!err || err_len == 0) return;
  int n = snprintf(err, err_len, "%s: ", path);
  if (n < 0 || (size_t)n >= err_len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + n, err_len - (size_t)n, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* header validation                                                           */
/* ------------------------------------------------------------------------ */

/* A JSON number that is a non-negative integer small enough to be exact. */
static int json_uint(const cJSON *item, int64_t *out) {
  if (!cJSON_IsNumber(item)) return -1;
  double v = item->valuedouble;
  if (!isfinite(v) || v < 0 || v > ST_MAX_JSON_INT || v != floor(v)) return -1;
  *out = (int64_t)v;
  return 0;
}

typedef struct {
  const char *path;
  char *err;
  size_t err_len;
  size_t data_size; /* bytes after the header */
} parse_ctx;

static int parse_shape(const parse_ctx *c, const char *name, const cJSON *shape, st_tensor *t) {
  if (!cJSON_IsArray(shape)) {
    set_err(c->err, c->err_len, c->path, "tensor '%s': \"shape\" is missing or not an array", name);
    return -1;
  }
  int ndim = cJSON_GetArraySize(shape);
  if (ndim > ST_MAX_NDIM) {
    set_err(c->err, c->err_len, c->path, "tensor '%s': rank %d exceeds the reader's limit of %d",
            name, ndim, ST_MAX_NDIM);
    return -1;
  }
  t->ndim = ndim;
  t->numel = 1;
  int d = 0;
  const cJSON *dim;
  cJSON_ArrayForEach(dim, shape) {
    int64_t extent;
    if (json_uint(dim, &extent)) {
      set_err(c->err, c->err_len, c->path,
              "tensor '%s': shape[%d] is not a non-negative integer below 2^53", name, d);
      return -1;
    }
    t->shape[d] = extent;
    if (__builtin_mul_overflow(t->numel, extent, &t->numel)) {
      set_err(c->err, c->err_len, c->path,
              "tensor '%s': the product of the shape overflows 64 bits", name);
      return -1;
    }
    d++;
  }
  int64_t nbytes;
  if (__builtin_mul_overflow(t->numel, (int64_t)st_dtype_size(t->dtype), &nbytes) ||
      (uint64_t)nbytes > SIZE_MAX) {
    set_err(c->err, c->err_len, c->path, "tensor '%s': %lld elements of %s overflow a byte count",
            name, (long long)t->numel, st_dtype_name(t->dtype));
    return -1;
  }
  t->nbytes = (size_t)nbytes;
  return 0;
}

static int parse_offsets(const parse_ctx *c, const char *name, const cJSON *offs, int64_t *begin,
                         int64_t *end) {
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
      json_uint(cJSON_GetArrayItem(offs, 0), begin) || json_uint(cJSON_GetArrayItem(offs, 1), end)) {
    set_err(c->err, c->err_len, c->path,
            "tensor '%s': \"data_offsets\" must be two non-negative integers", name);
    return -1;
  }
  if (*begin > *end) {
    set_err(c->err, c->err_len, c->path, "tensor '%s': data_offsets begin %lld > end %lld", name,
            (long long)*begin, (long long)*end);
    return -1;
  }
  if ((uint64_t)*end > c->data_size) {
    set_err(c->err, c->err_len, c->path,
            "tensor '%s': data_offsets end %lld is past the data area (%zu bytes)", name,
            (long long)*end, c->data_size);
    return -1;
  }
  return 0;
}

static int parse_tensor(const parse_ctx *c, const cJSON *item, const uint8_t *data, st_tensor *t) {
  const char *name = item->string;
  if (!name || !*name) {
    set_err(c->err, c->err_len, c->path, "a tensor has an empty name");
    return -1;
  }
  t->name = name;
  if (!cJSON_IsObject(item)) {
    set_err(c->err, c->err_len, c->path, "tensor '%s': entry is not a JSON object", name);
    return -1;
  }
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  if (!cJSON_IsString(dtype)) {
    set_err(c->err, c->err_len, c->path, "tensor '%s': \"dtype\" is missing or not a string", name);
    return -1;
  }
  if (dtype_from_name(dtype->valuestring, &t->dtype)) {
    set_err(c->err, c->err_len, c->path,
            "tensor '%s': unsupported dtype \"%.32s\" (known: BOOL U8 I32 I64 F32 BF16)", name,
            dtype->valuestring);
    return -1;
  }
  if (parse_shape(c, name, cJSON_GetObjectItemCaseSensitive(item, "shape"), t)) return -1;
  int64_t begin, end;
  if (parse_offsets(c, name, cJSON_GetObjectItemCaseSensitive(item, "data_offsets"), &begin, &end))
    return -1;
  if ((uint64_t)(end - begin) != (uint64_t)t->nbytes) {
    set_err(c->err, c->err_len, c->path,
            "tensor '%s': data_offsets span %lld bytes but %s shape needs %zu (%lld elements)",
            name, (long long)(end - begin), st_dtype_name(t->dtype), t->nbytes,
            (long long)t->numel);
    return -1;
  }
  t->data = data + begin;
  return 0;
}

static int parse_metadata(const parse_ctx *c, const cJSON *meta, st_file *f) {
  if (!cJSON_IsObject(meta)) {
    set_err(c->err, c->err_len, c->path, "\"__metadata__\" is not a JSON object");
    return -1;
  }
  size_t n = (size_t)cJSON_GetArraySize(meta);
  f->meta = calloc(n ? n : 1, sizeof *f->meta);
  if (!f->meta) {
    set_err(c->err, c->err_len, c->path, "out of memory reading the metadata");
    return -1;
  }
  const cJSON *kv;
  cJSON_ArrayForEach(kv, meta) {
    if (!cJSON_IsString(kv)) {
      set_err(c->err, c->err_len, c->path, "metadata '%s' is not a string", kv->string);
      return -1;
    }
    f->meta[f->num_meta++] = kv;
  }
  return 0;
}

/* Orders tensors by where their bytes start, for the overlap check. */
static int cmp_by_offset(const void *a, const void *b) {
  const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
  return x->data < y->data ? -1 : x->data > y->data;
}

static int cmp_by_name(const void *a, const void *b) {
  const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
  return strcmp(x->name, y->name);
}

static int cmp_meta_key(const void *a, const void *b) {
  return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* A key given twice (or spelled apart only after a \u0000) would let the
 * first value hide the second. */
static int check_meta_keys(const parse_ctx *c, const st_file *f) {
  if (f->num_meta < 2) return 0;
  const cJSON **order = malloc(f->num_meta * sizeof *order);
  if (!order) {
    set_err(c->err, c->err_len, c->path, "out of memory checking the metadata");
    return -1;
  }
  memcpy(order, f->meta, f->num_meta * sizeof *order);
  qsort(order, f->num_meta, sizeof *order, cmp_meta_key);
  int rc = 0;
  for (size_t i = 1; i < f->num_meta && !rc; i++) {
    if (!strcmp(order[i - 1]->string, order[i]->string)) {
      set_err(c->err, c->err_len, c->path, "metadata '%.64s' appears twice", order[i]->string);
      rc = -1;
    }
  }
  free(order);
  return rc;
}

/* No two tensors may share bytes, nor a name: either would make the file
 * ambiguous (which tensor is the input, which the expected output?). */
static int check_layout(const parse_ctx *c, st_file *f) {
  if (check_meta_keys(c, f)) return -1;
  if (f->num_tensors < 2) return 0;
  const st_tensor **order = malloc(f->num_tensors * sizeof *order);
  if (!order) {
    set_err(c->err, c->err_len, c->path, "out of memory checking the tensor layout");
    return -1;
  }
  for (size_t i = 0; i < f->num_tensors; i++) order[i] = &f->tensors[i];
  int rc = 0;
  qsort(order, f->num_tensors, sizeof *order, cmp_by_name);
  for (size_t i = 1; i < f->num_tensors && !rc; i++) {
    if (!strcmp(order[i - 1]->name, order[i]->name)) {
      set_err(c->err, c->err_len, c->path, "tensor '%s' appears twice in the header", order[i]->name);
      rc = -1;
    }
  }
  qsort(order, f->num_tensors, sizeof *order, cmp_by_offset);
  const st_tensor *prev = NULL; /* the non-empty tensor reaching furthest so far */
  for (size_t i = 0; i < f->num_tensors && !rc; i++) {
    const st_tensor *t = order[i];
    if (t->nbytes == 0) continue;
    if (prev && t->data < prev->data + prev->nbytes) {
      set_err(c->err, c->err_len, c->path, "tensors '%s' and '%s' overlap in the data area",
              prev->name, t->name);
      rc = -1;
    }
    if (!prev || t->data + t->nbytes > prev->data + prev->nbytes) prev = t;
  }
  free(order);
  return rc;
}

static int parse_header(st_file *f, size_t header_len, char *err, size_t err_len) {
  const char *text = (const char *)f->map + 8;
  const char *end_of_json = NULL;
  f->header = cJSON_ParseWithLengthOpts(text, header_len, &end_of_json, 0);
  if (!f->header) {
    const char *at = cJSON_GetErrorPtr();
    long off = (at && at >= text && at <= text + header_len) ? (long)(at - text) : -1;
    set_err(err, err_len, f->path, "header is not valid JSON (error near byte %ld of %zu)", off,
            header_len);
    return -1;
  }
  /* safetensors pads the header with spaces; anything else after the JSON
   * value means the length field or the header is corrupt. */
  for (const char *p = end_of_json; p && p < text + header_len; p++) {
    if (!isspace((unsigned char)*p) && *p != '\0') {
      set_err(err, err_len, f->path, "header has trailing bytes after the JSON object (byte %ld)",
              (long)(p - text));
      return -1;
    }
  }
  if (!cJSON_IsObject(f->header)) {
    set_err(err, err_len, f->path, "header is JSON but not an object");
    return -1;
  }
  parse_ctx c = {f->path, err, err_len, f->map_size - 8 - header_len};
  const uint8_t *data = f->map + 8 + header_len;
  size_t n = (size_t)cJSON_GetArraySize(f->header);
  f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
  if (!f->tensors) {
    set_err(err, err_len, f->path, "out of memory reading the header");
    return -1;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, f->header) {
    if (item->string && !strcmp(item->string, "__metadata__")) {
      if (f->meta) {
        set_err(err, err_len, f->path, "\"__metadata__\" appears twice");
        return -1;
      }
      if (parse_metadata(&c, item, f)) return -1;
      continue;
    }
    if (parse_tensor(&c, item, data, &f->tensors[f->num_tensors])) return -1;
    f->num_tensors++;
  }
  return check_layout(&c, f);
}

/* ------------------------------------------------------------------------ */
/* open / close                                                                */
/* ------------------------------------------------------------------------ */
static const char *file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

/* O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever; the
 * type is checked on the open descriptor, so it cannot change in between. */
static int map_file(st_file *f, char *err, size_t err_len) {
  int fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    set_err(err, err_len, f->path, "cannot open: %s", strerror(errno));
    return -1;
  }
  struct stat sb;
  int rc = -1;
  if (fstat(fd, &sb)) {
    set_err(err, err_len, f->path, "cannot stat: %s", strerror(errno));
  } else if (!S_ISREG(sb.st_mode)) {
    set_err(err, err_len, f->path, "not a regular file (%s)", file_type(sb.st_mode));
  } else if (sb.st_size < 8) {
    set_err(err, err_len, f->path,
            "file is %lld bytes, too short for the 8-byte header length", (long long)sb.st_size);
  } else if ((uint64_t)sb.st_size > SIZE_MAX) {
    set_err(err, err_len, f->path, "file is too large to map");
  } else {
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      set_err(err, err_len, f->path, "cannot map: %s", strerror(errno));
    } else {
      f->map = p;
      f->map_size = (size_t)sb.st_size;
      f->mapped = 1;
      rc = 0;
    }
  }
  close(fd);
  return rc;
}

static uint64_t read_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* The header and tensors of f->map (set by the caller). */
static int parse_file(st_file *f, char *err, size_t err_len) {
  if (f->map_size < 8) {
    set_err(err, err_len, f->path, "file is %zu bytes, too short for the 8-byte header length",
            f->map_size);
    return -1;
  }
  uint64_t header_len = read_le64(f->map);
  if (header_len == 0) {
    set_err(err, err_len, f->path, "header length is 0");
    return -1;
  }
  if (header_len > f->map_size - 8) {
    set_err(err, err_len, f->path, "not a safetensors file: header length %llu runs past the end of the file (%zu bytes)",
            (unsigned long long)header_len, f->map_size);
    return -1;
  }
  if (header_len > ST_MAX_HEADER_BYTES) {
    set_err(err, err_len, f->path, "not a safetensors file: header length %llu exceeds the format's 100 MB limit",
            (unsigned long long)header_len);
    return -1;
  }
  return parse_header(f, (size_t)header_len, err, err_len);
}

static st_file *new_file(const char *path, char *err, size_t err_len) {
  if (err && err_len) err[0] = '\0';
  st_file *f = calloc(1, sizeof *f);
  if (!f || !(f->path = strdup(path))) {
    free(f);
    set_err(err, err_len, path, "out of memory");
    return NULL;
  }
  return f;
}

int st_open(const char *path, st_file **out, char *err, size_t err_len) {
  *out = NULL;
  st_file *f = new_file(path, err, err_len);
  if (!f) return -1;
  if (map_file(f, err, err_len) || parse_file(f, err, err_len)) {
    st_close(f);
    return -1;
  }
  *out = f;
  return 0;
}

int st_open_memory(const char *name, const void *data, size_t size, st_file **out, char *err,
                   size_t err_len) {
  *out = NULL;
  st_file *f = new_file(name, err, err_len);
  if (!f) return -1;
  f->map = data;
  f->map_size = size;
  if (parse_file(f, err, err_len)) {
    st_close(f);
    return -1;
  }
  *out = f;
  return 0;
}

void st_close(st_file *f) {
  if (!f) return;
  if (f->mapped) munmap((void *)f->map, f->map_size);
  cJSON_Delete(f->header);
  free(f->tensors);
  free(f->meta);
  free(f->path);
  free(f);
}

/* ------------------------------------------------------------------------ */
/* accessors                                                                   */
/* ------------------------------------------------------------------------ */
const char *st_path(const st_file *f) { return f->path; }

size_t st_file_size(const st_file *f) { return f->map_size; }

size_t st_num_tensors(const st_file *f) { return f->num_tensors; }

const st_tensor *st_tensor_at(const st_file *f, size_t i) {
  return i < f->num_tensors ? &f->tensors[i] : NULL;
}

const st_tensor *st_find(const st_file *f, const char *name) {
  for (size_t i = 0; i < f->num_tensors; i++)
    if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
  return NULL;
}

const char *st_meta(const st_file *f, const char *key) {
  for (size_t i = 0; i < f->num_meta; i++)
    if (!strcmp(f->meta[i]->string, key)) return f->meta[i]->valuestring;
  return NULL;
}

size_t st_num_meta(const st_file *f) { return f->num_meta; }

const char *st_meta_key_at(const st_file *f, size_t i) {
  return i < f->num_meta ? f->meta[i]->string : NULL;
}

void st_dltensor(const st_tensor *t, void *data, DLTensor *view) {
  memset(view, 0, sizeof *view);
  view->data = data;
  view->device.device_type = kDLCPU;
  view->device.device_id = 0;
  view->ndim = t->ndim;
  view->dtype = st_dl_dtype(t->dtype);
  view->shape = (int64_t *)t->shape; /* DLTensor's shape is non-const; never written */
  view->strides = NULL;
  view->byte_offset = 0;
}
