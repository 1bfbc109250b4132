/* Reference index operations, transcribed from SPEC §5 (integers only).
 * Slots are computed in 64 bits and wrapped to int32, as the reference's
 * int32 arithmetic leaves them (NUMERICS §4). */
#include "support.h"

static int32_t wrap(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

void ref_global_topk(const int32_t *topk, int64_t T, int64_t K, const int32_t *t2r,
                     const int32_t *bt, int64_t R, int64_t P, int32_t bs, const uint8_t *valid,
                     int32_t *global, int32_t *lens, int64_t *skipped) {
  for (int64_t t = 0; t < T; t++) {
    int32_t req = t2r[t];
    int32_t cnt = 0; /* SPEC §7: lens counts the slots written */
    if (req < 0 || req >= R) { /* the whole row -1, counted once unless padding */
      for (int64_t j = 0; j < K; j++) global[t * K + j] = -1;
      lens[t] = 0;
      if (valid[t]) (*skipped)++;
      continue;
    }
    for (int64_t j = 0; j < K; j++) {
      int32_t x = topk[t * K + j];
      int32_t g = -1;
      if (x >= 0) {
        int32_t page = x / bs;
        if (page >= P) {
          if (valid[t]) (*skipped)++; /* padding is not corruption */
        } else {
          g = wrap((int64_t)bt[req * P + page] * bs + x % bs);
          cnt++;
        }
      }
      global[t * K + j] = g;
    }
    lens[t] = valid[t] ? cnt : 0;
  }
}

void ref_combine(const int32_t *topk, int64_t T, int64_t W, const int32_t *qsl, int64_t R,
                 const int32_t *seq, const int32_t *gl, int32_t window, int32_t cr,
                 int32_t topk_n, int32_t M, int32_t N, int32_t *combined, int64_t C,
                 int32_t *lens, int64_t *skipped) {
  int32_t base = qsl[0];
  for (int64_t r = 0; r < R; r++) {
    int32_t qs = qsl[r] - base, qe = qsl[r + 1] - base;
    int32_t q_len = qe - qs;
    int32_t start_pos = seq[r] - q_len;
    int32_t gather_start = seq[r] - gl[r];
    for (int32_t t = qs; t < qe; t++) {
      if (t < 0 || t >= T) {
        (*skipped)++;
        continue;
      }
      int32_t pos = start_pos + (t - qs);
      int32_t topk_len = cr > 0 ? imin32((pos + 1) / cr, topk_n) : 0;
      int32_t swa_start = imax32(imax32(pos - window + 1, 0), gather_start);
      int32_t swa_len = pos - swa_start + 1;
      /* SPEC §7: a length never below 0; the clamp is a skip */
      if (topk_len < 0) topk_len = 0, (*skipped)++;
      if (swa_len < 0) swa_len = 0, (*skipped)++;
      for (int32_t j = 0; j < topk_len; j++)
        combined[t * C + j] = wrap((int64_t)topk[t * W + j] + (int64_t)M * r);
      for (int32_t j = 0; j < swa_len; j++)
        combined[t * C + topk_len + j] = wrap((int64_t)M * r + N + (swa_start - gather_start) + j);
      lens[t] = topk_len + swa_len;
    }
  }
}

int32_t ref_fi_k4(const ref_fi_args *a) {
  int32_t m = a->topk > a->Dk ? a->topk : a->Dk;
  return (m + 3) / 4 * 4;
}

static int32_t remap(int32_t v, int32_t bs, int32_t span) {
  return v < 0 ? -1 : wrap((int64_t)(v / bs) * span + v % bs);
}

/* What both row kinds need: the compressed table (default: swa's) and spans. */
typedef struct {
  int32_t K4, width, Rc, Pc, sspan, cspan;
  const int32_t *cbt;
} fi_geom;

static void ref_fi_decode(const ref_fi_args *a, const fi_geom *g, int32_t d, int32_t *row, int32_t *lens,
                          int64_t *skipped) {
  for (int32_t j = 0; j < a->S; j++) row[j] = remap(a->dswa[(int64_t)d * a->S + j], a->sbs, g->sspan);
  int32_t req = a->t2r[d];
  int token_valid = !a->dvalid || a->dvalid[d];
  int32_t count = 0;
  for (int32_t j = 0; j < g->K4; j++) {
    int32_t v = j < a->Dk ? a->dcomp[(int64_t)d * a->Dk + j] : -1;
    if (a->local) {
      int valid = v >= 0;
      if (valid) {
        int32_t pg = v / a->cbs;
        if (req < 0 || req >= g->Rc || pg >= g->Pc) {
          if (token_valid) (*skipped)++; /* padding is not corruption */
          v = -1;
        } else {
          v = wrap((int64_t)g->cbt[(int64_t)req * g->Pc + pg] * a->cbs + v % a->cbs);
        }
        /* dsv4kv.h: NULL = all valid; a skipped lookup does not count, nor
         * (SPEC §7: lengths count slots written) a negative slot */
        if ((!a->dvalid || a->dvalid[d]) && v >= 0) count++;
      } else {
        v = -1;
      }
    }
    row[a->S + j] = remap(v, a->cbs, g->cspan);
  }
  int32_t extra;
  if (a->Dk == 0)
    extra = 0;
  else if (a->local)
    extra = count;
  else
    extra = a->dlens ? a->dlens[d] : a->Dk;
  if (extra < 0 || extra > a->Dk) { /* SPEC §7: clamped to the row, a skip */
    extra = extra < 0 ? 0 : a->Dk;
    if (token_valid) (*skipped)++;
  }
  lens[d] = wrap((int64_t)a->S + extra);
}

static void ref_fi_prefill(const ref_fi_args *a, const fi_geom *g, int32_t i, int32_t *row, int32_t *lens,
                           int64_t *skipped) {
  int32_t t = a->D + i;
  int32_t req = a->t2r[t];
  if (req < 0 || req >= a->R) { /* nothing can be looked up: the whole row is -1 */
    for (int32_t j = 0; j < g->width; j++) row[j] = -1;
    lens[t] = 0; /* dsv4kv.h: a row of -1 and length 0 */
    (*skipped)++;
    return;
  }
  int32_t q_len = a->qsl[req + 1] - a->qsl[req];
  int32_t start_pos = a->seq[req] - q_len;
  int32_t pos = start_pos + (t - a->qsl[req]);
  int32_t swa_start = imax32(imax32(pos - a->window + 1, 0), a->replay[req]);
  int32_t swa_len = pos - swa_start + 1;
  int32_t topk_len = a->cr > 0 ? imin32((pos + 1) / a->cr, a->topk) : 0;
  if (topk_len < 0 || topk_len > a->Wp) { /* SPEC §7: clamped to the data, a skip */
    topk_len = topk_len < 0 ? 0 : a->Wp;
    (*skipped)++;
  }
  for (int32_t j = 0; j < a->S; j++) {
    int32_t v = -1;
    if (j < swa_len) {
      int32_t q = swa_start + j;
      int32_t pg = q / a->sbs;
      if (req >= a->Rs || pg >= a->Ps)
        (*skipped)++;
      else
        v = remap(wrap((int64_t)a->sbt[(int64_t)req * a->Ps + pg] * a->sbs + q % a->sbs), a->sbs, g->sspan);
    }
    row[j] = v;
  }
  for (int32_t j = 0; j < g->K4; j++) {
    int32_t x = (j < a->Wp && j < topk_len) ? a->ptopk[(int64_t)i * a->Wp + j] : -1;
    int32_t v = -1;
    if (x >= 0) {
      int32_t pg = x / a->cbs;
      if (req >= g->Rc || pg >= g->Pc)
        (*skipped)++;
      else
        v = remap(wrap((int64_t)g->cbt[(int64_t)req * g->Pc + pg] * a->cbs + x % a->cbs), a->cbs, g->cspan);
    }
    row[a->S + j] = v;
  }
  lens[t] = a->S + topk_len;
}

void ref_flashinfer(const ref_fi_args *a, int32_t *out, int32_t *lens, int64_t *skipped) {
  fi_geom g;
  g.K4 = ref_fi_k4(a);
  g.width = a->S + g.K4;
  g.cbt = a->cbt ? a->cbt : a->sbt;
  g.Rc = a->cbt ? a->Rc : a->Rs, g.Pc = a->cbt ? a->Pc : a->Ps;
  g.sspan = a->sspan ? a->sspan : a->sbs;
  g.cspan = a->cspan ? a->cspan : a->cbs;
  for (int32_t d = 0; d < a->D; d++) ref_fi_decode(a, &g, d, out + (int64_t)d * g.width, lens, skipped);
  for (int32_t i = 0; i < a->P; i++) ref_fi_prefill(a, &g, i, out + (int64_t)(a->D + i) * g.width, lens, skipped);
}
