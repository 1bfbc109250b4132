/*
 * ops.h - the op case registry (in the habit of ggml's test-backend-ops).
 *
 * A case is an op, a name, a seed and a generator.  The generator builds one
 * call (ops_inst): every tensor in its own buffer with guard bytes before and
 * after it, outputs pre-filled (poison, or old cache bytes), and the opcall
 * that names them.  The op's reference (tests/support/ref*.c, which never
 * calls the library) then says what every output buffer must hold after the
 * call, byte for byte and guards included, and what the call must count.
 * ops_main.c runs each case on every CPU path and backend and compares.
 *
 * Adding a case: a line in one of the ops_register_* functions (cases_*.c).
 * Adding a backend or CPU path: see ops_main.c (CPU paths are found through
 * dsv4kv_cpu_path_count; a device plugs in through ops_device, device.h).
 */
#ifndef DSV4KV_TESTS_OPS_H
#define DSV4KV_TESTS_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "opcall.h"
#include "support/support.h"

#define OPS_MAX_TENSORS 16
#define OPS_POISON 0xCD /* what outputs hold before a call: no correct output is made of it */
#define OPS_GUARD 64    /* bytes of poison after every tensor (and before it, when lead) */

/* One tensor and its buffer.  Element (i, j, k) of a copy is at
 * copy + lead + (i*st[0] + j*st[1] + k*st[2]) * esz. */
typedef struct {
  DLTensor t;          /* data = host (or a device copy), byte_offset = lead */
  int64_t shape[4], st[4];
  const char *name;
  int esz, out;        /* element bytes; out: the op may write this buffer */
  int empty;           /* no element: the CPU calls get data NULL, so a read of it faults */
  size_t n;            /* bytes of the buffer (guards included) */
  uint8_t *host;       /* what the call gets on the CPU */
  uint8_t *init;       /* the bytes before every call */
  uint8_t *want;       /* outputs: what the reference says they hold after it */
  void *dev;           /* device copy during a device run */
} ops_tensor;

typedef struct ops_inst {
  opcall call;
  ops_tensor x[OPS_MAX_TENSORS];
  int nx;
  int64_t lead;              /* byte_offset of every tensor: 0 or OPS_GUARD */
  dsv4kv_cache_desc desc;
  dsv4kv_flashinfer_args fi;
  int check_nonfinite;
  int device_ok;             /* 0: the case cannot run on a device (CPU-only API) */
  /* the reference's answer */
  int64_t want_skipped, want_nonfinite;
  int32_t *want_alloc[2];    /* combine _alloc: compact combined [T, C] and lens [T] */
  int64_t alloc_shape[2][2];
} ops_inst;

struct ops_case;
typedef void (*ops_gen_fn)(ops_inst *in, rng_t *r, const struct ops_case *c);
typedef void (*ops_ref_fn)(ops_inst *in);

typedef struct ops_case {
  char name[80];
  opcall_op op;
  uint64_t seed;
  ops_gen_fn gen;
  ops_ref_fn ref;
  int p[4];                  /* the generator's parameters */
} ops_case;

typedef struct {
  ops_case *v;
  int n, cap;
} ops_list;

/* Appends a case; its seed is a hash of the name (stable across edits of others). */
void ops_add(ops_list *l, opcall_op op, ops_gen_fn gen, ops_ref_fn ref, int p0, int p1, int p2, int p3,
             const char *fmt, ...) __attribute__((format(printf, 9, 10)));
void ops_register_kv(ops_list *l);      /* cases_kv.c: insert, gather */
void ops_register_index(ops_list *l);   /* cases_index.c: SPEC §5 */
void ops_register_indexer(ops_list *l); /* cases_indexer.c: SPEC §6 */

/* ---- building an instance (ops_inst.c) ------------------------------------ */
/* A new tensor filled with OPS_POISON.  strides (elements) NULL = compact,
 * passed as NULL strides to the library.  Returns NULL when full. */
ops_tensor *ops_new(ops_inst *in, const char *name, DLDataType dt, int ndim, const int64_t *shape,
                    const int64_t *strides, int out);
/* Row-major 2-D with `pad` elements after each row (strides given when pad > 0). */
ops_tensor *ops_new2(ops_inst *in, const char *name, DLDataType dt, int64_t rows, int64_t cols, int64_t pad,
                     int out);
static inline void *ops_at(const ops_tensor *x, uint8_t *copy, int64_t i, int64_t j, int64_t k) {
  return copy + (size_t)x->t.byte_offset + (size_t)((i * x->st[0] + j * x->st[1] + k * x->st[2]) * x->esz);
}
#define OPS_I32(x, i, j) (*(int32_t *)ops_at((x), (x)->host, (i), (j), 0))
#define OPS_I64(x, i) (*(int64_t *)ops_at((x), (x)->host, (i), 0, 0))
/* After the generator: snapshots host into init (and want for outputs). */
void ops_seal(ops_inst *in);
void ops_inst_free(ops_inst *in);

/* Compact copies of an int tensor's init bytes (1-D or 2-D), and back into
 * want; the caller frees.  u8 covers bool tensors. */
int32_t *ops_pack_i32(const ops_tensor *x);
int64_t *ops_pack_i64(const ops_tensor *x);
uint8_t *ops_pack_u8(const ops_tensor *x);
void ops_unpack_i32(ops_tensor *x, const int32_t *v);
/* fp32 values of an fp32 or bf16 tensor (1-D or 2-D), compact. */
float *ops_pack_f32(const ops_tensor *x);

/* A cache of the instance's description over one copy of tensor x. */
ref_cache ops_ref_cache(const ops_inst *in, const ops_tensor *x, uint8_t *copy);

/* ---- value generators (gen.c) -------------------------------------------- */
enum { ROW_NORMAL, ROW_SPECIAL, ROW_SUBNORMAL, ROW_TIES, ROW_POW2, ROW_ZERO, ROW_HUGE, ROW_KINDS };
extern const char *const ops_row_kind_names[ROW_KINDS];
/* A 512-dim K row for record `rec` (blocks of its quantizer): kind ROW_*. */
void gen_k_row(rng_t *r, uint16_t *row, int n, dsv4kv_record rec, int fnuz, int kind);
/* A cache's bytes: random, or every code (values sweep 0..255 at every
 * in-record position, scale bytes sweep 0..255 over the records). */
void gen_cache_codes(uint8_t *page0, int64_t pages, int64_t page_stride, int32_t bs, dsv4kv_record rec);
/* Slot values: distinct in [0, nslots) with ~1/10 -1 (mode 0); with
 * out-of-range values mixed in (1); many rows per slot (2); runs of 1-40
 * adjacent slots, some over earlier ones, ~1/40 -1 (3). */
void gen_slots(rng_t *r, int64_t *s, int64_t T, int64_t nslots, int mode);
int64_t ops_rr(rng_t *r, int64_t lo, int64_t hi); /* uniform in [lo, hi] */

#endif /* DSV4KV_TESTS_OPS_H */
