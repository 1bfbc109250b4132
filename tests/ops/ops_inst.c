/* Building a case's instance: tensors in guarded buffers, snapshots, compact
 * copies for the reference, and the case list. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

void ops_add(ops_list *l, opcall_op op, ops_gen_fn gen, ops_ref_fn ref, int p0, int p1, int p2, int p3,
             const char *fmt, ...) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
    if (!l->v) abort();
  }
  ops_case *c = &l->v[l->n++];
  memset(c, 0, sizeof *c);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->name, sizeof c->name, fmt, ap);
  va_end(ap);
  c->op = op;
  c->gen = gen;
  c->ref = ref;
  c->p[0] = p0, c->p[1] = p1, c->p[2] = p2, c->p[3] = p3;
  c->seed = fnv1a(c->name);
}

static void *alloc64(size_t n) {
  void *p = aligned_alloc(64, (n + 63) / 64 * 64);
  if (!p) abort();
  return p;
}

ops_tensor *ops_new(ops_inst *in, const char *name, DLDataType dt, int ndim, const int64_t *shape,
                    const int64_t *strides, int out) {
  if (in->nx == OPS_MAX_TENSORS || ndim > 4) return NULL;
  ops_tensor *x = &in->x[in->nx++];
  memset(x, 0, sizeof *x);
  x->name = name;
  x->out = out;
  x->esz = (dt.bits * dt.lanes + 7) / 8;
  int64_t extent = 1, compact = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    x->shape[d] = shape[d];
    x->st[d] = strides ? strides[d] : compact;
    compact *= shape[d];
    extent += (shape[d] - 1) * x->st[d];
  }
  for (int d = 0; d < ndim; d++)
    if (shape[d] == 0) extent = 0, x->empty = 1;
  x->n = (size_t)in->lead + (size_t)extent * (size_t)x->esz + OPS_GUARD;
  x->host = alloc64(x->n);
  x->init = alloc64(x->n);
  memset(x->host, OPS_POISON, x->n);
  x->t.data = x->empty ? NULL : x->host;
  x->t.device.device_type = kDLCPU;
  x->t.ndim = ndim;
  x->t.dtype = dt;
  x->t.shape = x->shape;
  x->t.strides = strides ? x->st : NULL;
  x->t.byte_offset = (uint64_t)in->lead;
  return x;
}

ops_tensor *ops_new2(ops_inst *in, const char *name, DLDataType dt, int64_t rows, int64_t cols, int64_t pad,
                     int out) {
  int64_t shape[2] = {rows, cols}, st[2] = {cols + pad, 1};
  return ops_new(in, name, dt, 2, shape, pad > 0 ? st : NULL, out);
}

void ops_seal(ops_inst *in) {
  for (int i = 0; i < in->nx; i++) {
    ops_tensor *x = &in->x[i];
    memcpy(x->init, x->host, x->n);
    if (x->out) {
      x->want = alloc64(x->n);
      memcpy(x->want, x->host, x->n);
    }
  }
}

void ops_inst_free(ops_inst *in) {
  for (int i = 0; i < in->nx; i++) {
    free(in->x[i].host);
    free(in->x[i].init);
    free(in->x[i].want);
  }
  free(in->want_alloc[0]);
  free(in->want_alloc[1]);
  opcall_release(&in->call);
  free(in);
}

/* ---- compact copies for the reference ------------------------------------- */
static int64_t rows_of(const ops_tensor *x) { return x->t.ndim >= 1 ? x->shape[0] : 1; }
static int64_t cols_of(const ops_tensor *x) { return x->t.ndim >= 2 ? x->shape[1] : 1; }

static void *pack(const ops_tensor *x, int esz) {
  int64_t R = rows_of(x), C = cols_of(x);
  uint8_t *v = malloc((size_t)(R * C + 1) * (size_t)esz);
  if (!v) abort();
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) memcpy(v + (i * C + j) * esz, ops_at(x, x->init, i, j, 0), (size_t)esz);
  return v;
}
int32_t *ops_pack_i32(const ops_tensor *x) { return pack(x, 4); }
int64_t *ops_pack_i64(const ops_tensor *x) { return pack(x, 8); }
uint8_t *ops_pack_u8(const ops_tensor *x) { return pack(x, 1); }

void ops_unpack_i32(ops_tensor *x, const int32_t *v) {
  int64_t R = rows_of(x), C = cols_of(x);
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) memcpy(ops_at(x, x->want, i, j, 0), v + i * C + j, 4);
}

float *ops_pack_f32(const ops_tensor *x) {
  int64_t R = rows_of(x), C = cols_of(x);
  float *v = malloc((size_t)(R * C + 1) * sizeof *v);
  if (!v) abort();
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) {
      const void *p = ops_at(x, x->init, i, j, 0);
      if (x->esz == 4) {
        memcpy(&v[i * C + j], p, 4);
      } else {
        uint16_t b;
        memcpy(&b, p, 2);
        v[i * C + j] = bf16_val(b);
      }
    }
  return v;
}

ref_cache ops_ref_cache(const ops_inst *in, const ops_tensor *x, uint8_t *copy) {
  ref_cache c;
  c.data = copy + x->t.byte_offset;
  c.pages = x->shape[0];
  c.page_stride = x->st[0]; /* uint8: elements are bytes */
  c.bs = in->desc.block_size;
  return c;
}
