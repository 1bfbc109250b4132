/*
 * fuzz.h - the shared pieces of the robustness harness (tests/fuzz/fuzz_dsv4kv.c
 * is its entry; its header comment says what the harness checks):
 *   - the random source and the run's flags and state (fuzz_dsv4kv.c),
 *   - value generators (input.c),
 *   - memory-honest tensors and caches (tensors.c),
 *   - findings and the per-call contract checks (check.c),
 *   - one driver an op (ops_cache.c, ops_index.c, ops_flashinfer.c).
 * Names shared between the files carry the prefix fz_ (fz_g_ for globals);
 * the small helpers below are static inline.
 */
#ifndef DSV4KV_FUZZ_API_H
#define DSV4KV_FUZZ_API_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static inline uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline uint64_t ru(Src *g, uint64_t n) { /* [0, n) */
  if (n <= 1) return 0;
  if (!g->p) return splitmix(&g->s) % n;
  int nb = n <= 256 ? 1 : n <= 65536 ? 2 : n <= (1ull << 32) ? 4 : 8;
  uint64_t v = 0;
  for (int b = 0; b < nb; b++) v = v << 8 | (g->i < g->n ? g->p[g->i++] : 0);
  return v % n;
}
static inline int pct(Src *g, int p) { return (int)ru(g, 100) < p; }
static inline int64_t rr(Src *g, int64_t lo, int64_t hi) { return lo + (int64_t)ru(g, (uint64_t)(hi - lo + 1)); }

/* The run's flags and state (fuzz_dsv4kv.c). */
extern int fz_g_slow, fz_g_misalign, fz_g_alias, fz_g_verbose, fz_g_libfuzzer, fz_g_avoid_offset, fz_g_avoid_bigalloc;
/* the highest status code this header defines */
static const unsigned g_max_status = DSV4KV_STATUS_LAST;
extern long fz_g_iter;
extern int fz_g_big; /* this iteration uses sizes that make the library go multi-threaded */
#define BIG(small, lo, hi) (fz_g_big ? rr(g, lo, hi) : (small))
extern const char *fz_g_op;

/* ------------------------------------------------------------------------ */
/* Findings                                                                   */
/* ------------------------------------------------------------------------ */
#define MAX_KINDS 64
struct fz_kind {
  char kind[64];
  long count;
};
extern struct fz_kind fz_g_kinds[MAX_KINDS];
extern int fz_g_nkinds;
extern char fz_g_ignore[1024];

void fz_issue(const char *kind, const char *fmt, ...);
/* Prints the iteration's scalars and tensors (for reproduction). */
void fz_dump_all(void);
extern char fz_g_scalars[1024];

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
extern Ten fz_g_pool[POOL];
extern int fz_g_npool;
extern int fz_g_mutated;       /* some argument was made invalid on purpose */
extern int fz_g_expect_err;    /* ... and that mutation must give an error  */
extern int fz_g_shape_mut;     /* fz_mkt changed a shape or rank on its own */
extern int fz_g_expect_soft;   /* the expectation is about a shape the op chose */
extern char fz_g_expect_why[160];

void fz_expect_err(const char *fmt, ...);
#define expect_soft(...) (fz_g_expect_soft = !fz_g_expect_err || fz_g_expect_soft, fz_expect_err(__VA_ARGS__))
void fz_pool_reset(void);

static const DLDataType DT_BF16 = {kDLBfloat, 16, 1}, DT_F32 = {kDLFloat, 32, 1},
                        DT_I32 = {kDLInt, 32, 1}, DT_I64 = {kDLInt, 64, 1},
                        DT_U8 = {kDLUInt, 8, 1}, DT_BOOL = {DSV4KV_DL_BOOL, 8, 1};

static inline int same_dt(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

/* Element address by logical index (harness-side strides, never the library's). */
static inline uint8_t *at(Ten *T, int64_t i0, int64_t i1, int64_t i2) {
  int64_t off = i0 * T->es[0];
  if (T->ndim > 1) off += i1 * T->es[1];
  if (T->ndim > 2) off += i2 * T->es[2];
  return T->data + off * T->elem;
}
static inline int64_t geti(Ten *T, int64_t i0, int64_t i1) {
  uint8_t *p = at(T, i0, i1, 0);
  switch (T->elem) {
    case 1: return *p;
    case 4: { int32_t v; memcpy(&v, p, 4); return v; }
    case 8: { int64_t v; memcpy(&v, p, 8); return v; }
    default: { uint16_t v; memcpy(&v, p, 2); return v; }
  }
}
static inline void seti(Ten *T, int64_t i0, int64_t i1, int64_t v) {
  uint8_t *p = at(T, i0, i1, 0);
  if (T->elem == 4) { int32_t w = (int32_t)v; memcpy(p, &w, 4); }
  else if (T->elem == 8) memcpy(p, &v, 8);
  else if (T->elem == 1) *p = (uint8_t)v;
  else { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); }
}

/* Build a tensor of `dt`, rank `ndim`, shape `shape`.  May mutate it (when
 * flags lack F_NOMUT) and records whether the mutation must be rejected. */
Ten *fz_mkt(Src *g, const char *name, DLDataType dt, int ndim, const int64_t *shape_in, int flags);
/* The DLTensor to pass (NULL when the mutation made it NULL). */
static inline const DLTensor *D(Ten *T) {
  if (!T) return NULL;
  if (T->isnull) {
    if (!T->optional) fz_expect_err("%s NULL", T->name);
    return NULL;
  }
  return &T->t;
}
static inline void resnap(Ten *T) { memcpy(T->snap, T->buf, T->nbytes); }

/* Fill every element with gen(). */
typedef int64_t (*gen_fn)(Src *g, void *ctx, int64_t lin);
void fz_fill(Ten *T, Src *g, gen_fn gen, void *ctx);

/* Values (input.c). */
/* Index values: mostly in [lo, hi], sometimes extremes. */
int64_t fz_gidx(Src *g, int64_t lo, int64_t hi);
struct range { int64_t lo, hi; int small_set; int64_t set[4]; };
int64_t fz_gen_range(Src *g, void *ctx, int64_t lin);
int64_t fz_gen_bf16(Src *g, void *ctx, int64_t lin);
int64_t fz_gen_f32(Src *g, void *ctx, int64_t lin);
int64_t fz_gen_bytes(Src *g, void *ctx, int64_t lin);
int64_t fz_gen_bool(Src *g, void *ctx, int64_t lin);

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
void fz_report_poison(dsv4kv_report *rep);
/* The report contract of a call that did not fail (dsv4kv.h, dsv4kv_report):
 * on the CPU the report carries the host counters, turns into the status the
 * call returned and into the message it left in dsv4kv_last_error().
 * `skipped` / `nonf` are the host counters (NULL when not passed), `msg` the
 * call's dsv4kv_last_error(). */
void fz_check_report(const char *tag, dsv4kv_status st, const dsv4kv_report *rep, const int64_t *skipped,
                     const int64_t *nonf, const char *msg);
extern long fz_g_stat[DSV4KV_STATUS_LAST + 1];
extern long fz_g_calls;
/* Runs call with num_threads 1, 2 and (NULL opt | 3 | 0); checks everything;
 * r1 receives the 1-thread result (outputs copied). */
void fz_exec3(call_fn f, void *ctx, Ten **outs, int nouts, const char *const *names, int check_nf, Res *r1);
void fz_res_free(Res *r);

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
void fz_mk_cache(Src *g, CacheCfg *c, int indexer, int is_out);
const dsv4kv_cache_desc *fz_cache_desc(Src *g, CacheCfg *c);
/* byte range [off, off+n) of the cache (relative to data) may be written */
void fz_allow(Ten *T, int64_t off, int64_t n);
static inline void allow_none(Ten *T) { memset(T->allowed, 0, T->nbytes); }

/* ------------------------------------------------------------------------ */
/* The op drivers (ops_*.c): one random call each, checked by fz_exec3       */
/* ------------------------------------------------------------------------ */
static inline int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
void fz_op_insert(Src *g);
void fz_op_gather(Src *g);
void fz_op_indexer(Src *g);
void fz_op_global_topk(Src *g);
void fz_op_combine(Src *g);
void fz_op_flashinfer(Src *g);

#endif
