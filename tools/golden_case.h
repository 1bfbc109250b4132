/*
 * golden_case.h - the harness behind `dsv4kv verify`: one golden file, its
 * tensors copied into buffers the library may use, and the checks that follow
 * a call (expected outputs equal, inputs untouched, sparse caches written only
 * where listed).
 *
 * Life of a case (golden_ops.c drives it per op):
 *
 *   golden_case c;  gc_init(&c, st, device);
 *   const DLTensor *k = gc_input(&c, "k", GC_REQUIRED);      // aligned copy
 *   gc_buf *cache = gc_cache(&c, "k_cache", 1);              // dense or sparse
 *   ... if (c.failed) stop ...
 *   st = dsv4kv_...(...);   gc_status(&c, "dsv4kv_...", st);
 *   gc_compare_cache(&c, cache);  gc_compare(&c, out, "expected.out");
 *   gc_check_inputs(&c);          gc_free(&c);
 *
 * Every helper records the first failure in c.msg (later ones are appended
 * briefly) and sets c.failed; callers test c.failed instead of threading
 * error codes through every line.
 */
#ifndef DSV4KV_TOOLS_GOLDEN_CASE_H
#define DSV4KV_TOOLS_GOLDEN_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "dsv4kv.h"
#include "safetensors.h"

#define GC_MSG_LEN 2048

/* What every buffer handed to the library is filled with when the golden
 * file has no input for it (outputs the op must write in full): a byte no
 * correct output is made of, so unwritten elements show up in the diff. */
#define GC_POISON_BYTE 0xCD

typedef struct gc_buf {
  DLTensor t;                  /* the view the library gets                    */
  int64_t shape[ST_MAX_NDIM];
  const char *name;            /* tensor name (file's, or the output's)        */
  st_dtype dtype;
  void *data;
  void *dev;                   /* --device cuda: its device copy during a call */
  size_t nbytes;
  const st_tensor *src;        /* file tensor this is a copy of, or NULL       */
  int written;                 /* the op may write it (skip the input check)   */
  /* Sparse caches only (k_cache_layout = sparse). */
  int sparse;
  size_t map_size;
  const st_tensor *block_ids;  /* int64 [n]                                    */
  const st_tensor *blocks;     /* uint8 [n, block_stride], input bytes          */
  int64_t *sorted_ids;         /* block_ids ascending (owned)                  */
  int64_t block_stride;
  struct gc_buf *next;
} gc_buf;

typedef struct {
  const st_file *st;
  const char *path;
  DLDevice device;
  int failed;
  char msg[GC_MSG_LEN];
  int64_t skipped;
  dsv4kv_options opt;
  double call_seconds;         /* time spent inside library calls            */
  const st_tensor *checked[16];/* expected.* tensors compared so far          */
  int num_checked;
  gc_buf *bufs;                /* every buffer made, for gc_free               */
  /* dry_run: every check and size of a run, nothing allocated and no call
   * made (inputs are views of the file); golden_check_file sets it. */
  int dry_run;
  size_t alloc_bytes;          /* what the case's buffers take so far          */
  size_t alloc_cap;            /* what this file may make it take              */
  /* --device cuda (golden_device.c): the call's report in device memory, and
   * the message of a warning it carried. */
  void *dev_report;
  char dev_msg[768];
} golden_case;

/* What one case may allocate: its copies of the file's tensors, its new
 * outputs, a sparse cache's resident pages.  The golden files need at most
 * about twice their size; a few-KB file cannot ask for gigabytes, and none
 * may ask for more than GC_ALLOC_MAX_BYTES: a file with holes (`truncate`,
 * `cp --sparse`) costs its writer nothing whatever its length, so its
 * length alone cannot be the bound. */
#define GC_ALLOC_BASE_BYTES ((size_t)64 << 20)
#define GC_ALLOC_PER_FILE_BYTE 4
#define GC_ALLOC_MAX_BYTES ((size_t)4 << 30) /* 700 x the largest golden file */
/* A sparse cache is mapped lazily (MAP_NORESERVE); this caps its address
 * space.  The golden ones span at most 2.2 GB. */
#define GC_MAX_SPARSE_BYTES ((size_t)16 << 30)

enum { GC_OPTIONAL = 0, GC_REQUIRED = 1 };

void gc_init(golden_case *c, const st_file *st, DLDeviceType device);

/* Around each library call of a case (golden_device.c).  On a CPU device they
 * do nothing.  On CUDA, begin copies every buffer of the case to device
 * memory and points its tensor there (options get a device report and the
 * tools' stream); end waits for the stream, copies every buffer back, points
 * the tensors home again and returns the status a synchronous call would
 * have returned (the report's warning, its message in c->dev_msg). */
int gc_device_begin(golden_case *c);
dsv4kv_status gc_device_end(golden_case *c, dsv4kv_status st);
void gc_free(golden_case *c);

/* Validates `st` as golden_verify_file would run it (op known, metadata
 * against the tensors, every buffer's size under the caps), allocating
 * nothing of the sizes it checks and calling no op.  0 when the file may be
 * run; -1 with the reason in msg. */
int golden_check_file(const st_file *st, DLDeviceType device, char *msg, size_t msg_len);

/* No zero-element tensor has an extent larger than the file: a shape such
 * as [2^40, 0] costs no bytes but would size whatever is derived from it. */
int gc_check_extents(golden_case *c);

/* Records a failure (printf-style); the first one is kept in full, later ones
 * are appended after "; ".  Returns -1 so callers can `return gc_fail(...)`. */
int gc_fail(golden_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Metadata scalars.  Missing or malformed values fail the case.  Booleans
 * are "1"/"0"; gc_meta_bool's default applies when the key is absent (pass -1
 * to require it).  `none_value` is what the string "none" stands for. */
int gc_meta_i64(golden_case *c, const char *key, int64_t *out);
int gc_meta_i32(golden_case *c, const char *key, int32_t *out);
int gc_meta_i32_or_none(golden_case *c, const char *key, int32_t none_value, int32_t *out);
int gc_meta_bool(golden_case *c, const char *key, int default_value, int *out);
int gc_meta_f64(golden_case *c, const char *key, double *out);

/* A read-only input: an aligned private copy of the file's tensor (so the
 * library's alignment rules hold and a stray write cannot reach the mapping).
 * Absent: NULL, and a failure when `required`.  `ndim` >= 0 also checks rank. */
const DLTensor *gc_input(golden_case *c, const char *name, int required, int ndim);

/* An output the file pre-fills (gather out, combined indices): a writable copy. */
gc_buf *gc_output_copy(golden_case *c, const char *name);

/* An output absent from the file: a fresh buffer filled with GC_POISON_BYTE.
 * Its dtype and shape must be those of expected.<name>, checked before
 * anything is allocated. */
gc_buf *gc_output_new(golden_case *c, const char *name, st_dtype dtype, int ndim,
                      const int64_t *shape);

/* The cache `name` (k_cache), dense ([num_blocks, block_stride] copy) or
 * sparse (k_cache_layout = sparse: an anonymous num_blocks x block_stride
 * mapping with the listed blocks copied in).  `written`: the op writes it. */
gc_buf *gc_cache(golden_case *c, const char *name, int written);

/* Turns a non-OK status into a failure naming the call and the library's
 * message.  Returns 0 for DSV4KV_OK. */
int gc_status(golden_case *c, const char *call, dsv4kv_status st);

/* out vs the file's `expected_name`: same dtype and shape, same bytes. */
int gc_compare(golden_case *c, const gc_buf *out, const char *expected_name);

/* The same for a tensor the library allocated (must be compact, on the CPU). */
int gc_compare_dl(golden_case *c, const char *label, const DLTensor *got,
                  const char *expected_name);

/* A cache after the call: dense -> gc_compare with expected.<name> (or, for a
 * read-only cache, left to gc_check_inputs); sparse -> every listed block vs
 * expected.<name>.blocks (or <name>.blocks when read-only), and no byte
 * outside the listed blocks written. */
int gc_compare_cache(golden_case *c, const gc_buf *cache);

/* Compares raw compact buffers of one dtype and shape (for values the harness
 * derives from the file); same report as gc_compare. */
int gc_compare_bytes(golden_case *c, const char *label, st_dtype dtype, int ndim,
                     const int64_t *shape, const void *got, const void *want);

/* Every read-only input copy still equals the file's bytes. */
int gc_check_inputs(golden_case *c);

/* Every expected.* tensor of the file was compared by the op's runner (a
 * harness that silently ignores an expected output would pass too easily). */
int gc_check_all_expected_used(golden_case *c);

/* Shared by golden_case.c and golden_compare.c. */
const char *gc_dims_string(char *buf, size_t len, int ndim, const int64_t *shape); /* "[2, 3]" */
int64_t gc_block_id_at(const gc_buf *b, int64_t i); /* a sparse cache's i-th listed id */
size_t gc_page_bytes(void);

#endif /* DSV4KV_TOOLS_GOLDEN_CASE_H */
