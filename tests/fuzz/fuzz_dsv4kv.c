/*
 * fuzz_dsv4kv.c - robustness harness for every dsv4kv entry point.
 *
 * Two front ends share one driver:
 *   - a seeded random loop (default main): `fuzz_dsv4kv [iters] [seconds] [seed]`
 *     env FUZZ_SLOW=1 also draws huge lengths (slow by design),
 *     env FUZZ_MISALIGN=1 also draws misaligned byte_offsets,
 *     env FUZZ_ALIAS=1 also draws outputs whose strides alias elements,
 *     env FUZZ_AVOID_OFFSET=1 keeps gather offsets away from INT64_MAX,
 *     env FUZZ_AVOID_BIGALLOC=1 skips _alloc calls with a huge window_size,
 *     env FUZZ_REPRO=<iter> runs only that iteration and dumps its arguments.
 *   Findings are printed as "ISSUE [kind] ..." (first 3 per kind, the first
 *   with an argument dump) and summed up as "FINDING kind x count".
 *   - a libFuzzer target (compile with -DFUZZ_LIBFUZZER).
 *
 * Every tensor is memory-honest: its buffer (one malloc, so ASan sees the
 * edges) has exactly the extent that shape / strides / byte_offset describe.
 * After every call the harness checks: input buffers unchanged, output bytes
 * outside the output's elements unchanged, output bytes outside what the SPEC
 * lets the op write unchanged, nothing written on an argument error, the
 * status / message / skipped / nonfinite / report contract, identical results with 1,
 * 2 and 3 threads, and (for the integer ops) the values against a small
 * reference written from SPEC §5.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "dsv4kv.h"
#include "opcall.h" /* tools/: the call wrappers every caller of the ops shares */

/* ------------------------------------------------------------------------ */
/* Randomness: a byte stream (libFuzzer) or splitmix64                       */
/* ------------------------------------------------------------------------ */
typedef struct {
  const uint8_t *p;
  size_t n, i;
  uint64_t s;
} Src;

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint64_t ru(Src *g, uint64_t n) { /* [0, n) */
  if (n <= 1) return 0;
  if (!g->p) return splitmix(&g->s) % n;
  int nb = n <= 256 ? 1 : n <= 65536 ? 2 : n <= (1ull << 32) ? 4 : 8;
  uint64_t v = 0;
  for (int b = 0; b < nb; b++) v = v << 8 | (g->i < g->n ? g->p[g->i++] : 0);
  return v % n;
}
static int pct(Src *g, int p) { return (int)ru(g, 100) < p; }
static int64_t rr(Src *g, int64_t lo, int64_t hi) { return lo + (int64_t)ru(g, (uint64_t)(hi - lo + 1)); }

static int g_slow, g_misalign, g_alias, g_verbose, g_libfuzzer, g_avoid_offset, g_avoid_bigalloc;
/* the highest status code this header defines */
static const unsigned g_max_status = DSV4KV_STATUS_LAST;
static long g_iter;
static int g_big; /* this iteration uses sizes that make the library go multi-threaded */
#define BIG(small, lo, hi) (g_big ? rr(g, lo, hi) : (small))
static const char *g_op = "";

/* ------------------------------------------------------------------------ */
/* Findings                                                                   */
/* ------------------------------------------------------------------------ */
#define MAX_KINDS 64
static struct {
  char kind[64];
  long count;
} g_kinds[MAX_KINDS];
static int g_nkinds;
static char g_ignore[1024];

static void dump_all(void);

static void issue(const char *kind, const char *fmt, ...) {
  int k;
  for (k = 0; k < g_nkinds; k++)
    if (!strcmp(g_kinds[k].kind, kind)) break;
  if (k == g_nkinds && g_nkinds < MAX_KINDS) {
    snprintf(g_kinds[k].kind, sizeof g_kinds[k].kind, "%s", kind);
    g_nkinds++;
  }
  long c = k < MAX_KINDS ? ++g_kinds[k].count : 1;
  if (c <= 3 || g_verbose) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ISSUE [%s] iter %ld op %s: ", kind, g_iter, g_op);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (c == 1 && !g_libfuzzer) dump_all();
  }
  if (g_libfuzzer && !strstr(g_ignore, kind)) abort();
}

/* ------------------------------------------------------------------------ */
/* Tensors                                                                    */
/* ------------------------------------------------------------------------ */
enum { F_OUT = 1, F_LASTC = 2, F_NOMUT = 4, F_RANKFLEX = 8, F_NONULL = 16, F_COMPACT = 32, F_OPTIONAL = 64, F_BOOLISH = 128 };

typedef struct {
  const char *name;
  DLTensor t;
  int64_t shape[8], strides[8], es[8]; /* es: effective strides (elements) */
  int ndim;                            /* rank as built */
  uint8_t *buf;                        /* malloc'd, nbytes */
  size_t nbytes;
  uint8_t *data;                       /* element (0,..,0) */
  uint8_t *snap, *mask, *allowed;
  int elem, out, aliased, isnull, optional;
  int64_t numel;
} Ten;

#define POOL 40
static Ten g_pool[POOL];
static int g_npool;
static int g_mutated;       /* some argument was made invalid on purpose */
static int g_expect_err;    /* ... and that mutation must give an error  */
static int g_shape_mut;     /* mkt changed a shape or rank on its own   */
static int g_expect_soft;   /* the expectation is about a shape the op chose */
static char g_expect_why[160];

static void expect_err(const char *fmt, ...) {
  g_mutated = 1;
  if (g_expect_err) return;
  g_expect_err = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_expect_why, sizeof g_expect_why, fmt, ap);
  va_end(ap);
}

#define expect_soft(...) (g_expect_soft = !g_expect_err || g_expect_soft, expect_err(__VA_ARGS__))
static void pool_reset(void) {
  for (int i = 0; i < g_npool; i++) {
    free(g_pool[i].buf);
    free(g_pool[i].snap);
    free(g_pool[i].mask);
    free(g_pool[i].allowed);
  }
  memset(g_pool, 0, sizeof g_pool);
  g_npool = 0;
  g_mutated = g_expect_err = g_shape_mut = g_expect_soft = 0;
  g_expect_why[0] = 0;
}

static const DLDataType DT_BF16 = {kDLBfloat, 16, 1}, DT_F32 = {kDLFloat, 32, 1},
                        DT_I32 = {kDLInt, 32, 1}, DT_I64 = {kDLInt, 64, 1},
                        DT_U8 = {kDLUInt, 8, 1}, DT_BOOL = {DSV4KV_DL_BOOL, 8, 1};

static int same_dt(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

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

/* Element address by logical index (harness-side strides, never the library's). */
static uint8_t *at(Ten *T, int64_t i0, int64_t i1, int64_t i2) {
  int64_t off = i0 * T->es[0];
  if (T->ndim > 1) off += i1 * T->es[1];
  if (T->ndim > 2) off += i2 * T->es[2];
  return T->data + off * T->elem;
}
static int64_t geti(Ten *T, int64_t i0, int64_t i1) {
  uint8_t *p = at(T, i0, i1, 0);
  switch (T->elem) {
    case 1: return *p;
    case 4: { int32_t v; memcpy(&v, p, 4); return v; }
    case 8: { int64_t v; memcpy(&v, p, 8); return v; }
    default: { uint16_t v; memcpy(&v, p, 2); return v; }
  }
}
static void seti(Ten *T, int64_t i0, int64_t i1, int64_t v) {
  uint8_t *p = at(T, i0, i1, 0);
  if (T->elem == 4) { int32_t w = (int32_t)v; memcpy(p, &w, 4); }
  else if (T->elem == 8) memcpy(p, &v, 8);
  else if (T->elem == 1) *p = (uint8_t)v;
  else { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); }
}

static const int64_t HUGE_STRIDES[] = {INT64_MAX, INT64_MAX / 2, (int64_t)1 << 62, (int64_t)1 << 40,
                                       INT32_MAX, 12345};

/* Build a tensor of `dt`, rank `ndim`, shape `shape`.  May mutate it (when
 * flags lack F_NOMUT) and records whether the mutation must be rejected. */
static Ten *mkt(Src *g, const char *name, DLDataType dt, int ndim, const int64_t *shape_in, int flags) {
  if (g_npool >= POOL) { fprintf(stderr, "pool exhausted\n"); abort(); }
  Ten *T = &g_pool[g_npool++];
  memset(T, 0, sizeof *T);
  T->name = name;
  T->out = (flags & F_OUT) != 0;
  T->optional = (flags & F_OPTIONAL) != 0;
  int mut = !(flags & F_NOMUT);
  int64_t shape[8];
  for (int d = 0; d < 8; d++) shape[d] = d < ndim ? shape_in[d] : 1;

  /* --- mutations of dtype / rank / shape / device ---------------------- */
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
      g_mutated = 1;
      if (!floatswap) expect_err("%s dtype (%d,%d,%d)", name, b.code, b.bits, b.lanes);
    }
  }
  int t_ndim = ndim;
  if (mut && pct(g, 2)) {
    t_ndim = (int)ru(g, 6);
    if (t_ndim != ndim) {
      for (int d = ndim; d < t_ndim; d++) shape[d] = rr(g, 0, 3);
      g_mutated = 1;
      g_shape_mut = 1;
      if (!(flags & F_RANKFLEX)) expect_err("%s rank %d", name, t_ndim);
    }
  }
  if (mut && t_ndim > 0 && pct(g, 2)) {
    int d = (int)ru(g, t_ndim);
    static const int64_t bad_dims[] = {-1, INT64_MIN, -5, 0, 1, 2, 7, 513, 511};
    int64_t v = bad_dims[ru(g, sizeof bad_dims / sizeof bad_dims[0])];
    if (g_big && v > 7) v = 3; /* keep big iterations within memory */
    if (v != shape[d]) {
      shape[d] = v;
      g_mutated = 1;
      g_shape_mut = 1;
      if (v < 0) expect_err("%s.shape[%d] = %lld", name, d, (long long)v);
    }
  }
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
      expect_err("%s transposed", name);
  } else if (mode == 8 && t_ndim >= 1) { /* zero stride on one dim */
    int d = (int)ru(g, t_ndim);
    if (!T->out || g_alias || shape[d] <= 1) {
      T->es[d] = 0;
      if ((flags & F_LASTC) && numel > 0 && d == t_ndim - 1 && shape[d] > 1) expect_err("%s last stride 0", name);
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
    if ((flags & F_LASTC) && numel > 0 && shape[d] > 1) expect_err("%s last stride %lld", name, (long long)T->es[d]);
    g_mutated = 1;
  } else if (mode == 11 && t_ndim >= 1 && mut && pct(g, 30)) { /* negative stride */
    int d = (int)ru(g, t_ndim);
    T->es[d] = -T->es[d] - (T->es[d] == 0);
    g_mutated = 1;
    if (shape[d] > 1) expect_err("%s negative stride", name);
  }

  /* --- extent ------------------------------------------------------------ */
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
    g_mutated = 1;
    g_shape_mut = 1;
  }
  size_t prefix = 0;
  if (!(flags & F_COMPACT) && pct(g, 25)) prefix = (size_t)T->elem * rr(g, 1, 16);
  int misalign = g_misalign && mut && pct(g, 20) && T->elem > 1;
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
  if (numel > 0 && mut && pct(g, 1)) {
    T->t.data = NULL;
    T->t.byte_offset = 0;
    g_mutated = 1;
    expect_err("%s.data NULL", name);
  }
  if (t_ndim > 0 && mut && pct(g, 1)) {
    T->t.shape = NULL;
    g_mutated = 1;
    expect_err("%s.shape NULL", name);
  }
  if (mut && pct(g, 2)) {
    static const DLDevice devs[] = {{kDLCUDA, 0}, {kDLCPU, 1}, {kDLCUDAHost, 0}, {kDLROCM, 0}, {kDLCUDAManaged, 0},
                                    {kDLCPU, -1}, {(DLDeviceType)0, 0}, {(DLDeviceType)999, 0}};
    T->t.device = devs[ru(g, 8)];
    g_mutated = 1;
    expect_err("%s device (%d,%d)", name, T->t.device.device_type, T->t.device.device_id);
  }
  if (misalign && numel > 0) { g_mutated = 1; expect_err("%s misaligned (spec §7: alignment is validated)", name); }
  /* element masks */
  T->mask = calloc(T->nbytes ? T->nbytes : 1, 1);
  T->allowed = calloc(T->nbytes ? T->nbytes : 1, 1);
  if (!negshape) for_each_elem(T, mark_fn, NULL);
  memcpy(T->allowed, T->mask, T->nbytes);
  if (T->out && T->aliased) expect_err("%s has overlapping elements (an output)", name);
  if (!(flags & (F_NONULL | F_OPTIONAL)) && mut && pct(g, 1)) {
    T->isnull = 1;
    g_mutated = 1;
  }
  T->snap = malloc(T->nbytes ? T->nbytes : 1);
  memcpy(T->snap, T->buf, T->nbytes);
  return T;
}
/* The DLTensor to pass (NULL when the mutation made it NULL). */
static const DLTensor *D(Ten *T) {
  if (!T) return NULL;
  if (T->isnull) {
    if (!T->optional) expect_err("%s NULL", T->name);
    return NULL;
  }
  return &T->t;
}
static void resnap(Ten *T) { memcpy(T->snap, T->buf, T->nbytes); }

/* Fill every element with gen(). */
typedef int64_t (*gen_fn)(Src *g, void *ctx, int64_t lin);
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
static void fill(Ten *T, Src *g, gen_fn gen, void *ctx) {
  if (T->shape[0] < 0) return;
  for (int d = 0; d < T->ndim; d++)
    if (T->shape[d] < 0) return;
  struct fillctx f = {g, gen, ctx};
  for_each_elem(T, fill_fn, &f);
  resnap(T);
}

/* Index values: mostly in [lo, hi], sometimes extremes. */
static int64_t gidx(Src *g, int64_t lo, int64_t hi) {
  static const int64_t ext[] = {-1, -2, 0, 1, INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1,
                                INT64_MIN, INT64_MAX, (int64_t)1 << 31, (int64_t)1 << 32, -((int64_t)1 << 31) - 1,
                                (int64_t)1 << 62, 0x7FFFFFFF00000000ll, 0x00000000FFFFFFFFll, 1 << 16, 1 << 24};
  int c = (int)ru(g, 100);
  if (c < 8) return ext[ru(g, sizeof ext / sizeof ext[0])];
  if (c < 12) return (int64_t)ru(g, UINT64_MAX);
  if (hi < lo) return lo;
  return rr(g, lo, hi);
}
struct range { int64_t lo, hi; int small_set; int64_t set[4]; };
static int64_t gen_range(Src *g, void *ctx, int64_t lin) {
  struct range *r = ctx;
  if (r->small_set && pct(g, 50)) return r->set[ru(g, 4)];
  return gidx(g, r->lo, r->hi);
}
static int64_t gen_bf16(Src *g, void *ctx, int64_t lin) {
  int c = (int)ru(g, 100);
  static const uint16_t sp[] = {0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0000, 0x8000, 0x0001, 0x8001,
                                0x7F7F, 0xFF7F, 0x0080, 0x3F80, 0x43E0, 0x4370, 0x3800};
  if (c < 6) return sp[ru(g, 16)];
  if (c < 40) return (int64_t)ru(g, 65536);
  /* a normal-ish number in [-8, 8] */
  float f = (float)((double)ru(g, 2000000) / 125000.0 - 8.0);
  uint32_t u;
  memcpy(&u, &f, 4);
  return u >> 16;
}
static int64_t gen_f32(Src *g, void *ctx, int64_t lin) {
  int c = (int)ru(g, 100);
  static const uint32_t sp[] = {0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0, 0x80000000, 1, 0x7F7FFFFF};
  if (c < 5) return sp[ru(g, 8)];
  if (c < 15) return (int64_t)ru(g, 1ull << 32);
  float f = (float)((double)ru(g, 2000000) / 1000000.0 - 1.0);
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static int64_t gen_bytes(Src *g, void *ctx, int64_t lin) { return (int64_t)ru(g, 256); }
static int64_t gen_bool(Src *g, void *ctx, int64_t lin) {
  int c = (int)ru(g, 10);
  return c < 4 ? 0 : c < 8 ? 1 : (int64_t)ru(g, 256);
}

/* ------------------------------------------------------------------------ */
/* Dump (for reproduction)                                                   */
/* ------------------------------------------------------------------------ */
static char g_scalars[1024];
static void dump_all(void) {
  fprintf(stderr, "  scalars: %s\n", g_scalars);
  for (int i = 0; i < g_npool; i++) {
    Ten *T = &g_pool[i];
    fprintf(stderr, "  %s%s: dtype(%d,%d,%d) ndim %d shape [", T->name, T->isnull ? " (passed NULL)" : "",
            T->t.dtype.code, T->t.dtype.bits, T->t.dtype.lanes, T->t.ndim);
    for (int d = 0; d < T->t.ndim; d++) fprintf(stderr, "%s%lld", d ? "," : "", (long long)T->shape[d]);
    fprintf(stderr, "] strides %s[", T->t.strides ? "" : "(NULL) ");
    for (int d = 0; d < T->t.ndim; d++) fprintf(stderr, "%s%lld", d ? "," : "", (long long)T->es[d]);
    fprintf(stderr, "] byte_offset %llu dev (%d,%d)%s%s", (unsigned long long)T->t.byte_offset,
            T->t.device.device_type, T->t.device.device_id, T->out ? " OUT" : "", T->aliased ? " ALIASED" : "");
    if ((T->elem == 4 || T->elem == 8 || T->elem == 1) && T->numel > 0 && T->numel <= 64 && T->t.ndim <= 2 &&
        T->t.dtype.code != kDLFloat && T->name[0] != 'k') {
      fprintf(stderr, " values {");
      int64_t n1 = T->t.ndim == 2 ? T->shape[1] : 1;
      for (int64_t i0 = 0; i0 < (T->t.ndim ? T->shape[0] : 1); i0++)
        for (int64_t i1 = 0; i1 < n1; i1++) {
          /* read the snapshot (initial) contents */
          int64_t off = (i0 * T->es[0] + (T->t.ndim == 2 ? i1 * T->es[1] : 0)) * T->elem;
          const uint8_t *p = T->snap + (T->data - T->buf) + off;
          int64_t v = 0;
          if (T->elem == 4) { int32_t w; memcpy(&w, p, 4); v = w; }
          else if (T->elem == 8) memcpy(&v, p, 8);
          else v = *p;
          fprintf(stderr, "%s%lld", (i0 || i1) ? "," : "", (long long)v);
        }
      fprintf(stderr, "}");
    }
    fprintf(stderr, "\n");
  }
}

/* ------------------------------------------------------------------------ */
/* Running one call three ways and checking the contract                    */
/* ------------------------------------------------------------------------ */
typedef dsv4kv_status (*call_fn)(void *ctx, const dsv4kv_options *opt);

typedef struct {
  dsv4kv_status st;
  int64_t skipped, nonfinite;
  int have_counts;
  char msg[512];
  uint8_t *outs[8];
} Res;

/* A host report the call must overwrite (poisoned so an unwritten one shows). */
static void report_poison(dsv4kv_report *rep) { memset(rep, 0xA5, sizeof *rep); }

/* The report contract of a call that did not fail (dsv4kv.h, dsv4kv_report):
 * on the CPU the report carries the host counters, turns into the status the
 * call returned and into the message it left in dsv4kv_last_error().
 * `skipped` / `nonf` are the host counters (NULL when not passed), `msg` the
 * call's dsv4kv_last_error(). */
static void check_report(const char *tag, dsv4kv_status st, const dsv4kv_report *rep, const int64_t *skipped,
                         const int64_t *nonf, const char *msg) {
  if (dsv4kv_is_error(st)) return;
  if (skipped && rep->skipped != *skipped)
    issue("report-count", "%s: report.skipped %lld, options.skipped %lld", tag, (long long)rep->skipped,
          (long long)*skipped);
  if (nonf && rep->nonfinite != *nonf)
    issue("report-count", "%s: report.nonfinite %lld, options.nonfinite %lld", tag, (long long)rep->nonfinite,
          (long long)*nonf);
  dsv4kv_status rst = dsv4kv_report_status(rep);
  if (rst != st)
    issue("report-status", "%s: call returned %s, dsv4kv_report_status says %s", tag, dsv4kv_status_string(st),
          dsv4kv_status_string(rst));
  char rmsg[512]; /* the size of the library's message buffer: both truncate alike */
  size_t need = dsv4kv_report_message(rep, rmsg, sizeof rmsg);
  if (strcmp(rmsg, msg))
    issue("report-message", "%s: %s: dsv4kv_report_message \"%s\", dsv4kv_last_error \"%s\"", tag,
          dsv4kv_status_string(st), rmsg, msg);
  if (need != strlen(rmsg) && need < sizeof rmsg)
    issue("report-message", "%s: dsv4kv_report_message returned %zu for \"%s\"", tag, need, rmsg);
  if (dsv4kv_report_message(rep, NULL, 0) != need)
    issue("report-message", "%s: dsv4kv_report_message(rep, NULL, 0) differs from the length it needs", tag);
}

static int names_arg(const char *msg, const char *const *names) {
  for (int i = 0; names[i]; i++)
    if (strstr(msg, names[i])) return 1;
  return 0;
}

static void check_outputs(Ten **outs, int nouts, dsv4kv_status st, const char *tag) {
  for (int o = 0; o < nouts; o++) {
    Ten *T = outs[o];
    if (!T) continue;
    size_t bad_pad = 0, bad_allowed = 0, changed = 0, first_pad = (size_t)-1, first_allowed = (size_t)-1;
    for (size_t i = 0; i < T->nbytes; i++) {
      if (T->buf[i] == T->snap[i]) continue;
      changed++;
      if (!T->mask[i]) { if (!bad_pad++) first_pad = i; }
      else if (!T->allowed[i]) { if (!bad_allowed++) first_allowed = i; }
    }
    if (bad_pad)
      issue("write-outside-tensor", "%s (%s): %zu bytes changed outside the elements of %s (first at buffer byte %zu, "
            "data at %td)", tag, dsv4kv_status_string(st), bad_pad, T->name, first_pad, T->data - T->buf);
    if (bad_allowed)
      issue("write-not-allowed-by-spec", "%s (%s): %zu bytes of %s changed that the op may not write (first at "
            "buffer byte %zu, data at %td)", tag, dsv4kv_status_string(st), bad_allowed, T->name, first_allowed,
            T->data - T->buf);
    if (changed && dsv4kv_is_error(st))
      issue("write-on-error", "%s: %s returned but %zu bytes of %s changed", tag, dsv4kv_status_string(st), changed,
            T->name);
  }
}

static void check_inputs(Ten **outs, int nouts) {
  for (int i = 0; i < g_npool; i++) {
    Ten *T = &g_pool[i];
    int is_out = 0;
    for (int o = 0; o < nouts; o++) is_out |= outs[o] == T;
    if (is_out) continue;
    if (memcmp(T->buf, T->snap, T->nbytes))
      issue("input-modified", "input %s was modified", T->name);
  }
}

static long g_stat[DSV4KV_STATUS_LAST + 1];
static long g_calls;

/* Runs call with num_threads 1, 2 and (NULL opt | 3 | 0); checks everything;
 * r1 receives the 1-thread result (outputs copied). */
static void exec3(call_fn f, void *ctx, Ten **outs, int nouts, const char *const *names, int check_nf, Res *r1) {
  Res rs[3];
  memset(rs, 0, sizeof rs);
  int aliased = 0;
  for (int o = 0; o < nouts; o++) aliased |= outs[o] && outs[o]->aliased;
  if (g_verbose) dump_all();
  for (int k = 0; k < 3; k++) {
    for (int o = 0; o < nouts; o++)
      if (outs[o]) memcpy(outs[o]->buf, outs[o]->snap, outs[o]->nbytes);
    int64_t skipped = -777, nonf = -777;
    dsv4kv_report rep;
    report_poison(&rep);
    /* a report on the 1-thread run always, on the others every other iteration */
    int with_report = k == 0 || ((g_iter >> (1 + k)) & 1);
    dsv4kv_options opt = {&skipped, &nonf, check_nf, k == 0 ? 1 : k == 1 ? 2 : ((g_iter & 15) == 3 ? 3 : 2), NULL,
                          with_report ? &rep : NULL, 0};
    const dsv4kv_options *op = &opt;
    if (k == 2 && (g_iter & 3) == 0) op = NULL;
    if (k == 2 && (g_iter & 3) == 1) opt.num_threads = 0;
    if (k == 2 && (g_iter & 3) == 2) opt.num_threads = -5;
    dsv4kv_status st = f(ctx, op);
    g_calls++;
    Res *r = &rs[k];
    r->st = st;
    snprintf(r->msg, sizeof r->msg, "%s", dsv4kv_last_error());
    r->skipped = skipped;
    r->nonfinite = nonf;
    r->have_counts = op != NULL;
    char tag[32];
    snprintf(tag, sizeof tag, "threads=%d", op ? opt.num_threads : -1);
    if ((unsigned)st > g_max_status) issue("bad-status", "%s: status %d is not a dsv4kv_status", tag, (int)st);
    if (k == 0 && (unsigned)st <= g_max_status) g_stat[st]++;
    if (st != DSV4KV_OK) {
      if (!r->msg[0]) issue("empty-message", "%s: %s with empty dsv4kv_last_error()", tag, dsv4kv_status_string(st));
      else if (!names_arg(r->msg, names))
        issue(st == DSV4KV_WARN_NONFINITE ? "message-names-no-argument(NONFINITE)" : "message-names-no-argument",
              "%s: %s: \"%s\"", tag, dsv4kv_status_string(st), r->msg);
    } else if (r->msg[0]) {
      issue("message-on-ok", "%s: OK but last_error = \"%s\"", tag, r->msg);
    }
    if (r->have_counts && !dsv4kv_is_error(st)) {
      if (st == DSV4KV_WARN_SKIPPED && !(skipped > 0)) issue("skipped-count", "%s: WARN_SKIPPED with skipped = %lld", tag, (long long)skipped);
      if (st != DSV4KV_WARN_SKIPPED && skipped != 0) issue("skipped-count", "%s: %s with skipped = %lld", tag, dsv4kv_status_string(st), (long long)skipped);
      if (st == DSV4KV_WARN_NONFINITE && !(check_nf && nonf > 0))
        issue("nonfinite-count", "%s: WARN_NONFINITE with nonfinite = %lld, check = %d", tag, (long long)nonf, check_nf);
      if (!check_nf && nonf != 0) issue("nonfinite-count", "%s: check off but nonfinite = %lld", tag, (long long)nonf);
      if (with_report) check_report(tag, st, &rep, &skipped, &nonf, r->msg);
    }
    check_outputs(outs, nouts, st, tag);
    for (int o = 0; o < nouts; o++)
      if (outs[o]) {
        r->outs[o] = malloc(outs[o]->nbytes ? outs[o]->nbytes : 1);
        memcpy(r->outs[o], outs[o]->buf, outs[o]->nbytes);
      }
  }
  if (g_expect_err && !dsv4kv_is_error(rs[0].st) && !(g_expect_soft && g_shape_mut))
    issue("bad-argument-accepted", "%s accepted (%s)", g_expect_why, dsv4kv_status_string(rs[0].st));
  /* determinism */
  for (int k = 1; k < 3; k++) {
    const char *kind = aliased ? "thread-dependence(aliased-output)" : "thread-dependence";
    int null_opt_nf = !rs[k].have_counts && rs[0].st == DSV4KV_WARN_NONFINITE && rs[k].st == DSV4KV_OK;
    int nf_only = (rs[k].st == DSV4KV_OK && rs[0].st == DSV4KV_WARN_NONFINITE) ||
                  (rs[0].st == DSV4KV_OK && rs[k].st == DSV4KV_WARN_NONFINITE);
    if (rs[k].st != rs[0].st && !null_opt_nf && nf_only)
      issue("thread-dependence(nonfinite-count)", "status differs: 1 thread %s, run %d %s", dsv4kv_status_string(rs[0].st),
            k, dsv4kv_status_string(rs[k].st));
    else if (rs[k].st != rs[0].st && !null_opt_nf)
      issue(kind, "status differs: 1 thread %s, run %d %s", dsv4kv_status_string(rs[0].st), k,
            dsv4kv_status_string(rs[k].st));
    else if (rs[k].have_counts && rs[k].skipped == rs[0].skipped && rs[k].nonfinite != rs[0].nonfinite)
      issue("thread-dependence(nonfinite-count)", "nonfinite differs: 1 thread %lld, run %d %lld", (long long)rs[0].nonfinite, k,
            (long long)rs[k].nonfinite);
    else if (rs[k].have_counts && (rs[k].skipped != rs[0].skipped || rs[k].nonfinite != rs[0].nonfinite))
      issue(kind, "counts differ: 1 thread skipped %lld nonfinite %lld; run %d: %lld %lld", (long long)rs[0].skipped,
            (long long)rs[0].nonfinite, k, (long long)rs[k].skipped, (long long)rs[k].nonfinite);
    for (int o = 0; o < nouts; o++)
      if (outs[o] && memcmp(rs[k].outs[o], rs[0].outs[o], outs[o]->nbytes))
        issue(kind, "output %s bytes differ between 1 thread and run %d", outs[o]->name, k);
  }
  check_inputs(outs, nouts);
  /* leave the 1-thread result in the outputs */
  for (int o = 0; o < nouts; o++)
    if (outs[o]) memcpy(outs[o]->buf, rs[0].outs[o], outs[o]->nbytes);
  *r1 = rs[0];
  for (int k = 0; k < 3; k++)
    for (int o = 0; o < nouts; o++) {
      if (k == 0) continue;
      free(rs[k].outs[o]);
    }
}
static void res_free(Res *r) {
  for (int o = 0; o < 8; o++) free(r->outs[o]);
}

/* ------------------------------------------------------------------------ */
/* Caches                                                                     */
/* ------------------------------------------------------------------------ */
typedef struct {
  dsv4kv_cache_desc d;
  Ten *t;
  int64_t pages, page_stride; /* as the library must see them (bytes) */
  int32_t rec;
  int valid_desc;
} CacheCfg;

static void mk_cache(Src *g, CacheCfg *c, int indexer, int is_out) {
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
  if (!accepted) expect_err("cache.record = %d for this op", (int)c->d.record);
  int f = (int)ru(g, 100);
  c->d.fp8 = f < 80 ? DSV4KV_FP8_OCP : f < 98 ? DSV4KV_FP8_FNUZ : (dsv4kv_fp8_flavor)(f == 98 ? 2 : -1);
  if ((unsigned)c->d.fp8 > 1u) expect_err("cache.fp8 = %d", (int)c->d.fp8);
  if (c->d.fp8 == DSV4KV_FP8_FNUZ && (c->d.record == 2 || c->d.record == 4)) expect_err("FNUZ with FP4 record");
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
  if (flags & ~3u) expect_err("cache.flags = 0x%x", flags);
  if (flags && c->d.record != DSV4KV_RECORD_INDEXER_FP8) expect_err("flags on a non-FP8 record");
  if ((flags & DSV4KV_CACHE_TILED) && c->d.block_size % 16) expect_err("TILED with bs %d", c->d.block_size);
  int32_t shape_bs = c->d.block_size;
  if (pct(g, 2)) {
    static const int32_t badbs[] = {0, -1, INT32_MIN, INT32_MAX, 1 << 20};
    c->d.block_size = badbs[ru(g, 5)];
    expect_err("cache.block_size = %d", c->d.block_size);
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
    T = mkt(g, "k_cache", DT_U8, 2, shape, flags_t | F_LASTC);
  } else {
    int64_t shape[3] = {pages, shape_bs, c->rec};
    T = mkt(g, "k_cache", DT_U8, 3, shape, flags_t | F_LASTC);
  }
  c->t = T;
  c->pages = T->shape[0] > 0 ? T->shape[0] : 0;
  if (T->t.ndim >= 1) c->page_stride = T->shape[0] > 1 ? T->es[0] : page_bytes;
  /* a 3-D cache with strides[1] != rec (when shape[1] > 1) must be refused, unless it has no page */
  if (T->t.ndim == 3 && T->shape[0] != 0 && T->shape[1] > 1 && T->es[1] != c->rec && T->shape[2] == c->rec)
    expect_err("k_cache strides[1] = %lld", (long long)T->es[1]);
  if (T->t.ndim >= 1 && T->shape[0] > 1 && T->es[0] < page_bytes && T->es[0] >= 0)
    expect_err("k_cache page stride %lld < %lld", (long long)T->es[0], (long long)page_bytes);
  int p = (int)ru(g, 100);
  if (p < 80) c->d.page_stride = 0;
  else if (p < 90) c->d.page_stride = c->page_stride;
  else if (p < 95) {
    c->d.page_stride = c->page_stride + rr(g, 1, 3);
    if (c->pages > 1) expect_err("cache.page_stride mismatch");
    else g_mutated = 1;
  } else {
    c->d.page_stride = -rr(g, 1, 1000);
    expect_err("cache.page_stride negative");
  }
  fill(T, g, gen_bytes, NULL);
  snprintf(g_scalars + strlen(g_scalars), sizeof g_scalars - strlen(g_scalars),
           "cache={record %d, fp8 %d, bs %d, page_stride %lld, flags 0x%x} ", (int)c->d.record, (int)c->d.fp8,
           c->d.block_size, (long long)c->d.page_stride, c->d.flags);
}
static const dsv4kv_cache_desc *cache_desc(Src *g, CacheCfg *c) {
  if (pct(g, 1)) { expect_err("cache NULL"); return NULL; }
  return &c->d;
}

/* byte range [off, off+n) of the cache (relative to data) may be written */
static void allow(Ten *T, int64_t off, int64_t n) {
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
static void allow_none(Ten *T) { memset(T->allowed, 0, T->nbytes); }

/* ------------------------------------------------------------------------ */
/* Op 1: quantize_and_insert_k_cache                                          */
/* ------------------------------------------------------------------------ */
struct ins_ctx { Ten *k, *slots; CacheCfg c; const dsv4kv_cache_desc *desc; };
static dsv4kv_status call_insert(void *p, const dsv4kv_options *o) {
  struct ins_ctx *c = p;
  opcall_insert a = {D(c->k), D(c->c.t), c->desc, D(c->slots)};
  return opcall_insert_run(&a, o);
}
static void op_insert(Src *g) {
  g_op = "quantize_and_insert_k_cache";
  struct ins_ctx c;
  mk_cache(g, &c.c, 0, 1);
  c.desc = cache_desc(g, &c.c);
  int64_t Tk = BIG(rr(g, 0, 6), 128, 400), T = pct(g, 80) ? rr(g, g_big ? 128 : 0, Tk) : BIG(rr(g, 0, 8), 0, 400);
  int64_t ks[2] = {Tk, 512};
  c.k = mkt(g, "k", DT_BF16, 2, ks, F_LASTC);
  fill(c.k, g, gen_bf16, NULL);
  int64_t ss[1] = {T};
  c.slots = mkt(g, "slot_mapping", DT_I64, 1, ss, 0);
  if (c.slots->shape[0] > c.k->shape[0] && c.k->shape[0] >= 0 && c.k->t.ndim >= 1)
    expect_soft("T %lld > T_k %lld", (long long)c.slots->shape[0], (long long)c.k->shape[0]);
  int64_t nslots = c.c.pages * (c.c.d.block_size > 0 ? c.c.d.block_size : 1);
  struct range rg = {-2, nslots + 1, 1, {-1, 0, nslots - 1, nslots}};
  fill(c.slots, g, gen_range, &rg);
  /* what the spec lets it write */
  Ten *K = c.c.t;
  allow_none(K);
  int64_t exp_skip = 0;
  if (!g_mutated) {
    int64_t bs = c.c.d.block_size;
    for (int64_t t = 0; t < T; t++) {
      int64_t s = geti(c.slots, t, 0);
      if (s == -1) continue;
      if (s < 0 || s >= nslots) { exp_skip++; continue; }
      int64_t base = (s / bs) * c.c.page_stride, p = s % bs;
      switch (c.c.d.record) {
        case DSV4KV_RECORD_V4: allow(K, base + p * 576, 576); allow(K, base + bs * 576 + p * 8, 8); break;
        case DSV4KV_RECORD_MXFP8: allow(K, base + p * 528, 528); break;
        default: allow(K, base + p * 288, 288); break;
      }
    }
  } else {
    memcpy(K->allowed, K->mask, K->nbytes);
  }
  static const char *const names[] = {"k", "slot_mapping", "k_cache", "cache", "block_size", NULL};
  Ten *outs[1] = {K};
  Res r;
  exec3(call_insert, &c, outs, 1, names, (int)ru(g, 2), &r);
  if (!g_mutated && !dsv4kv_is_error(r.st) && r.skipped != exp_skip)
    issue("skipped-value", "insert skipped %lld, spec says %lld", (long long)r.skipped, (long long)exp_skip);
  if (!g_mutated && dsv4kv_is_error(r.st))
    issue("valid-call-rejected", "insert: %s: %s", dsv4kv_status_string(r.st), r.msg);
  res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Op 2: dequantize_and_gather_k_cache                                        */
/* ------------------------------------------------------------------------ */
struct ga_ctx { Ten *out, *sl, *gl, *bt; CacheCfg c; const dsv4kv_cache_desc *desc; int64_t offset; };
static dsv4kv_status call_gather(void *p, const dsv4kv_options *o) {
  struct ga_ctx *c = p;
  opcall_gather a = {D(c->out), D(c->c.t), c->desc, D(c->sl), c->gl ? D(c->gl) : NULL, D(c->bt), c->offset};
  return opcall_gather_run(&a, o);
}
static void op_gather(Src *g) {
  g_op = "dequantize_and_gather_k_cache";
  struct ga_ctx c;
  mk_cache(g, &c.c, 0, 0);
  c.desc = cache_desc(g, &c.c);
  int64_t R = rr(g, 0, 4), Rout = R + (pct(g, 30) ? rr(g, 1, 2) : 0), maxt = BIG(rr(g, 0, 6), 64, 300), maxp = BIG(rr(g, 0, 4), 1, 40);
  int64_t Rbt = R + (pct(g, 30) ? rr(g, 1, 2) : 0);
  if (pct(g, 3) && R > 0) { Rout = R - 1; expect_soft("out rows < R"); }
  if (pct(g, 3) && R > 0) { Rbt = R - 1; expect_soft("block_table rows < R"); }
  int64_t os[3] = {Rout, maxt, 512};
  c.out = mkt(g, "out", DT_BF16, 3, os, F_OUT | F_LASTC);
  int64_t ss[1] = {R};
  c.sl = mkt(g, "seq_lens", DT_I32, 1, ss, 0);
  int bs = c.c.d.block_size > 0 ? c.c.d.block_size : 1;
  int64_t lim = g_slow ? INT32_MAX : 4096;
  struct range rs = {0, (int64_t)bs * maxp + 2, 0, {0}};
  fill(c.sl, g, gen_range, &rs);
  c.gl = NULL;
  if (pct(g, 70)) {
    int64_t gs[1] = {R};
    if (pct(g, 2)) { gs[0] = R + 1; expect_soft("gather_lens shape"); }
    c.gl = mkt(g, "gather_lens", DT_I32, 1, gs, F_OPTIONAL);
    struct range rg = {-1, g_big ? 300 : 8, 0, {0}};
    fill(c.gl, g, gen_range, &rg);
  }
  /* keep the total work bounded unless FUZZ_SLOW */
  for (int w = 0; w < 2; w++) {
    Ten *L = w ? c.gl : c.sl;
    if (!L || L->t.ndim != 1 || L->elem != 4) continue;
    for (int64_t r = 0; r < L->shape[0]; r++)
      if (geti(L, r, 0) > lim) { seti(L, r, 0, lim); resnap(L); }
  }
  int64_t bts[2] = {Rbt, maxp};
  c.bt = mkt(g, "block_table", DT_I32, 2, bts, 0);
  struct range rb = {-1, c.c.pages, 1, {0, c.c.pages - 1, c.c.pages, -1}};
  fill(c.bt, g, gen_range, &rb);
  int o = (int)ru(g, 100);
  static const int64_t offs[] = {-1, INT64_MIN, INT64_MAX, INT64_MAX - 1, INT64_MAX - 2, (int64_t)1 << 62,
                                 INT32_MAX, (int64_t)INT32_MAX + 1, ((int64_t)1 << 63) / 512};
  c.offset = o < 85 ? rr(g, 0, 5) : offs[ru(g, 9)];
  /* FUZZ_AVOID_KNOWN: no offset + i past INT64_MAX (finding F1) */
  if (g_avoid_offset && c.offset > INT64_MAX - ((int64_t)1 << 32)) c.offset = (int64_t)1 << 62;
  if (c.offset < 0) expect_err("offset %lld", (long long)c.offset);
  snprintf(g_scalars + strlen(g_scalars), sizeof g_scalars - strlen(g_scalars), "offset=%lld", (long long)c.offset);
  /* spec: only out[r][offset .. offset+L) rows, r < R, row < max_tokens */
  int64_t exp_skip = 0;
  if (!g_mutated) {
    allow_none(c.out);
    for (int64_t r = 0; r < R; r++) {
      int64_t seq = geti(c.sl, r, 0);
      int64_t L = c.gl ? geti(c.gl, r, 0) : seq;
      if (L < 0) { exp_skip++; continue; }
      /* i with row >= max_tokens or pos < 0 are only counted (L may be 2^31) */
      int64_t ilo = L > seq ? L - seq : 0;
      __int128 rl = (__int128)maxt - c.offset;
      int64_t ihi = rl <= 0 ? 0 : rl < L ? (int64_t)rl : L;
      if (ilo > ihi) ilo = ihi;
      exp_skip += ilo + (L - ihi);
      for (int64_t i = ilo; i < ihi; i++) {
        __int128 row = (__int128)c.offset + i;
        int64_t pos = seq - L + i;
        if (pos / bs >= maxp) { exp_skip++; continue; }
        int64_t page = geti(c.bt, r, pos / bs);
        if (page < 0 || page >= c.c.pages) { exp_skip++; continue; }
        for (int d = 0; d < 512; d++) allow(c.out, (at(c.out, r, (int64_t)row, d) - c.out->data), 2);
      }
    }
  }
  static const char *const names[] = {"out", "k_cache", "cache", "seq_lens", "gather_lens", "block_table", "offset",
                                      "block_size", NULL};
  Ten *outs[1] = {c.out};
  Res r;
  exec3(call_gather, &c, outs, 1, names, (int)ru(g, 2), &r);
  if (!g_mutated && !dsv4kv_is_error(r.st) && r.skipped != exp_skip)
    issue("skipped-value", "gather skipped %lld, spec says %lld", (long long)r.skipped, (long long)exp_skip);
  if (!g_mutated && dsv4kv_is_error(r.st))
    issue("valid-call-rejected", "gather: %s: %s", dsv4kv_status_string(r.st), r.msg);
  res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Op 3: compute_global_topk_indices_and_lens                                 */
/* ------------------------------------------------------------------------ */
static int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
struct gt_ctx { Ten *topk, *req, *bt, *valid, *gout, *lout; int32_t bs; };
static dsv4kv_status call_gt(void *p, const dsv4kv_options *o) {
  struct gt_ctx *c = p;
  opcall_global_topk a = {D(c->topk), D(c->req), D(c->bt), c->bs, D(c->valid), D(c->gout), D(c->lout)};
  return opcall_global_topk_run(&a, o);
}
static void op_global_topk(Src *g) {
  g_op = "compute_global_topk_indices_and_lens";
  struct gt_ctx c;
  int64_t T = BIG(rr(g, 0, 6), 128, 600), K = rr(g, 0, 9), R = rr(g, 0, 3), P = rr(g, 0, 4);
  static const int32_t bss[] = {1, 2, 3, 4, 16, 64, 128};
  c.bs = bss[ru(g, 7)];
  if (pct(g, 3)) {
    static const int32_t bad[] = {0, -1, INT32_MIN};
    c.bs = bad[ru(g, 3)];
    expect_err("block_size %d", c.bs);
  }
  else if (pct(g, 2)) c.bs = INT32_MAX;
  int64_t ts[2] = {T, K};
  c.topk = mkt(g, "topk_indices", DT_I32, 2, ts, 0);
  struct range rt = {-2, (int64_t)(c.bs > 0 ? c.bs : 1) * P + 1, 0, {0}};
  fill(c.topk, g, gen_range, &rt);
  int64_t rs[1] = {T + (pct(g, 20) ? rr(g, 1, 2) : 0)};
  if (pct(g, 3) && T > 0) { rs[0] = T - 1; expect_soft("req short"); }
  c.req = mkt(g, "token_to_req_indices", DT_I32, 1, rs, 0);
  struct range rq = {-1, R, 0, {0}};
  fill(c.req, g, gen_range, &rq);
  int64_t bts[2] = {R, P};
  c.bt = mkt(g, "block_table", DT_I32, 2, bts, 0);
  struct range rb = {-1, 100, 0, {0}};
  fill(c.bt, g, gen_range, &rb);
  int64_t vs[1] = {T + (pct(g, 20) ? rr(g, 1, 2) : 0)};
  if (pct(g, 3) && T > 0) { vs[0] = T - 1; expect_soft("valid short"); }
  c.valid = mkt(g, "is_valid_token", pct(g, 50) ? DT_BOOL : DT_U8, 1, vs, F_BOOLISH);
  fill(c.valid, g, gen_bool, NULL);
  int64_t gs[2] = {T, K};
  if (pct(g, 3)) { gs[ru(g, 2)] += 1; expect_soft("global_out shape"); }
  c.gout = mkt(g, "global_out", DT_I32, 2, gs, F_OUT);
  int64_t ls[1] = {T};
  if (pct(g, 3)) { ls[0] += 1; expect_soft("lens_out shape"); }
  c.lout = mkt(g, "lens_out", DT_I32, 1, ls, F_OUT);
  snprintf(g_scalars + strlen(g_scalars), sizeof g_scalars - strlen(g_scalars), "block_size=%d", c.bs);
  static const char *const names[] = {"topk_indices", "token_to_req_indices", "block_table", "block_size",
                                      "is_valid_token", "global_out", "lens_out", NULL};
  Ten *outs[2] = {c.gout, c.lout};
  Res r;
  exec3(call_gt, &c, outs, 2, names, 0, &r);
  if (!g_mutated && !dsv4kv_is_error(r.st)) {
    /* reference of SPEC §5.1 */
    int64_t skip = 0, bad = 0;
    for (int64_t t = 0; t < T; t++) {
      int64_t req = geti(c.req, t, 0);
      int ok = req >= 0 && req < R, valid = geti(c.valid, t, 0) != 0;
      if (!ok && valid) skip++; /* SPEC §7: padding (invalid) rows are not skips */
      int32_t cnt = 0;         /* lens count the slots written */
      for (int64_t j = 0; j < K; j++) {
        int64_t x = geti(c.topk, t, j);
        int32_t e = -1;
        if (x >= 0) {
          if (ok && x / c.bs < P) e = wrap32(geti(c.bt, req, x / c.bs) * c.bs + x % c.bs), cnt++;
          else if (ok && valid) skip++;
        }
        if ((int32_t)geti(c.gout, t, j) != e && !c.gout->aliased) bad++;
      }
      int32_t el = geti(c.valid, t, 0) ? cnt : 0;
      if ((int32_t)geti(c.lout, t, 0) != el && !c.lout->aliased) bad++;
    }
    if (bad) issue("wrong-value", "global_topk: %lld output values differ from SPEC §5.1", (long long)bad);
    if (r.skipped != skip) issue("skipped-value", "global_topk skipped %lld, spec-derived %lld", (long long)r.skipped, (long long)skip);
  }
  if (!g_mutated && dsv4kv_is_error(r.st))
    issue("valid-call-rejected", "global_topk: %s: %s", dsv4kv_status_string(r.st), r.msg);
  res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Op 4: combine_topk_swa_indices (+ _alloc)                                  */
/* ------------------------------------------------------------------------ */
struct cb_ctx { Ten *topk, *qsl, *sl, *gl, *comb, *lens; int32_t w, cr, k, M, N; };
static dsv4kv_status call_cb(void *p, const dsv4kv_options *o) {
  struct cb_ctx *c = p;
  opcall_combine a = {D(c->topk), D(c->qsl), D(c->sl), D(c->gl), c->w, c->cr, c->k, c->M, c->N,
                      D(c->comb), D(c->lens), 0, NULL, NULL};
  return opcall_combine_run(&a, o);
}
/* The SPEC §5.2 result applied to `comb`/`lens` buffers (by harness strides). */
static int64_t combine_ref(struct cb_ctx *c, Ten *comb, Ten *lens, int64_t T, int64_t R) {
  int64_t skip = 0;
  int64_t base = geti(c->qsl, 0, 0);
  for (int64_t r = 0; r < R; r++) {
    int64_t qs = geti(c->qsl, r, 0) - base, qe = geti(c->qsl, r + 1, 0) - base;
    int64_t seq = geti(c->sl, r, 0), sp = seq - (qe - qs), gs = seq - geti(c->gl, r, 0);
    int64_t Mr = (int64_t)c->M * r;
    /* tokens outside [0, T) are only counted (arithmetically: the span may be 2^32) */
    int64_t tlo = qs > 0 ? qs : 0, thi = qe < T ? qe : T;
    if (qe > qs) skip += (qe - qs) - (thi > tlo ? thi - tlo : 0);
    for (int64_t t = tlo; t < thi; t++) {
      int64_t pos = sp + (t - qs), tl = 0;
      if (c->cr > 0) { tl = (pos + 1) / c->cr; if (tl > c->k) tl = c->k; }
      int64_t ss = pos - c->w + 1;
      if (ss < 0) ss = 0;
      if (ss < gs) ss = gs;
      int64_t sl = pos - ss + 1;
      if (tl < 0) tl = 0, skip++; /* SPEC §7: lengths clamped at 0, counted */
      if (sl < 0) sl = 0, skip++;
      for (int64_t j = 0; j < tl; j++) seti(comb, t, j, wrap32(geti(c->topk, t, j) + Mr));
      for (int64_t j = 0; j < sl; j++) seti(comb, t, tl + j, wrap32(Mr + c->N + (ss - gs) + j));
      seti(lens, t, 0, wrap32(tl + sl));
    }
  }
  return skip;
}
static void op_combine(Src *g) {
  g_op = "combine_topk_swa_indices";
  struct cb_ctx c;
  int64_t R = rr(g, 0, 3), T = BIG(rr(g, 0, 8), 128, 600), W = rr(g, 0, 6);
  c.w = (int32_t)rr(g, 1, 6);
  c.cr = pct(g, 20) ? 0 : (int32_t)rr(g, 1, 4);
  c.k = (int32_t)rr(g, 0, W);
  c.M = (int32_t)rr(g, 0, 100);
  c.N = (int32_t)rr(g, 0, 10);
  if (pct(g, 5)) {
    static const int32_t big[] = {INT32_MAX, INT32_MAX - 1, 1 << 30, 65536};
    int which = (int)ru(g, 3);
    if (which == 0) c.M = big[ru(g, 4)];
    if (which == 1) c.N = big[ru(g, 4)];
    if (which == 2) c.cr = big[ru(g, 4)];
  }
  if (pct(g, 4)) {
    int which = (int)ru(g, 5);
    static const int32_t neg[] = {-1, INT32_MIN};
    int32_t v = neg[ru(g, 2)];
    if (which == 0) c.w = pct(g, 50) ? 0 : v;
    if (which == 1) c.cr = v;
    if (which == 2) c.k = v;
    if (which == 3) c.M = v;
    if (which == 4) c.N = v;
    expect_err("scalar %d negative", which);
  }
  if (pct(g, 3)) { c.k = (int32_t)W + 1; expect_soft("topk > W"); }
  if (pct(g, 2)) { c.w = INT32_MAX; } /* then C >= topk + w is impossible for our buffers */
  int64_t ts[2] = {T, W};
  c.topk = mkt(g, "topk_indices", DT_I32, 2, ts, 0);
  struct range rt = {-2, 300, 0, {0}};
  fill(c.topk, g, gen_range, &rt);
  int64_t qs[1] = {R + 1};
  if (pct(g, 2)) { qs[0] = 0; expect_soft("qsl empty"); }
  c.qsl = mkt(g, "query_start_loc", DT_I32, 1, qs, 0);
  /* query_start_loc: a base plus increasing offsets, sometimes malformed */
  if (c.qsl->t.ndim == 1 && c.qsl->shape[0] > 0 && c.qsl->elem == 4) {
    static const int64_t bases[] = {0, 0, 0, 5, -3, INT32_MIN, INT32_MAX - 10, INT32_MAX};
    int64_t b = bases[ru(g, 8)], cur = 0;
    for (int64_t i = 0; i < c.qsl->shape[0]; i++) {
      if (i) cur += g_big ? rr(g, 0, 300) : pct(g, 85) ? rr(g, 0, 3) : rr(g, -4, 10);
      int64_t v = wrap32(b + cur);
      if (pct(g, 3)) {
        v = gidx(g, -10, 10);
        if (!g_slow) v = wrap32(b + cur + rr(g, -20, 20));
      }
      seti(c.qsl, i, 0, v);
    }
    /* bounded work unless FUZZ_SLOW */
    if (!g_slow) {
      int64_t bb = geti(c.qsl, 0, 0), tot = 0;
      for (int64_t i = 0; i + 1 < c.qsl->shape[0]; i++) {
        int64_t d = geti(c.qsl, i + 1, 0) - geti(c.qsl, i, 0);
        if (d > 0) tot += d;
      }
      (void)bb;
      if (tot > 100000)
        for (int64_t i = 0; i < c.qsl->shape[0]; i++) seti(c.qsl, i, 0, i);
    }
    resnap(c.qsl);
  }
  int64_t ss[1] = {R};
  if (pct(g, 2)) { ss[0] = R + 1; expect_soft("seq_lens shape"); }
  c.sl = mkt(g, "seq_lens", DT_I32, 1, ss, 0);
  struct range rs = {0, g_big ? 400 : 40, 0, {0}};
  fill(c.sl, g, gen_range, &rs);
  int64_t gls[1] = {R};
  if (pct(g, 2)) { gls[0] = R + 1; expect_soft("gather_lens shape"); }
  c.gl = mkt(g, "gather_lens", DT_I32, 1, gls, 0);
  struct range rg = {0, g_big ? 400 : 40, 0, {0}};
  fill(c.gl, g, gen_range, &rg);
  int64_t C = ((int64_t)c.k + c.w + 127) / 128 * 128;
  if (pct(g, 50) && c.k >= 0 && c.w > 0) C = (int64_t)c.k + c.w + rr(g, 0, 3);
  if (C > 256 || C < 0) C = 8; /* w = INT32_MAX etc.: too narrow on purpose */
  if (c.k >= 0 && c.w > 0 && C < (int64_t)c.k + c.w) expect_soft("combined too narrow");
  int64_t cs[2] = {T, C};
  if (pct(g, 2)) { cs[0] = T + 1; expect_soft("combined rows"); }
  c.comb = mkt(g, "combined", DT_I32, 2, cs, F_OUT);
  int64_t ls[1] = {T};
  if (pct(g, 2)) { ls[0] = T + 1; expect_soft("lens rows"); }
  c.lens = mkt(g, "lens", DT_I32, 1, ls, F_OUT);
  snprintf(g_scalars + strlen(g_scalars), sizeof g_scalars - strlen(g_scalars),
           "window_size=%d compress_ratio=%d topk=%d M=%d N=%d", c.w, c.cr, c.k, c.M, c.N);
  static const char *const names[] = {"topk_indices", "query_start_loc", "seq_lens", "gather_lens", "window_size",
                                      "compress_ratio", "topk", "M =", "N =", "combined", "lens", NULL};
  Ten *outs[2] = {c.comb, c.lens};
  Res r;
  exec3(call_cb, &c, outs, 2, names, 0, &r);
  int64_t exp_skip = 0;
  if (!g_mutated && !dsv4kv_is_error(r.st) && !c.comb->aliased && !c.lens->aliased) {
    /* reference on the snapshots */
    uint8_t *save_c = malloc(c.comb->nbytes + 1), *save_l = malloc(c.lens->nbytes + 1);
    memcpy(save_c, c.comb->buf, c.comb->nbytes);
    memcpy(save_l, c.lens->buf, c.lens->nbytes);
    memcpy(c.comb->buf, c.comb->snap, c.comb->nbytes);
    memcpy(c.lens->buf, c.lens->snap, c.lens->nbytes);
    exp_skip = combine_ref(&c, c.comb, c.lens, T, R);
    if (memcmp(save_c, c.comb->buf, c.comb->nbytes) || memcmp(save_l, c.lens->buf, c.lens->nbytes))
      issue("wrong-value", "combine output differs from SPEC §5.2");
    if (r.skipped != exp_skip)
      issue("skipped-value", "combine skipped %lld, spec-derived %lld", (long long)r.skipped, (long long)exp_skip);
    free(save_c);
    free(save_l);
  }
  if (!g_mutated && dsv4kv_is_error(r.st))
    issue("valid-call-rejected", "combine: %s: %s", dsv4kv_status_string(r.st), r.msg);

  /* the _alloc variant: same call, library-allocated outputs */
  g_op = "combine_topk_swa_indices_alloc";
  DLManagedTensor *mc = (DLManagedTensor *)0x1, *ml = (DLManagedTensor *)0x1;
  int64_t sk = -777, nf = -777;
  dsv4kv_report rep;
  report_poison(&rep);
  dsv4kv_options opt = {&sk, &nf, 0, (int)rr(g, 1, 2), NULL, &rep, 0};
  int nullout = pct(g, 2) ? (int)rr(g, 1, 2) : 0;
  /* FUZZ_AVOID_KNOWN: no multi-GiB allocations from a huge window_size (finding F8) */
  if (g_avoid_bigalloc && (int64_t)c.k + c.w > (1 << 20)) { res_free(&r); return; }
  dsv4kv_status st = dsv4kv_combine_topk_swa_indices_alloc(D(c.topk), D(c.qsl), D(c.sl), D(c.gl), c.w, c.cr, c.k, c.M,
                                                           c.N, nullout == 1 ? NULL : &mc, nullout == 2 ? NULL : &ml,
                                                           &opt);
  g_calls++;
  if (!nullout) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", dsv4kv_last_error());
    check_report("alloc", st, &rep, &sk, &nf, msg);
  }
  if (nullout && st != DSV4KV_ERR_NULL) issue("bad-argument-accepted", "alloc: NULL out pointer gave %d", (int)st);
  if (!nullout) {
    if (dsv4kv_is_error(st)) {
      if (mc || ml) issue("alloc-outputs-on-error", "alloc: %s but outputs not NULL", dsv4kv_status_string(st));
      if (!dsv4kv_last_error()[0]) issue("empty-message", "alloc: %s with empty message", dsv4kv_status_string(st));
    } else {
      if (!mc || !ml) issue("alloc-null-outputs", "alloc: %s but NULL outputs", dsv4kv_status_string(st));
      else {
        DLTensor *a = &mc->dl_tensor, *b = &ml->dl_tensor;
        int64_t Cr = ((int64_t)c.k + c.w + 127) / 128 * 128;
        T = c.topk->shape[0];
        if (a->ndim != 2 || a->shape[0] != T || a->shape[1] != Cr || !same_dt(a->dtype, DT_I32) ||
            a->device.device_type != kDLCPU || b->ndim != 1 || b->shape[0] != T || !same_dt(b->dtype, DT_I32))
          issue("alloc-shape", "alloc: combined/lens descriptors wrong");
        else if (!g_mutated) {
          /* must equal the reference over a -1 / 0 filled output */
          int64_t cs2[2] = {T, Cr}, ls2[1] = {T};
          Ten *rc = mkt(g, "ref_combined", DT_I32, 2, cs2, F_NOMUT | F_NONULL | F_COMPACT);
          Ten *rl = mkt(g, "ref_lens", DT_I32, 1, ls2, F_NOMUT | F_NONULL | F_COMPACT);
          for (int64_t t = 0; t < T; t++) {
            for (int64_t j = 0; j < Cr; j++) seti(rc, t, j, -1);
            seti(rl, t, 0, 0);
          }
          int64_t s2 = combine_ref(&c, rc, rl, T, R);
          int64_t bad = 0;
          const int32_t *ad = (const int32_t *)((uint8_t *)a->data + a->byte_offset);
          const int32_t *bd = (const int32_t *)((uint8_t *)b->data + b->byte_offset);
          for (int64_t t = 0; t < T; t++) {
            for (int64_t j = 0; j < Cr; j++) bad += ad[t * Cr + j] != (int32_t)geti(rc, t, j);
            bad += bd[t] != (int32_t)geti(rl, t, 0);
          }
          if (bad) issue("wrong-value", "alloc: %lld values differ from SPEC §5.2 over a -1/0 fill", (long long)bad);
          if (sk != s2) issue("skipped-value", "alloc skipped %lld, spec-derived %lld", (long long)sk, (long long)s2);
          if ((st == DSV4KV_WARN_SKIPPED) != (s2 > 0)) issue("alloc-status", "alloc status %d with %lld skips", (int)st, (long long)s2);
        }
      }
      dsv4kv_managed_free(mc);
      dsv4kv_managed_free(ml);
    }
    if (!g_mutated && dsv4kv_is_error(st))
      issue("valid-call-rejected", "alloc: %s: %s", dsv4kv_status_string(st), dsv4kv_last_error());
  }
  dsv4kv_managed_free(NULL);
  res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Op 5: build_flashinfer_mixed_sparse_indices                                */
/* ------------------------------------------------------------------------ */
struct fi_ctx {
  Ten *dswa, *dcomp, *dlens, *dvalid, *ptopk, *qsl, *sl, *replay, *req, *swa_bt, *comp_bt, *out, *lens;
  dsv4kv_flashinfer_args a;
  int args_null;
};
static dsv4kv_status call_fi(void *p, const dsv4kv_options *o) {
  struct fi_ctx *c = p;
  c->a.decode_swa_indices = D(c->dswa);
  c->a.decode_compressed_indices = c->dcomp ? D(c->dcomp) : NULL;
  c->a.decode_compressed_topk_lens = c->dlens ? D(c->dlens) : NULL;
  c->a.decode_is_valid_token = c->dvalid ? D(c->dvalid) : NULL;
  c->a.prefill_topk_indices = D(c->ptopk);
  c->a.query_start_loc = D(c->qsl);
  c->a.seq_lens = D(c->sl);
  c->a.replay_start = D(c->replay);
  c->a.token_to_req_indices = D(c->req);
  c->a.swa_block_table = D(c->swa_bt);
  c->a.compressed_block_table = c->comp_bt ? D(c->comp_bt) : NULL;
  opcall_flashinfer a = {c->args_null ? NULL : &c->a, D(c->out), D(c->lens)};
  return opcall_flashinfer_run(&a, o);
}
static int64_t fi_remap(int64_t v, int64_t bs, int64_t span) { return v < 0 ? -1 : wrap32((v / bs) * span + v % bs); }
static int64_t fi_slot(Ten *bt, int64_t req, int64_t pos, int64_t bs, int64_t *skip) {
  int64_t lp = pos / bs;
  if (req < 0 || req >= bt->shape[0] || pos < 0 || lp >= bt->shape[1]) { (*skip)++; return -1; }
  return wrap32(geti(bt, req, lp) * bs + pos % bs);
}
static void op_flashinfer(Src *g) {
  g_op = "build_flashinfer_mixed_sparse_indices";
  struct fi_ctx c;
  memset(&c, 0, sizeof c);
  int64_t D_ = BIG(rr(g, 0, 4), 0, 300), P = BIG(rr(g, 0, 5), 128, 300), R = rr(g, 0, 3), S = rr(g, 1, 6), Dk = pct(g, 30) ? 0 : rr(g, 0, 6);
  int64_t Wp = rr(g, 0, 6);
  dsv4kv_flashinfer_args *a = &c.a;
  a->window_size = (int32_t)rr(g, 1, S);
  a->compress_ratio = pct(g, 20) ? 0 : (int32_t)rr(g, 1, 4);
  a->topk = (int32_t)rr(g, 0, 8);
  static const int32_t bss[] = {1, 2, 4, 8, 64};
  a->swa_block_size = bss[ru(g, 5)];
  a->compressed_block_size = bss[ru(g, 5)];
  a->swa_block_span = pct(g, 50) ? 0 : a->swa_block_size + (int32_t)rr(g, 0, 3);
  a->compressed_block_span = pct(g, 50) ? 0 : a->compressed_block_size + (int32_t)rr(g, 0, 3);
  a->decode_compressed_indices_are_local = (int)ru(g, 3); /* 2: nonzero, not 1 */
  if (pct(g, 5)) {
    int which = (int)ru(g, 9);
    static const int32_t bad[] = {0, -1, INT32_MIN};
    int32_t v = bad[ru(g, 3)];
    switch (which) {
      case 0: a->swa_block_size = v; expect_err("swa_block_size"); break;
      case 1: a->compressed_block_size = v; expect_err("compressed_block_size"); break;
      case 2: if (v) { a->swa_block_span = v; expect_err("swa_block_span"); } break;
      case 3: if (v) { a->compressed_block_span = v; expect_err("compressed_block_span"); } break;
      case 4: a->window_size = v; expect_err("window_size"); break;
      case 5: a->window_size = (int32_t)S + 1; expect_soft("window_size > S"); break;
      case 6: if (v) { a->compress_ratio = v; expect_err("compress_ratio"); } break;
      case 7: if (v) { a->topk = v; expect_err("topk"); } break;
      default: c.args_null = 1; expect_err("args NULL"); break;
    }
  }
  if (pct(g, 3) && !g_expect_err) {
    static const int32_t big[] = {INT32_MAX, 1 << 30, 65536};
    int which = (int)ru(g, 4);
    if (which == 0) a->swa_block_span = big[ru(g, 3)];
    if (which == 1) a->compressed_block_span = big[ru(g, 3)];
    if (which == 2) a->compress_ratio = big[ru(g, 3)];
    if (which == 3) {
      a->swa_block_size = big[ru(g, 3)];
      if (a->swa_block_span && a->swa_block_span < a->swa_block_size) expect_err("swa_block_span");
    }
  }
  if (pct(g, 3) && !g_expect_err && a->compressed_block_size > 1) { /* slots would alias (SPEC §7) */
    a->compressed_block_span = a->compressed_block_size - (int32_t)rr(g, 1, a->compressed_block_size - 1);
    expect_err("compressed_block_span");
  }
  int64_t K4 = ((a->topk > Dk ? a->topk : Dk) + 3) / 4 * 4;
  int64_t s1[2] = {D_, S};
  c.dswa = mkt(g, "decode_swa_indices", DT_I32, 2, s1, 0);
  struct range rv = {-2, 200, 0, {0}};
  fill(c.dswa, g, gen_range, &rv);
  if (Dk > 0 || pct(g, 20)) {
    int64_t s2[2] = {D_, Dk};
    if (pct(g, 2)) { s2[0] = D_ + 1; expect_soft("dcomp rows"); }
    c.dcomp = mkt(g, "decode_compressed_indices", DT_I32, 2, s2, F_OPTIONAL);
    struct range rl = {-2, 40, 0, {0}};
    fill(c.dcomp, g, gen_range, &rl);
  } else Dk = 0;
  K4 = ((a->topk > Dk ? a->topk : Dk) + 3) / 4 * 4;
  if (pct(g, 50)) {
    int64_t s3[1] = {D_ + (pct(g, 20) ? 1 : 0)};
    if (pct(g, 3) && D_ > 0) { s3[0] = D_ - 1; expect_soft("dlens short"); }
    c.dlens = mkt(g, "decode_compressed_topk_lens", DT_I32, 1, s3, F_OPTIONAL);
    struct range rl = {0, 8, 0, {0}};
    fill(c.dlens, g, gen_range, &rl);
  }
  if (pct(g, 50)) {
    int64_t s4[1] = {D_ + (pct(g, 20) ? 1 : 0)};
    if (pct(g, 3) && D_ > 0) { s4[0] = D_ - 1; expect_soft("dvalid short"); }
    c.dvalid = mkt(g, "decode_is_valid_token", pct(g, 50) ? DT_BOOL : DT_U8, 1, s4, F_OPTIONAL | F_BOOLISH);
    fill(c.dvalid, g, gen_bool, NULL);
  }
  int64_t s5[2] = {P, Wp};
  c.ptopk = mkt(g, "prefill_topk_indices", DT_I32, 2, s5, 0);
  struct range rp = {-2, 40, 0, {0}};
  fill(c.ptopk, g, gen_range, &rp);
  int64_t s6[1] = {R + 1};
  if (pct(g, 2)) { s6[0] = 0; expect_soft("qsl empty"); }
  c.qsl = mkt(g, "query_start_loc", DT_I32, 1, s6, 0);
  {
    int64_t cur = rr(g, 0, D_ + 1);
    if (c.qsl->t.ndim == 1 && c.qsl->shape[0] > 0 && c.qsl->elem == 4) {
      for (int64_t i = 0; i < c.qsl->shape[0]; i++) {
        if (i) cur += g_big ? rr(g, 0, 150) : rr(g, 0, 4);
        seti(c.qsl, i, 0, pct(g, 4) ? gidx(g, -5, 20) : cur);
      }
      resnap(c.qsl);
    }
  }
  int64_t s7[1] = {R + (pct(g, 20) ? 1 : 0)};
  if (pct(g, 2) && R > 0) { s7[0] = R - 1; expect_soft("seq_lens short"); }
  c.sl = mkt(g, "seq_lens", DT_I32, 1, s7, 0);
  struct range rs = {0, g_big ? 400 : 60, 0, {0}};
  fill(c.sl, g, gen_range, &rs);
  int64_t s8[1] = {R + (pct(g, 20) ? 1 : 0)};
  if (pct(g, 2) && R > 0) { s8[0] = R - 1; expect_soft("replay short"); }
  c.replay = mkt(g, "replay_start", DT_I32, 1, s8, 0);
  struct range rr_ = {0, 40, 0, {0}};
  fill(c.replay, g, gen_range, &rr_);
  int64_t s9[1] = {D_ + P + (pct(g, 20) ? 1 : 0)};
  if (pct(g, 2) && D_ + P > 0) { s9[0] = D_ + P - 1; expect_soft("req short"); }
  c.req = mkt(g, "token_to_req_indices", DT_I32, 1, s9, 0);
  struct range rq = {-1, R, 0, {0}};
  fill(c.req, g, gen_range, &rq);
  int64_t s10[2] = {rr(g, 0, 4), rr(g, 0, 5)};
  c.swa_bt = mkt(g, "swa_block_table", DT_I32, 2, s10, 0);
  struct range rb = {-1, 30, 0, {0}};
  fill(c.swa_bt, g, gen_range, &rb);
  if (pct(g, 60)) {
    int64_t s11[2] = {rr(g, 0, 4), rr(g, 0, 5)};
    c.comp_bt = mkt(g, "compressed_block_table", DT_I32, 2, s11, F_OPTIONAL);
    fill(c.comp_bt, g, gen_range, &rb);
  }
  int64_t s12[2] = {D_ + P, S + K4};
  if (pct(g, 3)) { s12[ru(g, 2)] += pct(g, 50) ? 1 : -1; expect_soft("sparse_indices shape"); }
  c.out = mkt(g, "sparse_indices", DT_I32, 2, s12, F_OUT);
  int64_t s13[1] = {D_ + P};
  if (pct(g, 3)) { s13[0] += 1; expect_soft("sparse_lens shape"); }
  c.lens = mkt(g, "sparse_lens", DT_I32, 1, s13, F_OUT);
  snprintf(g_scalars + strlen(g_scalars), sizeof g_scalars - strlen(g_scalars),
           "local=%d swa_bs=%d swa_span=%d c_bs=%d c_span=%d window=%d ratio=%d topk=%d args_null=%d",
           a->decode_compressed_indices_are_local, a->swa_block_size, a->swa_block_span, a->compressed_block_size,
           a->compressed_block_span, a->window_size, a->compress_ratio, a->topk, c.args_null);
  static const char *const names[] = {"decode_swa_indices", "decode_compressed_indices", "decode_compressed_topk_lens",
                                      "decode_is_valid_token", "prefill_topk_indices", "query_start_loc", "seq_lens",
                                      "replay_start", "token_to_req_indices", "swa_block_table",
                                      "compressed_block_table", "swa_block_size", "swa_block_span",
                                      "compressed_block_size", "compressed_block_span", "window_size",
                                      "compress_ratio", "topk", "sparse_indices", "sparse_lens", "args", NULL};
  Ten *outs[2] = {c.out, c.lens};
  Res r;
  exec3(call_fi, &c, outs, 2, names, 0, &r);
  if (!g_mutated && !dsv4kv_is_error(r.st) && !c.out->aliased && !c.lens->aliased) {
    int64_t skip = 0, bad = 0, first_bad_t = -1, first_bad_j = -1;
    int64_t sbs = a->swa_block_size, sspan = a->swa_block_span ? a->swa_block_span : sbs;
    int64_t cbs = a->compressed_block_size, cspan = a->compressed_block_span ? a->compressed_block_span : cbs;
    Ten *cbt = c.comp_bt ? c.comp_bt : c.swa_bt;
    int local = a->decode_compressed_indices_are_local != 0;
#define FI_EXPECT(t, j, e)                                          \
  do {                                                              \
    if ((int32_t)geti(c.out, t, j) != (int32_t)(e)) {               \
      if (!bad++) first_bad_t = t, first_bad_j = j;                 \
    }                                                               \
  } while (0)
    for (int64_t d = 0; d < D_; d++) {
      for (int64_t j = 0; j < S; j++) FI_EXPECT(d, j, fi_remap(geti(c.dswa, d, j), sbs, sspan));
      int valid = c.dvalid ? geti(c.dvalid, d, 0) != 0 : 1;
      int64_t req = geti(c.req, d, 0), cnt = 0;
      for (int64_t j = 0; j < K4; j++) {
        int64_t v = j < Dk ? geti(c.dcomp, d, j) : -1;
        if (local && v >= 0) {
          int64_t pad = 0; /* SPEC §7: an invalid (padding) token's lookups are not skips */
          v = fi_slot(cbt, req, v, cbs, valid ? &skip : &pad);
          if (v >= 0 && valid) cnt++;
        }
        FI_EXPECT(d, S + j, fi_remap(v, cbs, cspan));
      }
      int64_t n = Dk == 0 ? 0 : local ? cnt : c.dlens ? geti(c.dlens, d, 0) : Dk;
      if (n < 0 || n > Dk) { /* SPEC §7: clamped to the row, counted */
        n = n < 0 ? 0 : Dk;
        if (valid) skip++;
      }
      if ((int32_t)geti(c.lens, d, 0) != wrap32(S + n)) bad++;
    }
    for (int64_t t = D_; t < D_ + P; t++) {
      int64_t i = t - D_, req = geti(c.req, t, 0);
      if (req < 0 || req >= R) {
        skip++;
        for (int64_t j = 0; j < S + K4; j++) FI_EXPECT(t, j, -1);
        if (geti(c.lens, t, 0) != 0) bad++;
        continue;
      }
      int64_t q0 = geti(c.qsl, req, 0), q1 = geti(c.qsl, req + 1, 0);
      int64_t pos = geti(c.sl, req, 0) - (q1 - q0) + (t - q0);
      int64_t ss = pos - a->window_size + 1;
      if (ss < 0) ss = 0;
      if (ss < geti(c.replay, req, 0)) ss = geti(c.replay, req, 0);
      int64_t sl = pos - ss + 1, tl = 0;
      if (a->compress_ratio > 0) { tl = (pos + 1) / a->compress_ratio; if (tl > a->topk) tl = a->topk; }
      if (tl < 0 || tl > Wp) tl = tl < 0 ? 0 : Wp, skip++; /* SPEC §7: clamped to the data, counted */
      for (int64_t j = 0; j < S; j++) {
        int64_t v = j < sl ? fi_slot(c.swa_bt, req, ss + j, sbs, &skip) : -1;
        FI_EXPECT(t, j, fi_remap(v, sbs, sspan));
      }
      for (int64_t j = 0; j < K4; j++) {
        int64_t x = j < tl ? geti(c.ptopk, i, j) : -1;
        int64_t v = x >= 0 ? fi_slot(cbt, req, x, cbs, &skip) : -1;
        FI_EXPECT(t, S + j, fi_remap(v, cbs, cspan));
      }
      if ((int32_t)geti(c.lens, t, 0) != wrap32(S + tl)) bad++;
    }
    if (bad) issue("wrong-value", "flashinfer: %lld values differ from SPEC §5.3 (first at [%lld][%lld])", (long long)bad,
                   (long long)first_bad_t, (long long)first_bad_j);
    if (r.skipped != skip)
      issue("skipped-value", "flashinfer skipped %lld, spec-derived %lld", (long long)r.skipped, (long long)skip);
    /* "every element of both outputs is written": a second, different fill must give the same bytes */
    for (int o = 0; o < 2; o++) {
      Ten *T = outs[o];
      for (size_t b = 0; b < T->nbytes; b++) T->snap[b] ^= T->mask[b] ? 0x5A : 0;
    }
    Res r2;
    exec3(call_fi, &c, outs, 2, names, 0, &r2);
    for (int o = 0; o < 2; o++)
      if (memcmp(r2.outs[o], r.outs[o], outs[o]->nbytes)) issue("not-written-in-full", "flashinfer %s", outs[o]->name);
    res_free(&r2);
  }
  if (!g_mutated && dsv4kv_is_error(r.st))
    issue("valid-call-rejected", "flashinfer: %s: %s", dsv4kv_status_string(r.st), r.msg);
  res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Op 6: indexer_k_norm_rope_store                                            */
/* ------------------------------------------------------------------------ */
struct ix_ctx { Ten *k, *pos, *cs, *w, *slots; CacheCfg c; const dsv4kv_cache_desc *desc; float eps; int32_t cr; };
static dsv4kv_status call_ix(void *p, const dsv4kv_options *o) {
  struct ix_ctx *c = p;
  opcall_indexer a = {D(c->k), D(c->pos), D(c->cs), D(c->w), c->eps, D(c->c.t), c->desc, D(c->slots), c->cr};
  return opcall_indexer_run(&a, o);
}
static int64_t tiled_off(int64_t p, int64_t d) {
  return (p / 16) * 16 * 128 + (d / 16) * 256 + (p % 16) * 16 + d % 16;
}
static void op_indexer(Src *g) {
  g_op = "indexer_k_norm_rope_store";
  struct ix_ctx c;
  mk_cache(g, &c.c, 1, 1);
  c.desc = cache_desc(g, &c.c);
  int64_t Tk = BIG(rr(g, 0, 6), 256, 500), T = pct(g, 85) ? rr(g, g_big ? 256 : 0, Tk) : BIG(rr(g, 0, 8), 0, 500);
  int64_t ks[2] = {Tk, 128};
  c.k = mkt(g, "k_pre", DT_BF16, 2, ks, F_LASTC);
  if (T > c.k->shape[0] && c.k->shape[0] >= 0 && c.k->t.ndim >= 1) expect_soft("T > T_k");
  fill(c.k, g, gen_bf16, NULL);
  int64_t rows = rr(g, 0, 12);
  int64_t ps[1] = {T + (pct(g, 20) ? 1 : 0)};
  if (pct(g, 3) && T > 0) { ps[0] = T - 1; expect_soft("positions short"); }
  c.pos = mkt(g, "positions", DT_I64, 1, ps, 0);
  struct range rp = {-2, rows + 2, 0, {0}};
  fill(c.pos, g, gen_range, &rp);
  int cs_f32 = pct(g, 50);
  int64_t css[2] = {rows, 64};
  c.cs = mkt(g, "cos_sin_cache", cs_f32 ? DT_F32 : DT_BF16, 2, css, F_LASTC);
  fill(c.cs, g, c.cs->elem == 4 ? gen_f32 : gen_bf16, NULL);
  int w_f32 = pct(g, 50);
  int64_t wsz[1] = {128};
  c.w = mkt(g, "rms_norm_weight", w_f32 ? DT_F32 : DT_BF16, 1, wsz, 0);
  fill(c.w, g, c.w->elem == 4 ? gen_f32 : gen_bf16, NULL);
  int64_t ss[1] = {T};
  c.slots = mkt(g, "kv_slot_mapping", DT_I64, 1, ss, 0);
  int64_t nslots = c.c.pages * (c.c.d.block_size > 0 ? c.c.d.block_size : 1);
  struct range rs = {-2, nslots + 1, 1, {-1, 0, nslots - 1, nslots}};
  fill(c.slots, g, gen_range, &rs);
  static const float epss[] = {1e-6f, 0.0f, -0.0f, 1e-30f, 3.4e38f, 1.0f};
  c.eps = epss[ru(g, 6)];
  if (pct(g, 3)) {
    static const float bad[] = {-1e-6f, INFINITY, -INFINITY, NAN, -NAN};
    c.eps = bad[ru(g, 5)];
    expect_err("eps %g", (double)c.eps);
  }
  c.cr = pct(g, 90) ? (int32_t)rr(g, 1, 4) : (pct(g, 50) ? INT32_MAX : (int32_t)rr(g, 5, 100));
  if (pct(g, 3)) {
    static const int32_t bad[] = {0, -1, INT32_MIN};
    c.cr = bad[ru(g, 3)];
    expect_err("compress_ratio %d", c.cr);
  }
  snprintf(g_scalars + strlen(g_scalars), sizeof g_scalars - strlen(g_scalars), "eps=%g compress_ratio=%d",
           (double)c.eps, c.cr);
  Ten *K = c.c.t;
  int64_t exp_skip = 0;
  if (!g_mutated) {
    allow_none(K);
    int64_t bs = c.c.d.block_size, cr = c.cr;
    for (int64_t t = 0; t < T; t++) {
      int64_t s = geti(c.slots, t, 0);
      if (s == -1) continue;
      if (s < 0 || s >= nslots) { exp_skip++; continue; }
      int64_t pos = geti(c.pos, t, 0);
      if (pos < 0) { exp_skip++; continue; }
      if (pos % cr != cr - 1) continue;
      if ((pos / cr) * cr >= rows) { exp_skip++; continue; }
      int64_t base = (s / bs) * c.c.page_stride, p = s % bs;
      if (c.c.d.record == DSV4KV_RECORD_INDEXER_FP8) {
        if (c.c.d.flags & DSV4KV_CACHE_TILED)
          for (int d = 0; d < 128; d++) allow(K, base + tiled_off(p, d), 1);
        else allow(K, base + p * 128, 128);
        allow(K, base + bs * 128 + p * 4, 4);
      } else {
        allow(K, base + p * 64, 64);
        allow(K, base + bs * 64 + p * 4, 4);
      }
    }
  }
  static const char *const names[] = {"k_pre", "positions", "cos_sin_cache", "rms_norm_weight", "eps", "k_cache",
                                      "cache", "kv_slot_mapping", "compress_ratio", NULL};
  Ten *outs[1] = {K};
  Res r;
  exec3(call_ix, &c, outs, 1, names, (int)ru(g, 2), &r);
  if (!g_mutated && !dsv4kv_is_error(r.st) && r.skipped != exp_skip)
    issue("skipped-value", "indexer skipped %lld, spec says %lld", (long long)r.skipped, (long long)exp_skip);
  if (!g_mutated && dsv4kv_is_error(r.st))
    issue("valid-call-rejected", "indexer: %s: %s", dsv4kv_status_string(r.st), r.msg);
  res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Small entry points                                                          */
/* ------------------------------------------------------------------------ */
/* The status table against the header: every code up to DSV4KV_STATUS_LAST
 * named, none past it, and dsv4kv_is_error false exactly for OK and the two
 * warnings (the harness relies on it everywhere else). */
static void check_status_table(void) {
  for (int s = -1; s <= (int)g_max_status + 2; s++) {
    dsv4kv_status st = (dsv4kv_status)s;
    int known = strcmp(dsv4kv_status_string(st), "unknown dsv4kv status") != 0;
    if (known != (s >= 0 && s <= (int)g_max_status))
      issue("status-table", "status %d is %s by dsv4kv_status_string, DSV4KV_STATUS_LAST = %u", s,
            known ? "named" : "not named", g_max_status);
    int warn_or_ok = st == DSV4KV_OK || st == DSV4KV_WARN_SKIPPED || st == DSV4KV_WARN_NONFINITE;
    if (s >= 0 && s <= (int)g_max_status && dsv4kv_is_error(st) == warn_or_ok)
      issue("status-table", "dsv4kv_is_error(%d) = %d", s, dsv4kv_is_error(st));
  }
}

static void op_misc(Src *g) {
  g_op = "misc";
  static int table_checked;
  if (!table_checked++) check_status_table();
  dsv4kv_record rec;
  int64_t w = gidx(g, 0, 600);
  if (pct(g, 30)) w = (int64_t[]){584, 528, 288, 132, 68}[ru(g, 5)];
  dsv4kv_status st = dsv4kv_record_from_width(w, pct(g, 3) ? NULL : &rec);
  if ((unsigned)st > g_max_status) issue("bad-status", "record_from_width");
  if (st != DSV4KV_OK && !dsv4kv_last_error()[0]) issue("empty-message", "record_from_width");
  (void)dsv4kv_record_bytes((dsv4kv_record)gidx(g, -1, 6));
  int32_t nw = dsv4kv_gather_num_workers(gidx(g, -1, 1 << 20));
  if (nw < 128 || nw > 8192) issue("wrong-value", "gather_num_workers = %d", nw);
  (void)dsv4kv_status_string((dsv4kv_status)gidx(g, -1, 20));
  uint32_t u = (uint32_t)ru(g, 1ull << 32);
  float f;
  memcpy(&f, &u, 4);
  (void)dsv4kv_e4m3_encode(f);
  (void)dsv4kv_e4m3fnuz_encode(f);
  (void)dsv4kv_e2m1_encode(f);
  (void)dsv4kv_f32_to_bf16(f);
  (void)dsv4kv_e4m3_decode((uint8_t)u);
  (void)dsv4kv_e4m3fnuz_decode((uint8_t)u);
  (void)dsv4kv_e2m1_decode((uint8_t)u);
  (void)dsv4kv_ue8m0_decode((uint8_t)u);
  (void)dsv4kv_bf16_to_f32((uint16_t)u);
  g_calls++;
}

static long g_opcount[8];
static void one_iteration(Src *g) {
  pool_reset();
  g_scalars[0] = 0;
  g_big = pct(g, 12);
  int op = (int)ru(g, 7);
  g_opcount[op]++;
  switch (op) {
    case 0: op_insert(g); break;
    case 1: op_gather(g); break;
    case 2: op_global_topk(g); break;
    case 3: op_combine(g); break;
    case 4: op_flashinfer(g); break;
    case 5: op_indexer(g); break;
    default: op_misc(g); break;
  }
  pool_reset();
}

static void env_flags(void) {
  g_slow = getenv("FUZZ_SLOW") && atoi(getenv("FUZZ_SLOW"));
  g_misalign = getenv("FUZZ_MISALIGN") && atoi(getenv("FUZZ_MISALIGN"));
  g_alias = getenv("FUZZ_ALIAS") && atoi(getenv("FUZZ_ALIAS"));
  g_verbose = getenv("FUZZ_VERBOSE") && atoi(getenv("FUZZ_VERBOSE"));
  /* FUZZ_AVOID_KNOWN=1 sets both */
  int known = getenv("FUZZ_AVOID_KNOWN") && atoi(getenv("FUZZ_AVOID_KNOWN"));
  g_avoid_offset = known || (getenv("FUZZ_AVOID_OFFSET") && atoi(getenv("FUZZ_AVOID_OFFSET")));
  g_avoid_bigalloc = known || (getenv("FUZZ_AVOID_BIGALLOC") && atoi(getenv("FUZZ_AVOID_BIGALLOC")));
  if (getenv("FUZZ_IGNORE")) snprintf(g_ignore, sizeof g_ignore, "%s", getenv("FUZZ_IGNORE"));
}

static void on_alarm(int sig) {
  char b[160];
  int n = snprintf(b, sizeof b, "STUCK? iteration %ld op %s still running after 10 s\n", g_iter, g_op);
  write(2, b, (size_t)n);
}

#ifdef FUZZ_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int init;
  if (!init) { env_flags(); g_libfuzzer = 1; init = 1; }
  Src g = {data, size, 0, 0};
  g_iter++;
  one_iteration(&g);
  return 0;
}
#else
int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  double secs = argc > 2 ? atof(argv[2]) : 600;
  uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
  env_flags();
  long only = getenv("FUZZ_REPRO") ? atol(getenv("FUZZ_REPRO")) : -1;
  if (only >= 0) g_verbose = 1;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long it;
  for (it = only >= 0 ? only : 0; it < iters || only >= 0; it++) {
    g_iter = it;
    Src g = {NULL, 0, 0, seed * 0x100000001B3ull ^ (uint64_t)it * 0x9E3779B97F4A7C15ull};
    if (only >= 0) {
      one_iteration(&g);
      /* dump what was built: rebuild with the same seed for the dump */
      break;
    }
    struct timespec a0, a1;
    signal(SIGALRM, on_alarm);
    alarm(10);
    clock_gettime(CLOCK_MONOTONIC, &a0);
    one_iteration(&g);
    clock_gettime(CLOCK_MONOTONIC, &a1);
    double dt = (double)(a1.tv_sec - a0.tv_sec) + 1e-9 * (double)(a1.tv_nsec - a0.tv_nsec);
    if (dt > 1.0) fprintf(stderr, "SLOW iteration %ld (op %s): %.2f s\n", it, g_op, dt);
    if ((it & 255) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
      if (el > secs) { it++; break; }
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("iterations %ld, library calls %ld, %.1f s (seed %llu, slow %d, misalign %d, alias %d)\n", it - (only >= 0 ? only : 0),
         g_calls, el, (unsigned long long)seed, g_slow, g_misalign, g_alias);
  printf("ops: insert %ld gather %ld global_topk %ld combine %ld flashinfer %ld indexer %ld misc %ld\n", g_opcount[0],
         g_opcount[1], g_opcount[2], g_opcount[3], g_opcount[4], g_opcount[5], g_opcount[6]);
  printf("statuses (1-thread runs):");
  for (int s = 0; s <= DSV4KV_STATUS_LAST; s++)
    if (g_stat[s]) printf(" %d:%ld", s, g_stat[s]);
  printf("\n");
  int bad = 0;
  for (int k = 0; k < g_nkinds; k++) {
    printf("FINDING %-45s x %ld\n", g_kinds[k].kind, g_kinds[k].count);
    bad = 1;
  }
  if (!bad) printf("no findings\n");
  return bad;
}
#endif
