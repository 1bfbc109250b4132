/*
 * Memory-honest tensors (Ten) and caches for the harness: the pool of one
 * iteration's tensors, their random shapes, strides and mutations (fz_mkt),
 * the fills, and the cache descriptions with the bytes an op may write.
 */
#include <stdarg.h>

#include "fuzz.h"

/* ------------------------------------------------------------------------ */
/* Tensors                                                                    */
/* ------------------------------------------------------------------------ */
Ten fz_g_pool[POOL];
int fz_g_npool;
int fz_g_mutated;       /* some argument was made invalid on purpose */
int fz_g_expect_err;    /* ... and that mutation must give an error  */
int fz_g_shape_mut;     /* fz_mkt changed a shape or rank on its own */
int fz_g_expect_soft;   /* the expectation is about a shape the op chose */
char fz_g_expect_why[160];

void fz_expect_err(const char *fmt, ...) {
  fz_g_mutated = 1;
  if (fz_g_expect_err) return;
  fz_g_expect_err = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fz_g_expect_why, sizeof fz_g_expect_why, fmt, ap);
  va_end(ap);
}

void fz_pool_reset(void) {
  for (int i = 0; i < fz_g_npool; i++) {
    free(fz_g_pool[i].buf);
    free(fz_g_pool[i].snap);
    free(fz_g_pool[i].mask);
    free(fz_g_pool[i].allowed);
  }
  memset(fz_g_pool, 0, sizeof fz_g_pool);
  fz_g_npool = 0;
  fz_g_mutated = fz_g_expect_err = fz_g_shape_mut = fz_g_expect_soft = 0;
  fz_g_expect_why[0] = 0;
}

/* Iterate over every element: calls f(T, byte offset from data, linear index). */
typedef void (*elem_fn)(Ten *T, int64_t off, int64_t lin, void *ctx);
static void for_each_elem(Ten *T, elem_fn f, void *ctx) {
  if (T->numel <= 0) return;
  int64_t idx[8] = {0};
  for (int64_t lin = 0; lin < T->numel; lin++) {
    int64_t off = 0;
    for (int d = 0; d < T->ndim; d++) off += idx[d] * T->es[d];
    f(T, off * T->elem, lin, ctx);
    for (int d = T->ndim - 1; d >= 0; d--) {
      if (++idx[d] < T->shape[d]) break;
      idx[d] = 0;
    }
  }
}
static void mark_fn(Ten *T, int64_t off, int64_t lin, void *ctx) {
  uint8_t *m = T->mask + (T->data - T->buf) + off;
  for (int b = 0; b < T->elem; b++) {
    if (m[b]) T->aliased = 1;
    m[b] = 1;
  }
}

static const int64_t HUGE_STRIDES[] = {INT64_MAX, INT64_MAX / 2, (int64_t)1 << 62, (int64_t)1 << 40,
                                       INT32_MAX, 12345};

/* fz_mkt's dtype: `dt`, or (mutating, 2%) another one, refused unless it is
 * equivalent or a float <-> bfloat swap. */
static DLDataType mkt_dtype(Src *g, const char *name, DLDataType dt, int flags, int mut) {
  DLDataType t_dt = dt;
  if (mut && pct(g, 2)) {
    static const DLDataType bad[] = {{kDLInt, 32, 1}, {kDLInt, 64, 1}, {kDLUInt, 8, 1}, {kDLFloat, 32, 1},
                                     {kDLBfloat, 16, 1}, {kDLFloat, 16, 1}, {kDLInt, 32, 2}, {kDLInt, 32, 0},
                                     {kDLInt, 8, 1}, {DSV4KV_DL_BOOL, 8, 1}, {kDLUInt, 32, 1}, {99, 32, 1}};
    DLDataType b = bad[ru(g, sizeof bad / sizeof bad[0])];
    int equiv = same_dt(b, dt) || (same_dt(dt, DT_BOOL) && same_dt(b, DT_U8)) ||
                ((flags & F_BOOLISH) && (same_dt(b, DT_U8) || same_dt(b, DT_BOOL)));
    /* fp32 <-> bf16 is allowed for cos_sin_cache / rms_norm_weight: the caller passes F_RANKFLEX|... no;
     * we simply do not claim an error for float <-> bfloat. */
    int floatswap = (dt.code == kDLFloat || dt.code == kDLBfloat) && (b.code == kDLFloat || b.code == kDLBfloat) &&
                    b.lanes == 1 && (b.bits == 32 || b.bits == 16) && b.bits == (b.code == kDLFloat ? 32 : 16);
    if (!equiv) {
      t_dt = b;
      fz_g_mutated = 1;
      if (!floatswap) fz_expect_err("%s dtype (%d,%d,%d)", name, b.code, b.bits, b.lanes);
    }
  }
  return t_dt;
}

/* fz_mkt's rank (mutating, 2%: another one, its new dims drawn into `shape`)
 * and (2%) a bad size for one dim of `shape`. */
static int mkt_rank(Src *g, const char *name, int ndim, int64_t *shape, int flags, int mut) {
  int t_ndim = ndim;
  if (mut && pct(g, 2)) {
    t_ndim = (int)ru(g, 6);
    if (t_ndim != ndim) {
      for (int d = ndim; d < t_ndim; d++) shape[d] = rr(g, 0, 3);
      fz_g_mutated = 1;
      fz_g_shape_mut = 1;
      if (!(flags & F_RANKFLEX)) fz_expect_err("%s rank %d", name, t_ndim);
    }
  }
  if (mut && t_ndim > 0 && pct(g, 2)) {
    int d = (int)ru(g, t_ndim);
    static const int64_t bad_dims[] = {-1, INT64_MIN, -5, 0, 1, 2, 7, 513, 511};
    int64_t v = bad_dims[ru(g, sizeof bad_dims / sizeof bad_dims[0])];
    if (fz_g_big && v > 7) v = 3; /* keep big iterations within memory */
    if (v != shape[d]) {
      shape[d] = v;
      fz_g_mutated = 1;
      fz_g_shape_mut = 1;
      if (v < 0) fz_expect_err("%s.shape[%d] = %lld", name, d, (long long)v);
    }
  }
  return t_ndim;
}

/* fz_mkt's layout in T->es: compact, padded, transposed, a zero, huge, non-unit
 * last or negative stride; returns whether the DLTensor carries strides. */
static int mkt_strides(Src *g, Ten *T, const char *name, const int64_t *shape, int t_ndim, int64_t numel,
                       int flags, int mut) {
  int give_strides = 0;
  int mode = (flags & F_COMPACT) ? 0 : (int)ru(g, 12);
  if (mode >= 4) give_strides = 1;
  if (mode == 5 || mode == 6) { /* padded rows */
    int64_t st = 1;
    for (int d = t_ndim - 1; d >= 0; d--) {
      T->es[d] = st;
      st = st * (shape[d] > 0 ? shape[d] : 1) + (d > 0 ? rr(g, 0, 3) : 0);
    }
  } else if (mode == 7 && t_ndim >= 2) { /* transposed (column-major) */
    int64_t st = 1;
    for (int d = 0; d < t_ndim; d++) {
      T->es[d] = st;
      st *= shape[d] > 0 ? shape[d] : 1;
    }
    /* an empty tensor has no layout to violate: any strides are accepted */
    if ((flags & F_LASTC) && numel > 0 && shape[t_ndim - 1] > 1 && T->es[t_ndim - 1] != 1)
      fz_expect_err("%s transposed", name);
  } else if (mode == 8 && t_ndim >= 1) { /* zero stride on one dim */
    int d = (int)ru(g, t_ndim);
    if (!T->out || fz_g_alias || shape[d] <= 1) {
      T->es[d] = 0;
      if ((flags & F_LASTC) && numel > 0 && d == t_ndim - 1 && shape[d] > 1) fz_expect_err("%s last stride 0", name);
    }
  } else if (mode == 9 && t_ndim >= 1) { /* huge strides on size-1 dims */
    for (int d = 0; d < t_ndim; d++)
      if (shape[d] == 1) T->es[d] = HUGE_STRIDES[ru(g, 6)];
  } else if (mode == 10 && t_ndim >= 1 && mut) { /* non-contiguous last dim */
    int d = t_ndim - 1;
    int64_t st = rr(g, 2, 3);
    for (int e = d; e >= 0; e--) {
      T->es[e] = st;
      st *= shape[e] > 0 ? shape[e] : 1;
    }
    if ((flags & F_LASTC) && numel > 0 && shape[d] > 1) fz_expect_err("%s last stride %lld", name, (long long)T->es[d]);
    fz_g_mutated = 1;
  } else if (mode == 11 && t_ndim >= 1 && mut && pct(g, 30)) { /* negative stride */
    int d = (int)ru(g, t_ndim);
    T->es[d] = -T->es[d] - (T->es[d] == 0);
    fz_g_mutated = 1;
    if (shape[d] > 1) fz_expect_err("%s negative stride", name);
  }
  return give_strides;
}

/* fz_mkt's buffer: exactly the extent the strides reach (the tensor made empty
 * where that is too big), a random prefix, random bytes, the data /
 * byte_offset split; returns whether the data is misaligned (FUZZ_MISALIGN). */
static int mkt_buffer(Src *g, Ten *T, const char *name, int64_t *shape, int t_ndim, int64_t *numel_io, int flags,
                      int mut) {
  int64_t numel = *numel_io;
  int64_t lo = 0, hi = 0; /* element offsets */
  if (numel > 0)
    for (int d = 0; d < t_ndim; d++) {
      if (shape[d] <= 1) continue;
      if (T->es[d] >= 0) hi += (shape[d] - 1) * T->es[d];
      else lo += (shape[d] - 1) * T->es[d];
    }
  int64_t span = numel > 0 ? (hi - lo + 1) * T->elem : 0;
  if (span > (64 << 20)) {
    /* too big to allocate honestly: make it empty instead (and say so) */
    if (t_ndim == 0) { fprintf(stderr, "harness: span too big (%s)\n", name); abort(); }
    T->shape[0] = shape[0] = 0;
    numel = T->numel = 0;
    span = 0;
    lo = 0;
    fz_g_mutated = 1;
    fz_g_shape_mut = 1;
  }
  size_t prefix = 0;
  if (!(flags & F_COMPACT) && pct(g, 25)) prefix = (size_t)T->elem * rr(g, 1, 16);
  int misalign = fz_g_misalign && mut && pct(g, 20) && T->elem > 1;
  if (misalign) prefix += (size_t)rr(g, 1, T->elem - 1);
  prefix += (size_t)(-lo * T->elem);
  T->nbytes = prefix + (size_t)span;
  T->buf = malloc(T->nbytes ? T->nbytes : 1);
  for (size_t i = 0; i < T->nbytes; i++) T->buf[i] = (uint8_t)ru(g, 256);
  T->data = T->buf + prefix;
  /* data pointer vs byte_offset split */
  size_t bo = prefix ? (size_t)ru(g, prefix + 1) : 0;
  T->t.data = T->buf + (prefix - bo);
  T->t.byte_offset = bo;
  if (numel == 0) {
    /* an empty tensor: a pointer that must never be dereferenced */
    if (pct(g, 50)) T->t.data = NULL, T->t.byte_offset = 0;
    else T->t.data = (void *)(uintptr_t)0x40, T->t.byte_offset = 0;
  }
  *numel_io = numel;
  return misalign;
}

/* fz_mkt's last mutations (data or shape NULL, another device, misaligned
 * data), the element masks (an output's elements must not overlap), a NULL
 * argument, and the snapshot the checks compare with. */
static void mkt_finish(Src *g, Ten *T, const char *name, int t_ndim, int64_t numel, int negshape, int misalign,
                       int flags, int mut) {
  if (numel > 0 && mut && pct(g, 1)) {
    T->t.data = NULL;
    T->t.byte_offset = 0;
    fz_g_mutated = 1;
    fz_expect_err("%s.data NULL", name);
  }
  if (t_ndim > 0 && mut && pct(g, 1)) {
    T->t.shape = NULL;
    fz_g_mutated = 1;
    fz_expect_err("%s.shape NULL", name);
  }
  if (mut && pct(g, 2)) {
    static const DLDevice devs[] = {{kDLCUDA, 0}, {kDLCPU, 1}, {kDLCUDAHost, 0}, {kDLROCM, 0}, {kDLCUDAManaged, 0},
                                    {kDLCPU, -1}, {(DLDeviceType)0, 0}, {(DLDeviceType)999, 0}};
    T->t.device = devs[ru(g, 8)];
    fz_g_mutated = 1;
    fz_expect_err("%s device (%d,%d)", name, T->t.device.device_type, T->t.device.device_id);
  }
  if (misalign && numel > 0) { fz_g_mutated = 1; fz_expect_err("%s misaligned (spec §7: alignment is validated)", name); }
  /* element masks */
  T->mask = calloc(T->nbytes ? T->nbytes : 1, 1);
  T->allowed = calloc(T->nbytes ? T->nbytes : 1, 1);
  if (!negshape) for_each_elem(T, mark_fn, NULL);
  memcpy(T->allowed, T->mask, T->nbytes);
  if (T->out && T->aliased) fz_expect_err("%s has overlapping elements (an output)", name);
  if (!(flags & (F_NONULL | F_OPTIONAL)) && mut && pct(g, 1)) {
    T->isnull = 1;
    fz_g_mutated = 1;
  }
  T->snap = malloc(T->nbytes ? T->nbytes : 1);
  memcpy(T->snap, T->buf, T->nbytes);
}

/* Build a tensor of `dt`, rank `ndim`, shape `shape`.  May mutate it (when
 * flags lack F_NOMUT) and records whether the mutation must be rejected. */
Ten *fz_mkt(Src *g, const char *name, DLDataType dt, int ndim, const int64_t *shape_in, int flags) {
  if (fz_g_npool >= POOL) { fprintf(stderr, "pool exhausted\n"); abort(); }
  Ten *T = &fz_g_pool[fz_g_npool++];
  memset(T, 0, sizeof *T);
  T->name = name;
  T->out = (flags & F_OUT) != 0;
  T->optional = (flags & F_OPTIONAL) != 0;
  int mut = !(flags & F_NOMUT);
  int64_t shape[8];
  for (int d = 0; d < 8; d++) shape[d] = d < ndim ? shape_in[d] : 1;

  /* --- mutations of dtype / rank / shape / device ---------------------- */
  DLDataType t_dt = mkt_dtype(g, name, dt, flags, mut);
  int t_ndim = mkt_rank(g, name, ndim, shape, flags, mut);
  T->ndim = t_ndim;
  T->elem = dt.bits / 8 ? dt.bits / 8 : 1;
  if (t_dt.bits / 8 && t_dt.lanes) T->elem = t_dt.bits / 8 * t_dt.lanes; /* honest for the dtype given */
  if (T->elem > 16 || T->elem < 1) T->elem = 1;

  /* --- strides ---------------------------------------------------------- */
  int negshape = 0;
  int64_t numel = 1;
  for (int d = 0; d < t_ndim; d++) {
    T->shape[d] = shape[d];
    if (shape[d] < 0) negshape = 1;
    else numel *= shape[d];
  }
  if (negshape) numel = 0;
  T->numel = numel;
  int64_t s = 1;
  for (int d = t_ndim - 1; d >= 0; d--) {
    T->es[d] = s;
    s *= shape[d] > 0 ? shape[d] : 1;
  }
  int give_strides = mkt_strides(g, T, name, shape, t_ndim, numel, flags, mut);

  /* --- extent ------------------------------------------------------------ */
  int misalign = mkt_buffer(g, T, name, shape, t_ndim, &numel, flags, mut);
  T->t.dtype = t_dt;
  T->t.ndim = t_ndim;
  T->t.device = (DLDevice){kDLCPU, 0};
  for (int d = 0; d < t_ndim; d++) T->strides[d] = T->es[d];
  int compact = 1;
  {
    int64_t st = 1;
    for (int d = t_ndim - 1; d >= 0; d--) {
      if (shape[d] != 1 && T->es[d] != st) compact = 0;
      st *= shape[d] > 0 ? shape[d] : 1;
    }
  }
  T->t.shape = T->shape;
  T->t.strides = (give_strides || !compact) ? T->strides : NULL;
  mkt_finish(g, T, name, t_ndim, numel, negshape, misalign, flags, mut);
  return T;
}
/* Fill every element with gen(). */
struct fillctx { Src *g; gen_fn gen; void *ctx; };
static void fill_fn(Ten *T, int64_t off, int64_t lin, void *c) {
  struct fillctx *f = c;
  int64_t v = f->gen(f->g, f->ctx, lin);
  uint8_t *p = T->data + off;
  if (T->elem == 8) memcpy(p, &v, 8);
  else if (T->elem == 4) { int32_t w = (int32_t)v; memcpy(p, &w, 4); }
  else if (T->elem == 2) { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); }
  else *p = (uint8_t)v;
}
void fz_fill(Ten *T, Src *g, gen_fn gen, void *ctx) {
  if (T->shape[0] < 0) return;
  for (int d = 0; d < T->ndim; d++)
    if (T->shape[d] < 0) return;
  struct fillctx f = {g, gen, ctx};
  for_each_elem(T, fill_fn, &f);
  resnap(T);
}


/* ------------------------------------------------------------------------ */
/* Caches                                                                     */
/* ------------------------------------------------------------------------ */

void fz_mk_cache(Src *g, CacheCfg *c, int indexer, int is_out) {
  memset(c, 0, sizeof *c);
  int r = (int)ru(g, 100);
  if (indexer) c->d.record = r < 96 ? (r & 1 ? DSV4KV_RECORD_INDEXER_FP8 : DSV4KV_RECORD_INDEXER_MXFP4)
                                    : (dsv4kv_record)ru(g, 3);
  else c->d.record = r < 96 ? (dsv4kv_record)ru(g, 3) : (dsv4kv_record)(3 + ru(g, 2));
  if (pct(g, 2)) {
    static const int badrec[] = {5, -1, 1000, INT32_MIN, 31, 32, 33};
    c->d.record = (dsv4kv_record)badrec[ru(g, 7)];
  }
  int accepted = indexer ? (c->d.record == 3 || c->d.record == 4) : ((unsigned)c->d.record < 3u);
  if (!accepted) fz_expect_err("cache.record = %d for this op", (int)c->d.record);
  int f = (int)ru(g, 100);
  c->d.fp8 = f < 80 ? DSV4KV_FP8_OCP : f < 98 ? DSV4KV_FP8_FNUZ : (dsv4kv_fp8_flavor)(f == 98 ? 2 : -1);
  if ((unsigned)c->d.fp8 > 1u) fz_expect_err("cache.fp8 = %d", (int)c->d.fp8);
  if (c->d.fp8 == DSV4KV_FP8_FNUZ && (c->d.record == 2 || c->d.record == 4)) fz_expect_err("FNUZ with FP4 record");
  static const int32_t bss[] = {1, 2, 3, 4, 5, 8, 16, 32, 64};
  c->d.block_size = bss[ru(g, 9)];
  uint32_t flags = 0;
  if (c->d.record == DSV4KV_RECORD_INDEXER_FP8) {
    flags = (uint32_t)ru(g, 4);
    if ((flags & DSV4KV_CACHE_TILED) && pct(g, 80)) c->d.block_size = 16 * (int32_t)rr(g, 1, 4);
  }
  if (pct(g, 2)) {
    static const uint32_t badf[] = {4, 0x80000000u, 0xFFFFFFFFu, 1, 2, 3};
    flags = badf[ru(g, 6)];
  }
  c->d.flags = flags;
  if (flags & ~3u) fz_expect_err("cache.flags = 0x%x", flags);
  if (flags && c->d.record != DSV4KV_RECORD_INDEXER_FP8) fz_expect_err("flags on a non-FP8 record");
  if ((flags & DSV4KV_CACHE_TILED) && c->d.block_size % 16) fz_expect_err("TILED with bs %d", c->d.block_size);
  int32_t shape_bs = c->d.block_size;
  if (pct(g, 2)) {
    static const int32_t badbs[] = {0, -1, INT32_MIN, INT32_MAX, 1 << 20};
    c->d.block_size = badbs[ru(g, 5)];
    fz_expect_err("cache.block_size = %d", c->d.block_size);
    shape_bs = 2;
  }
  int32_t rec = dsv4kv_record_bytes(c->d.record);
  c->rec = rec ? rec : 584;
  int64_t pages = pct(g, 8) ? 0 : BIG(rr(g, 1, 4), 1, 8);
  int64_t page_bytes = (int64_t)shape_bs * c->rec;
  Ten *T;
  int flags_t = is_out ? F_OUT | F_RANKFLEX | F_NONULL : F_RANKFLEX | F_NONULL;
  if (pct(g, 60)) {
    int64_t pad = pct(g, 50) ? 0 : rr(g, 1, 40);
    if (pct(g, 2)) { pad = -1; expect_soft("k_cache page bytes short"); }
    int64_t shape[2] = {pages, page_bytes + pad};
    T = fz_mkt(g, "k_cache", DT_U8, 2, shape, flags_t | F_LASTC);
  } else {
    int64_t shape[3] = {pages, shape_bs, c->rec};
    T = fz_mkt(g, "k_cache", DT_U8, 3, shape, flags_t | F_LASTC);
  }
  c->t = T;
  c->pages = T->shape[0] > 0 ? T->shape[0] : 0;
  if (T->t.ndim >= 1) c->page_stride = T->shape[0] > 1 ? T->es[0] : page_bytes;
  /* a 3-D cache with strides[1] != rec (when shape[1] > 1) must be refused, unless it has no page */
  if (T->t.ndim == 3 && T->shape[0] != 0 && T->shape[1] > 1 && T->es[1] != c->rec && T->shape[2] == c->rec)
    fz_expect_err("k_cache strides[1] = %lld", (long long)T->es[1]);
  if (T->t.ndim >= 1 && T->shape[0] > 1 && T->es[0] < page_bytes && T->es[0] >= 0)
    fz_expect_err("k_cache page stride %lld < %lld", (long long)T->es[0], (long long)page_bytes);
  int p = (int)ru(g, 100);
  if (p < 80) c->d.page_stride = 0;
  else if (p < 90) c->d.page_stride = c->page_stride;
  else if (p < 95) {
    c->d.page_stride = c->page_stride + rr(g, 1, 3);
    if (c->pages > 1) fz_expect_err("cache.page_stride mismatch");
    else fz_g_mutated = 1;
  } else {
    c->d.page_stride = -rr(g, 1, 1000);
    fz_expect_err("cache.page_stride negative");
  }
  fz_fill(T, g, fz_gen_bytes, NULL);
  snprintf(fz_g_scalars + strlen(fz_g_scalars), sizeof fz_g_scalars - strlen(fz_g_scalars),
           "cache={record %d, fp8 %d, bs %d, page_stride %lld, flags 0x%x} ", (int)c->d.record, (int)c->d.fp8,
           c->d.block_size, (long long)c->d.page_stride, c->d.flags);
}
const dsv4kv_cache_desc *fz_cache_desc(Src *g, CacheCfg *c) {
  if (pct(g, 1)) { fz_expect_err("cache NULL"); return NULL; }
  return &c->d;
}

/* byte range [off, off+n) of the cache (relative to data) may be written */
void fz_allow(Ten *T, int64_t off, int64_t n) {
  int64_t base = T->data - T->buf;
  for (int64_t i = 0; i < n; i++) {
    int64_t b = base + off + i;
    if (b < 0 || (size_t)b >= T->nbytes) {
      fprintf(stderr, "harness: allow() out of range\n");
      abort();
    }
    T->allowed[b] = 1;
  }
}
