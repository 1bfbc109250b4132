/* The inputs of one step (see step.h): the per-token and per-request arrays
 * of the batch, scratch buffers, the synthetic top-k selections and the
 * sampled decode request. */
#include <stdio.h>
#include <string.h>

#include "rng.h"
#include "step.h"

void *sim_scratch(sim_ctx *c, int which, size_t bytes) {
  void *p = sim_buf_reserve(&c->b_scratch[which], bytes);
  if (!p && !c->fatal) {
    snprintf(c->fatal_msg, sizeof c->fatal_msg, "out of memory (%zu bytes of scratch)", bytes);
    c->fatal = c->out_of_memory = 1;
  }
  return p;
}

/* ---------------------------------------------------------------------- */
/* The plan: per-token and per-request arrays of the step                   */
/* ---------------------------------------------------------------------- */

static int plan_reserve(sim_ctx *c, int32_t T, int32_t R, int32_t width) {
  sim_plan *p = &c->plan;
  p->tok_req = sim_buf_reserve(&c->b_plan[0], (size_t)T * sizeof(int32_t));
  p->tok_pos = sim_buf_reserve(&c->b_plan[1], (size_t)T * sizeof(int32_t));
  p->tok_content = sim_buf_reserve(&c->b_plan[2], (size_t)T * sizeof(uint64_t));
  p->swa_slot = sim_buf_reserve(&c->b_plan[3], (size_t)T * sizeof(int64_t));
  p->qsl = sim_buf_reserve(&c->b_plan[4], (size_t)(R + 1) * sizeof(int32_t));
  p->seq_after = sim_buf_reserve(&c->b_plan[5], (size_t)R * sizeof(int32_t));
  p->bt = sim_buf_reserve(&c->b_plan[6], (size_t)R * (size_t)width * sizeof(int32_t));
  p->req = sim_buf_reserve(&c->b_plan[7], (size_t)R * sizeof(sim_req *));
  if (!p->tok_req || !p->tok_pos || !p->tok_content || !p->swa_slot || !p->qsl || !p->seq_after ||
      !p->bt || !p->req) {
    snprintf(c->fatal_msg, sizeof c->fatal_msg, "out of memory building step %lld",
             (long long)c->step);
    c->fatal = c->out_of_memory = 1;
    return -1;
  }
  return 0;
}

int sim_plan_build(sim_ctx *c, const sim_batch *b) {
  sim_plan *p = &c->plan;
  int32_t T = b->num_tokens, R = b->num_items, bs = c->bs;
  int32_t width = 1;
  for (int32_t i = 0; i < R; i++) {
    const sim_req *r = &c->sched.reqs[b->items[i].req];
    if (r->num_pages > width)
      width = r->num_pages;
  }
  p->T = T;
  p->D = b->num_decode;
  p->R = R;
  p->bt_width = width;
  if (plan_reserve(c, T, R, width))
    return -1;
  p->qsl[0] = 0;
  for (int32_t i = 0; i < R; i++) {
    const sim_item *it = &b->items[i];
    sim_req *r = &c->sched.reqs[it->req];
    p->req[i] = r;
    p->qsl[i + 1] = p->qsl[i] + it->len;
    p->seq_after[i] = it->start + it->len;
    int32_t *row = p->bt + (size_t)i * width;
    for (int32_t k = 0; k < width; k++)
      row[k] = k < r->num_pages ? r->pages[k] : -1;
    for (int32_t j = 0; j < it->len; j++) {
      int32_t t = p->qsl[i] + j, pos = it->start + j;
      p->tok_req[t] = i;
      p->tok_pos[t] = pos;
      p->tok_content[t] = sim_token_content(r->spec, r->id, pos);
      p->swa_slot[t] = (int64_t)r->pages[pos / bs] * bs + pos % bs;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Synthetic top-k                                                          */
/* ---------------------------------------------------------------------- */

static uint64_t gcd64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Row of W entries: min(n, k) distinct local entries of [0, n), then -1.
 * With n > k the selection is a seeded affine walk (a + j s) mod n, gcd(s, n) = 1. */
static void topk_row(int32_t *row, int32_t W, int32_t n, int32_t k, uint64_t h) {
  int32_t m = n < k ? n : k;
  if (m < 0)
    m = 0;
  if (n <= k) {
    for (int32_t j = 0; j < m; j++)
      row[j] = j;
  } else {
    uint64_t a = h % (uint64_t)n, s = 1 + (h >> 24) % (uint64_t)(n - 1);
    while (gcd64(s, (uint64_t)n) != 1)
      s = s % (uint64_t)(n - 1) + 1;
    uint64_t x = a;
    for (int32_t j = 0; j < m; j++) {
      row[j] = (int32_t)x;
      x += s;
      if (x >= (uint64_t)n)
        x -= (uint64_t)n;
    }
  }
  for (int32_t j = m; j < W; j++)
    row[j] = -1;
}

int sim_make_topk(sim_kstep *k) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  if (k->ratio == 0) {
    k->topk = 0;
    k->W = 1;
  } else if (k->ks->k->topk > 0) {
    k->topk = k->ks->k->topk;
    k->W = k->topk;
  } else { /* dense: every compressed entry of the step's longest sequence */
    int32_t mx = 1;
    for (int32_t t = 0; t < p->T; t++) {
      int32_t n = (p->tok_pos[t] + 1) / k->ratio;
      if (n > mx)
        mx = n;
    }
    k->topk = mx;
    k->W = mx;
  }
  k->topk_m = sim_scratch(c, S_TOPK, (size_t)p->T * (size_t)k->W * sizeof(int32_t) + 4);
  if (!k->topk_m)
    return -1;
  for (int32_t t = 0; t < p->T; t++) {
    int32_t *row = k->topk_m + (size_t)t * k->W;
    if (k->ratio == 0) {
      row[0] = -1;
      continue;
    }
    const sim_req *r = p->req[p->tok_req[t]];
    uint64_t h = sim_hash3(c->cfg.seed ^ 0x746f706bu, sim_hash2((uint64_t)k->kind, (uint64_t)r->id),
                           (uint64_t)p->tok_pos[t]);
    topk_row(row, k->W, (p->tok_pos[t] + 1) / k->ratio, k->topk, h);
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* The decode sample                                                        */
/* ---------------------------------------------------------------------- */

int sim_decode_pick(sim_kstep *k) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  sim_decode *d = &k->d;
  sim_rng rng =
      sim_rng_make(sim_hash3(c->cfg.seed, (uint64_t)c->step, 0x646563u + (uint64_t)k->kind));
  d->i = (int32_t)sim_rng_below(&rng, (uint64_t)p->D); /* decode items come first */
  d->sa = p->seq_after[d->i];
  d->out = sim_scratch(c, S_VOUT, 4 * 512 * sizeof(uint16_t));
  d->sl = sim_scratch(c, S_VSL, sizeof(int32_t));
  d->gl = sim_scratch(c, S_VGL, sizeof(int32_t));
  return d->out && d->sl && d->gl ? 0 : -1;
}
