/*
 * safetensors.h - a small, strict reader of safetensors files.
 *
 * File layout (https://github.com/huggingface/safetensors, "format"):
 *
 *   [8 bytes]  n, little-endian uint64: length of the JSON header
 *   [n bytes]  JSON object: "__metadata__" (string -> string, optional) and
 *              one entry per tensor: {"dtype": "U8", "shape": [..],
 *              "data_offsets": [begin, end]}, offsets relative to the data
 *              area that follows the header
 *   [rest]     the data area
 *
 * The reader validates everything it hands out, so that a caller can index a
 * tensor's bytes with its shape without further checks: dtype known, shape
 * entries non-negative with a product that fits in int64, offsets inside the
 * data area, end - begin == numel * itemsize, no two tensors overlapping, no
 * duplicate names (of tensors or metadata keys); only regular files are
 * opened (a FIFO is refused, not waited on).  A malformed file gives a
 * non-zero result and a message naming the file and the problem; it never
 * crashes the reader.
 *
 * The file is mapped read-only; tensor data pointers point into the mapping
 * and stay valid until st_close().
 */
#ifndef DSV4KV_TOOLS_SAFETENSORS_H
#define DSV4KV_TOOLS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The dtypes dsv4kv's golden files use.  Anything else is rejected. */
typedef enum {
  ST_BOOL = 0,
  ST_U8 = 1,
  ST_I32 = 2,
  ST_I64 = 3,
  ST_F32 = 4,
  ST_BF16 = 5
} st_dtype;

/* Rank limit: the golden files use at most 3; 8 leaves room and keeps the
 * shape inline. */
#define ST_MAX_NDIM 8

typedef struct {
  const char *name;             /* owned by the st_file                        */
  st_dtype dtype;
  int ndim;                     /* 0 = scalar (one element)                    */
  int64_t shape[ST_MAX_NDIM];
  int64_t numel;                /* product of shape (1 for a scalar)           */
  size_t nbytes;                /* numel * itemsize                            */
  const uint8_t *data;          /* into the mapping; may be unaligned in a
                                   hand-made file (golden files are aligned)   */
} st_tensor;

typedef struct st_file st_file;

/* Opens and validates `path`.  On success returns 0 and sets *out (release it
 * with st_close).  On failure returns -1, leaves *out NULL and writes a
 * message "PATH: problem" into err (when err_len > 0). */
int st_open(const char *path, st_file **out, char *err, size_t err_len);

/* The same over `size` bytes at `data` (a fuzzer's input), named `name` in
 * messages; the bytes must outlive the st_file and are not copied. */
int st_open_memory(const char *name, const void *data, size_t size, st_file **out, char *err,
                   size_t err_len);

/* Releases everything st_open allocated; NULL is fine. */
void st_close(st_file *f);

/* The path given to st_open. */
const char *st_path(const st_file *f);

/* Bytes of the whole file (header included). */
size_t st_file_size(const st_file *f);

/* Tensors in header order. */
size_t st_num_tensors(const st_file *f);
const st_tensor *st_tensor_at(const st_file *f, size_t i);

/* The tensor called `name`, or NULL. */
const st_tensor *st_find(const st_file *f, const char *name);

/* The __metadata__ value of `key`, or NULL when absent. */
const char *st_meta(const st_file *f, const char *key);

/* Metadata entries in header order (for listing); NULL past the end. */
size_t st_num_meta(const st_file *f);
const char *st_meta_key_at(const st_file *f, size_t i);

/* Bytes per element (1, 1, 4, 8, 4, 2). */
size_t st_dtype_size(st_dtype dtype);

/* The safetensors spelling ("BOOL", "U8", "I32", "I64", "F32", "BF16"). */
const char *st_dtype_name(st_dtype dtype);

/* The DLPack dtype: bool is {DSV4KV_DL_BOOL = 6, 8, 1} as dsv4kv takes it
 * (Debian's dlpack 0.6 has no kDLBool). */
DLDataType st_dl_dtype(st_dtype dtype);

/* Fills *view as a compact row-major CPU tensor of t's dtype and shape over
 * `data` (t->data for a read-only view, or a caller's copy).  The view's shape
 * points into t, so it lives as long as the st_file; strides are NULL. */
void st_dltensor(const st_tensor *t, void *data, DLTensor *view);

#ifdef __cplusplus
}
#endif
#endif /* DSV4KV_TOOLS_SAFETENSORS_H */
