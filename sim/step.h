/* One engine step, shared by its parts (internal to step*.c):
 *
 *   step.c        the order of one step (sim_step_run) and the timing of the
 *                 checks;
 *   step_plan.c   the step's per-token arrays, scratch, the synthetic top-k
 *                 and the sampled decode request;
 *   step_ops.c    the library calls: DLTensors built from the plan, one op
 *                 table run with the same options / timing / status handling;
 *   step_check.c  what the calls returned, against the definitions.
 *
 * Data flows one way: plan -> ops -> checks.  The checks read what the ops
 * left in sim_kstep and call no library op themselves (the decode check's
 * gathers are step_ops.c's, called by step.c before the check). */
#ifndef DSV4KV_SIM_STEP_H
#define DSV4KV_SIM_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "ctx.h"

/* Slots of sim_ctx.b_scratch. */
enum {
  S_K,
  S_CK,
  S_CSLOT,
  S_KPRE,
  S_POS64,
  S_TOPK,
  S_WS,
  S_SL,
  S_SLC,
  S_GL,
  S_COMB,
  S_CLENS,
  S_G2R,
  S_VALID,
  S_GLOBAL,
  S_GLENS,
  S_DSWA,
  S_FI,
  S_FILENS,
  S_REPLAY,
  S_GIDX,
  S_ORIG,
  S_VOUT,
  S_VSL,
  S_VGL,
  S_NUM
};

/* One group of prefill requests [i0, i1) sharing one workspace [Rg, M, 512]:
 * each request's whole compressed cache at rows [0, N) of its slice, the
 * last gl tokens of its SWA cache at rows [N, N + gl). */
typedef struct {
  int32_t i0, i1, Rg, p0, Pg; /* items, first token, prefill tokens        */
  int32_t N, M;               /* compressed rows, rows per request slice   */
  int32_t *sl, *slc, *gl;     /* [Rg] seq lens, compressed lens, SWA rows  */
  uint16_t *ws;               /* [Rg, M, 512] bf16 workspace                */
  int32_t C;                  /* columns of comb                            */
  int32_t *comb, *clens;      /* combine_topk_swa_indices outputs           */
  int32_t *g2r;               /* [Pg] token -> request of the group         */
  uint8_t *valid;             /* [Pg]                                       */
  int32_t *glob, *glens;      /* global top-k outputs (NULL on SWA layers)  */
} sim_group;

/* The decode-first mixed batch of build_flashinfer_mixed_sparse_indices. */
typedef struct {
  int32_t Dk, K4, width, cbs; /* decode top-k columns, padded K, row width */
  int32_t *dswa;              /* [D, window] decode SWA slots               */
  uint8_t *valid;             /* [D]                                        */
  int32_t *replay;            /* [R]                                        */
  int32_t *fi, *filens;       /* outputs [T, width], [T]                    */
} sim_mixed;

/* One sampled decode request whose newest keys are gathered back. */
typedef struct {
  int32_t i, sa;    /* item, tokens in its cache                 */
  uint16_t *out;    /* [4, 512] gathered rows                    */
  int32_t *sl, *gl; /* [1] seq len and rows gathered             */
} sim_decode;

/* One layer kind in one step. */
typedef struct {
  sim_ctx *c;
  sim_kind_state *ks;
  int kind;
  int32_t ratio, topk, W; /* topk parameter of this step; W = columns of the top-k matrix */
  int32_t *topk_m;        /* [T, W] local top-k (decode rows first)          */
  uint16_t *keys;         /* [T, 512] bf16 keys of the new tokens            */
  int32_t G;              /* boundary tokens this step                       */
  int32_t *gidx;          /* [G] their token indices                         */
  uint16_t *ck;           /* [G, 512] compressed entries                     */
  int64_t *cslot;         /* [G] compressed slots                            */
  uint16_t *kpre;         /* [G, 128] indexer inputs (NULL: no indexer store) */
  int64_t *pos64;         /* [G] positions                                   */
  sim_group g;            /* the prefill group being run                     */
  sim_mixed m;            /* the mixed batch                                 */
  sim_decode d;           /* the decode sample                               */
} sim_kstep;

/* ---- step_plan.c ---- */

/* Builds c->plan from the batch.  0, or -1 out of memory (c->fatal). */
int sim_plan_build(sim_ctx *c, const sim_batch *b);

/* Scratch slot `which` of at least `bytes`; NULL out of memory (c->fatal). */
void *sim_scratch(sim_ctx *c, int which, size_t bytes);

/* The synthetic top-k of the step (k->topk, k->W, k->topk_m).  0, or -1. */
int sim_make_topk(sim_kstep *k);

/* Picks the step's decode sample (k->d, a seeded decode item) and its
 * buffers.  0, or -1 out of memory.  Call only with decode tokens. */
int sim_decode_pick(sim_kstep *k);

/* ---- step_ops.c ---- */

/* Where the library ops run within a step. */
typedef enum {
  SIM_SCOPE_STEP,  /* once per step: the inserts and the indexer store  */
  SIM_SCOPE_GROUP, /* once per prefill group: gathers, combine, top-k   */
  SIM_SCOPE_BATCH  /* once per step: the mixed batch's indices          */
} sim_scope;

/* Runs the ops of `scope` in order.  0, or -1 when a call failed (c->fatal). */
int sim_ops_run(sim_kstep *k, sim_scope scope);

/* Sets up k->g for the prefill items [i0, i1).  0, or -1 out of memory. */
int sim_ops_group(sim_kstep *k, int32_t i0, int32_t i1);

/* Gathers the newest rows of the decode sample from its SWA cache (up to 4)
 * or compressed cache (up to 2) into k->d.out; k->d.gl[0] rows, 0 when the
 * compressed cache has no entry yet.  0, or -1 when the call failed. */
int sim_ops_decode_gather(sim_kstep *k, int compressed);

/* ---- step_check.c ---- */

void sim_check_indexer(sim_kstep *k);
void sim_check_group(sim_kstep *k);
void sim_check_mixed(sim_kstep *k);
void sim_check_decode(sim_kstep *k, int compressed);

/* ---- shared helpers ---- */

/* Adds a call that started at t0 to op's statistics. */
static inline void sim_op_time(sim_kind_state *ks, sim_op op, double t0, int64_t rows,
                               int64_t bytes) {
  sim_opstat *s = &ks->ops[op];
  s->seconds += sim_now() - t0;
  s->calls++;
  s->rows += rows;
  s->bytes += bytes;
}

/* Adds a call that took `seconds` (GPU time, --device cuda) to op's statistics. */
static inline void sim_op_seconds(sim_kind_state *ks, sim_op op, double seconds, int64_t rows,
                                  int64_t bytes) {
  sim_opstat *s = &ks->ops[op];
  s->seconds += seconds;
  s->calls++;
  s->rows += rows;
  s->bytes += bytes;
}

/* Top-k entries a token at `pos` uses: min((pos + 1) / ratio, topk), 0 on an
 * SWA-only layer. */
static inline int32_t sim_topk_len(const sim_kstep *k, int32_t pos) {
  if (k->ratio == 0)
    return 0;
  int32_t n = (pos + 1) / k->ratio;
  return n < k->topk ? n : k->topk;
}

static inline int32_t sim_round_up(int32_t x, int32_t m) {
  return (x + m - 1) / m * m;
}

/* Slot of unit x (token or compressed entry, x >= 0) through a block-table
 * row with `unit` slots per page. */
static inline int64_t sim_map_slot(const int32_t *row, int64_t x, int32_t unit, int shift) {
  if (shift >= 0)
    return ((int64_t)row[x >> shift] << shift) | (x & (unit - 1));
  return (int64_t)row[x / unit] * unit + x % unit;
}

static inline const int32_t *sim_bt_row(const sim_ctx *c, int32_t i) {
  return c->plan.bt + (size_t)i * c->plan.bt_width;
}

static inline int64_t sim_swa_slot(const sim_ctx *c, int32_t i, int64_t pos) {
  return sim_map_slot(sim_bt_row(c, i), pos, c->bs, c->bs_shift);
}

static inline int64_t sim_comp_slot(const sim_kstep *k, int32_t i, int64_t entry) {
  return sim_map_slot(sim_bt_row(k->c, i), entry, k->ks->cbs, k->ks->cbs_shift);
}

/* First position of the window ending at pos (>= 0). */
static inline int32_t sim_swa_start(int32_t pos, int32_t window) {
  return pos - window + 1 < 0 ? 0 : pos - window + 1;
}

#endif
