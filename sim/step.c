/* One engine step through the library, for each layer kind (see step.h for
 * the parts and step_ops.c for the calls):
 *
 *  1. synthesise the bf16 keys of the step's new tokens and insert them into
 *     the kind's SWA cache; at compress-group boundaries, insert the
 *     compressed entries and, for the ratio-4 kind, store the indexer keys;
 *  2. sparse prefill, per group of prefill requests sharing one workspace:
 *     gathers, combine_topk_swa_indices, compute_global_topk_indices_and_lens;
 *  3. build_flashinfer_mixed_sparse_indices for the decode-first mixed batch;
 *  4. gather back the newest keys of one sampled decode request.
 * After each part its outputs are checked (step_check.c); the checks are
 * timed as the simulator's "verify" op. */
#include <string.h>

#include "step.h"

/* Bytes of one workspace batch at most (several prefill requests share one). */
#define SIM_WORKSPACE_BYTES (128u << 20)

static int inserts(sim_kstep *k) {
  if (sim_ops_run(k, SIM_SCOPE_STEP))
    return -1;
  if (!k->kpre)
    return 0;
  double t0 = sim_now();
  sim_check_indexer(k);
  sim_op_time(k->ks, SIM_OP_VERIFY, t0, 1, 0);
  return 0;
}

/* The prefill items from i0 on that share one workspace: at least one, and
 * no more than SIM_WORKSPACE_BYTES.  Returns the end of the group. */
static int32_t group_end(const sim_kstep *k, int32_t i0) {
  const sim_plan *p = &k->c->plan;
  int32_t window = k->c->model->window;
  int32_t i1 = i0, N = 0, Gm = 0;
  while (i1 < p->R) {
    int32_t len = p->qsl[i1 + 1] - p->qsl[i1], sa = p->seq_after[i1];
    int32_t n = k->ratio ? sa / k->ratio : 0, g = len + window - 1 < sa ? len + window - 1 : sa;
    int32_t N2 = n > N ? n : N, G2 = g > Gm ? g : Gm;
    size_t bytes = (size_t)(i1 - i0 + 1) * (size_t)(N2 + G2) * 1024u;
    if (i1 > i0 && bytes > SIM_WORKSPACE_BYTES)
      break;
    N = N2;
    Gm = G2;
    i1++;
  }
  return i1;
}

static int sparse_prefill(sim_kstep *k) {
  const sim_plan *p = &k->c->plan;
  for (int32_t i0 = p->D, i1; i0 < p->R; i0 = i1) { /* decode items have one token each */
    i1 = group_end(k, i0);
    if (sim_ops_group(k, i0, i1) || sim_ops_run(k, SIM_SCOPE_GROUP))
      return -1;
    double t0 = sim_now();
    sim_check_group(k);
    sim_op_time(k->ks, SIM_OP_VERIFY, t0, k->g.Pg, 0);
  }
  return 0;
}

static int mixed_batch(sim_kstep *k) {
  if (sim_ops_run(k, SIM_SCOPE_BATCH))
    return -1;
  double t0 = sim_now();
  sim_check_mixed(k);
  sim_op_time(k->ks, SIM_OP_VERIFY, t0, k->c->plan.T, 0);
  return 0;
}

/* Decode tokens are never gathered by sparse prefill: gather the newest keys
 * of one sampled decode request to verify what decode steps inserted. */
static int decode_keys(sim_kstep *k) {
  if (k->c->plan.D == 0)
    return 0;
  double t0 = sim_now();
  if (sim_decode_pick(k))
    return -1;
  for (int comp = 0; comp < 2; comp++) {
    if (sim_ops_decode_gather(k, comp))
      return -1;
    sim_check_decode(k, comp);
  }
  sim_op_time(k->ks, SIM_OP_VERIFY, t0, 1, 0);
  return 0;
}

int sim_step_run(sim_ctx *c, const sim_batch *b) {
  if (sim_plan_build(c, b))
    return -1;
  for (int kind = 0; kind < c->nkinds && !c->fatal; kind++) {
    sim_kstep k;
    memset(&k, 0, sizeof k);
    k.c = c;
    k.ks = &c->kinds[kind];
    k.kind = kind;
    k.ratio = k.ks->ratio;
    if (inserts(&k) || c->fatal)
      break;
    if (sim_make_topk(&k) || c->fatal)
      break;
    if (sparse_prefill(&k) || c->fatal)
      break;
    if (mixed_batch(&k) || c->fatal)
      break;
    if (decode_keys(&k) || c->fatal)
      break;
  }
  return c->fatal ? -1 : 0;
}
