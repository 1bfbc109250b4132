/* CUDA flashinfer mixed sparse indices (SPEC §5.3; CPU:
 * src/cpu/index_ops_cpu.c): the general kernel for any strides (a block a
 * row, a thread an entry, 64-bit offsets), the 4-entry kernels for rows of
 * 16-byte aligned groups with 32-bit offsets, and the launcher.  Integer
 * arithmetic wraps to int32 as the reference's does; every table lookup is
 * bounds-checked first and a failed one writes -1 and is counted, with the
 * CPU's keys. */
#include <string.h>

#include "cuda/index_ops_cuda.cuh"

/* ---- the general kernel ---------------------------------------------------- */
/* A block table with its page divisor. */
typedef struct {
  dix t;
  int64_t rows, cols;
  dpagediv pd;
} dtable;

typedef struct {
  dix dswa, dcomp, dcomp_lens, dvalid, ptopk, qsl, seq_lens, replay, req, out, lens;
  dtable swa_bt, comp_bt;
  int32_t has_dcomp_lens, has_dvalid, local;
  int64_t D, P, S, Dk, K4, Wp, R;
  int32_t swa_span, c_span, window_size, compress_ratio, topk;
  dnote note;
} fi_params;

/* Prefill token t's SWA window and top-k length (request req, in range);
 * a top-k length past the row is clamped and noted by thread 0 (SPEC §7). */
typedef struct {
  int64_t swa_start, swa_len, topk_len;
} fi_lens;

/* The lengths from request req's query range [q0, q1), sequence length and
 * replay start. */
static __device__ __forceinline__ fi_lens fi_lens_core(int64_t q0, int64_t q1, int64_t seq_len, int64_t replay,
                                                       int64_t t, int64_t req, int32_t window_size,
                                                       int32_t compress_ratio, int32_t topk, int64_t Wp, dnote note) {
  const int64_t pos = seq_len - (q1 - q0) + (t - q0);
  fi_lens z;
  z.swa_start = pos - window_size + 1;
  if (z.swa_start < 0) z.swa_start = 0;
  if (z.swa_start < replay) z.swa_start = replay;
  z.swa_len = pos - z.swa_start + 1;
  z.topk_len = 0;
  if (compress_ratio > 0) {
    /* 32-bit division where pos + 1 fits (every real position): the 64-bit
     * one is a subroutine of about 70 instructions every thread would run */
    const int64_t n = pos + 1;
    z.topk_len = (uint64_t)n <= UINT32_MAX ? (int64_t)((uint32_t)n / (uint32_t)compress_ratio) : n / compress_ratio;
    if (z.topk_len > topk) z.topk_len = topk;
  }
  if (z.topk_len < 0 || z.topk_len > Wp) { /* the length would promise entries the row lacks */
    const int64_t w = z.topk_len < 0 ? 0 : Wp;
    if (threadIdx.x == 0)
      dnote1(note, skip_key(t, 0, 16), SKIP_LENGTH_CLAMPED, t,
             z.topk_len < 0 ? LEN_TOPK_BEFORE_START : LEN_PREFILL_TOPK_WIDTH, z.topk_len, w, req,
             Wp < topk ? Wp : topk);
    z.topk_len = w;
  }
  return z;
}

static __device__ __forceinline__ fi_lens fi_prefill_lens_of(const fi_params *p, int64_t t, int64_t req) {
  return fi_lens_core(dix_i32(p->qsl, req), dix_i32(p->qsl, req + 1), dix_i32(p->seq_lens, req),
                      dix_i32(p->replay, req), t, req, p->window_size, p->compress_ratio, p->topk, p->Wp, p->note);
}

/* Decode token d's length from n entries (SPEC §5.3); a length input past
 * its row is clamped (SPEC §7).  One thread calls it. */
static __device__ __forceinline__ int32_t fi_decode_len(dnote note, int64_t d, int64_t n, int64_t Dk, int64_t S,
                                                        int token_valid, int64_t req) {
  if (n < 0 || n > Dk) {
    const int64_t w = n < 0 ? 0 : Dk;
    if (token_valid) dnote1(note, skip_key(d, 0, 16), SKIP_LENGTH_CLAMPED, d, LEN_DECODE_COMPRESSED, n, w, req, Dk);
    n = w;
  }
  return wrap32(S + n);
}

/* `hits`: the counted local entries. */
static __device__ __forceinline__ void fi_decode_store_len(const fi_params *p, int64_t d, int64_t hits,
                                                           int token_valid, int64_t req) {
  int64_t n = 0;
  if (p->Dk > 0) n = p->local ? hits : p->has_dcomp_lens ? dix_i32(p->dcomp_lens, d) : p->Dk;
  *(int32_t *)(p->lens.data + d * p->lens.s0 * 4) = fi_decode_len(p->note, d, n, p->Dk, p->S, token_valid, req);
}

/* Physical token index of a slot when pages are `span` tokens apart. */
static __device__ __forceinline__ int32_t remap(int64_t v, dpagediv d, int64_t span) {
  return v < 0 ? -1 : wrap32(dpd_page(d, v) * span + dpd_off(d, v));
}

/* Slot of position `pos` of request `req`, or -1 when the lookup would leave
 * the table (noted when `count_it`; padding is not). */
static __device__ int64_t slot_of(dtable bt, int which, int64_t req, int64_t pos, dnote n, int count_it,
                                  int64_t key) {
  const int64_t lp = pos < 0 ? -1 : dpd_page(bt.pd, pos);
  if (req < 0 || req >= bt.rows || pos < 0 || lp >= bt.cols) {
    if (count_it) dnote1(n, key, SKIP_TABLE_LOOKUP, which, req, lp, pos, bt.rows, bt.cols);
    return -1;
  }
  return (int64_t)wrap32((int64_t)dix_i32_2(bt.t, req, lp) * bt.pd.bs + dpd_off(bt.pd, pos));
}

static __device__ void fi_decode_row(const fi_params *p, int64_t d) {
  const int64_t tid = threadIdx.x, bd = blockDim.x;
  for (int64_t j = tid; j < p->S; j += bd) *dix_i32_2p(p->out, d, j) = remap(dix_i32_2(p->dswa, d, j), p->swa_bt.pd, p->swa_span);
  const int token_valid = p->has_dvalid ? dix_bool(p->dvalid, d) : 1; /* padding: not counted */
  const int64_t req = dix_i32(p->req, d);
  int64_t count = 0;
  for (int64_t j0 = 0; j0 < p->K4; j0 += bd) {
    const int64_t j = j0 + tid;
    int hit = 0;
    if (j < p->K4) {
      int64_t v = j < p->Dk ? dix_i32_2(p->dcomp, d, j) : -1;
      if (p->local && v >= 0) {
        v = slot_of(p->comp_bt, 1, req, v, p->note, token_valid, skip_key(d, 1 + j, 16));
        hit = v >= 0 && token_valid;
      }
      *dix_i32_2p(p->out, d, p->S + j) = remap(v, p->comp_bt.pd, p->c_span);
    }
    count += __syncthreads_count(hit);
  }
  if (tid == 0) fi_decode_store_len(p, d, count, token_valid, req);
}

static __device__ void fi_prefill_row(const fi_params *p, int64_t t) {
  const int64_t tid = threadIdx.x, bd = blockDim.x;
  const int64_t S = p->S, i = t - p->D;
  const int64_t req = dix_i32(p->req, t);
  int32_t *lens = (int32_t *)(p->lens.data + t * p->lens.s0 * 4);
  if (req < 0 || req >= p->R) {
    if (tid == 0) dnote1(p->note, skip_key(t, 0, 16), SKIP_FLASHINFER_REQUEST, t, req, p->R, 0, 0, 0);
    for (int64_t j = tid; j < S + p->K4; j += bd) *dix_i32_2p(p->out, t, j) = -1;
    if (tid == 0) *lens = 0;
    return;
  }
  const fi_lens z = fi_prefill_lens_of(p, t, req);
  const int64_t swa_start = z.swa_start, swa_len = z.swa_len, topk_len = z.topk_len;
  for (int64_t j = tid; j < S; j += bd) {
    int64_t v = -1;
    if (j < swa_len) v = slot_of(p->swa_bt, 0, req, swa_start + j, p->note, 1, skip_key(t, 1 + j, 16));
    *dix_i32_2p(p->out, t, j) = remap(v, p->swa_bt.pd, p->swa_span);
  }
  for (int64_t j = tid; j < p->K4; j += 2 * bd) { /* two entries in flight */
    const int64_t j2 = j + bd;
    const int64_t x = j < topk_len ? dix_i32_2(p->ptopk, i, j) : -1, x2 = j2 < topk_len ? dix_i32_2(p->ptopk, i, j2) : -1;
    const int64_t v = x >= 0 ? slot_of(p->comp_bt, 1, req, x, p->note, 1, skip_key(t, 1 + S + j, 16)) : -1;
    const int64_t v2 = x2 >= 0 ? slot_of(p->comp_bt, 1, req, x2, p->note, 1, skip_key(t, 1 + S + j2, 16)) : -1;
    *dix_i32_2p(p->out, t, S + j) = remap(v, p->comp_bt.pd, p->c_span);
    if (j2 < p->K4) *dix_i32_2p(p->out, t, S + j2) = remap(v2, p->comp_bt.pd, p->c_span);
  }
  if (tid == 0) *lens = wrap32(S + topk_len);
}

__global__ void __launch_bounds__(CUDA_BLOCK) flashinfer_kernel(fi_params p) {
  if (dnote_idle(p.note)) return;
  for (int64_t t = blockIdx.x; t < p.D + p.P; t += gridDim.x) {
    if (t < p.D)
      fi_decode_row(&p, t);
    else
      fi_prefill_row(&p, t);
  }
}

/* ---- rows of 4-entry groups ------------------------------------------------
 * Where sparse_indices has contiguous, 16-byte aligned rows and S is a
 * multiple of 4 (the usual case: S = window = 128, K4 = top-k), a thread
 * takes a group of 4 columns: the group's inputs (16 bytes where its input
 * rows are contiguous and aligned, else 4 loads), its 4 table lookups in
 * flight together, one 16-byte store.  A block a row with a thread a group
 * (whole warps, at most 256), as the 4-entry global top-k: the chain request
 * -> request's scalars -> table entry -> store is paid about once a row.
 * Branch-free entries: a lookup is one unsigned compare against a per-row
 * limit (0 when the request is outside the table) and a predicated load; a
 * thread whose groups may hold a skipped entry (a flag a group: one compare
 * of its largest entry) notes them after its stores on a slow path, entries
 * read again, with the general kernel's keys and values.  32-bit offsets (the host
 * takes this path only where rows, widths and byte strides fit); power-of-two
 * block sizes have a kernel without the division. */
typedef struct {
  const uint8_t *dswa, *dcomp, *dlens, *dvalid, *ptopk, *qsl, *seq, *replay, *req, *sbt, *cbt;
  uint8_t *out, *lens;
  uint32_t dswa_s0, dswa_s1, dcomp_s0, dcomp_s1, ptopk_s0, ptopk_s1; /* strides in bytes */
  uint32_t dlens_s, dvalid_s, qsl_s, seq_s, replay_s, req_s, out_s, lens_s, sbt_s0, sbt_s1, cbt_s0, cbt_s1;
  uint32_t D, T, G, Gs, S, Dk, Wp; /* G = (S + K4) / 4 groups a row, the first Gs = S / 4 SWA */
  uint32_t R32, srows32, crows32;  /* min(rows, 2^31): (uint32)req is in range below them */
  uint32_t slim, clim;             /* min(cols * bs, 2^31): u is looked up when u < lim */
  uint32_t sbs, cbs, sgap, cgap; /* gap: span - block size */
  int32_t sshift, cshift, window_size, compress_ratio, topk;
  int32_t vswa, vcomp, vptopk; /* 16-byte group loads of decode_swa / decode_compressed / prefill_topk rows */
  int32_t has_dlens, has_dvalid, local;
  int64_t R, srows, scols, crows, ccols; /* for the notes */
  dnote note;
} fi4_params;

/* remap (SPEC §5.3) of a 32-bit slot: -1 when negative; gap = span - bs
 * (lp x span + off = v + lp x gap, modulo 2^32 as wrap32's). */
static __device__ __forceinline__ int32_t remap4(int32_t v, uint32_t bs, int shift, uint32_t gap, const int POW2) {
  const uint32_t u = (uint32_t)v, lp = POW2 ? u >> shift : u / bs;
  return v < 0 ? -1 : (int32_t)(u + lp * gap);
}

/* The slot of position u through the table row at `row` (entry u / bs), or
 * -1 when u >= lim (not read). */
static __device__ __forceinline__ int32_t lookup4(const uint8_t *row, uint32_t s1, uint32_t u, uint32_t lim,
                                                  uint32_t bs, int shift, const int POW2) {
  const uint32_t lp = POW2 ? u >> shift : u / bs, off = POW2 ? u & (bs - 1) : u - lp * bs;
  const int32_t e = load_if_below((const int32_t *)at_wide(row, lp, s1), u, lim);
  return u < lim ? (int32_t)((uint32_t)e * bs + off) : -1;
}

/* remap4(lookup4(...)) with one select: -1 when not read or negative. */
static __device__ __forceinline__ int32_t lookup_remap4(const uint8_t *row, uint32_t s1, uint32_t u, uint32_t lim,
                                                        uint32_t bs, int shift, uint32_t gap, const int POW2) {
  const uint32_t lp = POW2 ? u >> shift : u / bs, off = POW2 ? u & (bs - 1) : u - lp * bs;
  const uint32_t v = (uint32_t)load_if_below((const int32_t *)at_wide(row, lp, s1), u, lim) * bs + off;
  const uint32_t vp = POW2 ? v >> shift : v / bs;
  return u < lim && (int32_t)v >= 0 ? (int32_t)(v + vp * gap) : -1;
}

/* Entries j .. j + 3 of a row (those at or past n: -1); vec: the row is
 * contiguous, 16-byte aligned and n <= its width, a multiple of 4 when j < n. */
static __device__ __forceinline__ void load4(const uint8_t *row, uint32_t j, uint32_t n, uint32_t s1, int vec,
                                             int32_t *x) {
  if (vec) {
    const int4 v = j < n ? *(const int4 *)(row + 4 * j) : make_int4(-1, -1, -1, -1);
    x[0] = v.x, x[1] = j + 1 < n ? v.y : -1, x[2] = j + 2 < n ? v.z : -1, x[3] = j + 3 < n ? v.w : -1;
  } else {
#pragma unroll
    for (int k = 0; k < 4; k++) x[k] = j + k < n ? *(const int32_t *)at(row, j + k, s1) : -1;
  }
}

/* Notes position pos (>= 0) when its request or page lies outside table
 * `which` (rows x cols, block size bs), with the general kernel's key and
 * values.  Inline: a call in the kernel would hold the loops' values in
 * registers kept across it (spills in the loops at 32 registers). */
static __device__ __forceinline__ void fi4_note(dnote n, int64_t t, int64_t key, int which, int64_t req, int64_t pos,
                                             int64_t bs, int64_t rows, int64_t cols) {
  if (pos >= 0 && (req < 0 || req >= rows || pos / bs >= cols))
    dnote1(n, skip_key(t, key, 16), SKIP_TABLE_LOOKUP, which, req, pos / bs, pos, rows, cols);
}

/* The skipped local lookups of this thread's groups of decode row d (rare:
 * after its stores, entries read again). */
static __device__ __forceinline__ void fi4_note_decode(const fi4_params *q, uint32_t d, int32_t req,
                                                       const uint8_t *comp) {
  for (uint32_t g = threadIdx.x; g < q->G; g += blockDim.x)
    for (uint32_t k = 0, j = 4 * (g - q->Gs); g >= q->Gs && k < 4; k++, j++)
      if (j < q->Dk) fi4_note(q->note, d, 1 + j, 1, req, *(const int32_t *)at(comp, j, q->dcomp_s1), q->cbs, q->crows, q->ccols);
}

/* Decode token d (the block together; sh: a word a warp).  Local entries
 * are counted with one barrier a row, only in local mode. */
static __device__ __forceinline__ void fi4_decode_row(const fi4_params *q, uint32_t d, int32_t *sh, const int POW2) {
  const int token_valid = q->has_dvalid ? *at(q->dvalid, d, q->dvalid_s) != 0 : 1; /* padding: not counted */
  const int32_t req = *(const int32_t *)at(q->req, d, q->req_s);
  const int req_ok = (uint32_t)req < q->crows32;
  const uint32_t lim = req_ok ? q->clim : 0u;
  const int32_t limm1 = token_valid ? (int32_t)(lim - 1u) : INT32_MAX; /* a larger entry may be a noted skip */
  const uint8_t *swa = at(q->dswa, d, q->dswa_s0), *comp = at(q->dcomp, d, q->dcomp_s0);
  const uint8_t *crow = at(q->cbt, req_ok ? (uint32_t)req : 0u, q->cbt_s0);
  uint8_t *out = (uint8_t *)at(q->out, d, q->out_s);
  uint32_t g = threadIdx.x;
  for (; g < q->Gs; g += blockDim.x) { /* the SWA groups, then the compressed ones */
    int32_t x[4];
    load4(swa, 4 * g, q->S, q->dswa_s1, q->vswa, x);
    *(int4 *)(out + 16 * g) = make_int4(remap4(x[0], q->sbs, q->sshift, q->sgap, POW2),
                                        remap4(x[1], q->sbs, q->sshift, q->sgap, POW2),
                                        remap4(x[2], q->sbs, q->sshift, q->sgap, POW2),
                                        remap4(x[3], q->sbs, q->sshift, q->sgap, POW2));
  }
  int hits = 0, skip = 0; /* skip: a group may hold a skipped entry */
  for (; g < q->G; g += blockDim.x) {
    const uint32_t j = 4 * (g - q->Gs);
    int32_t x[4], y[4];
    load4(comp, j, q->Dk, q->dcomp_s1, q->vcomp, x);
#pragma unroll
    for (int k = 0; k < 4; k++) {
      int32_t v = x[k];
      if (q->local) {
        v = lookup4(crow, q->cbt_s1, (uint32_t)x[k], lim, q->cbs, q->cshift, POW2);
        hits += v >= 0;
      }
      y[k] = remap4(v, q->cbs, q->cshift, q->cgap, POW2);
    }
    *(int4 *)(out + 16 * g) = make_int4(y[0], y[1], y[2], y[3]);
    skip |= max(max(x[0], x[1]), max(x[2], x[3])) > limm1;
  }
  if (q->local && skip) fi4_note_decode(q, d, req, comp);
  int64_t n = 0;
  if (q->Dk > 0 && q->local) {
    hits = __reduce_add_sync(FULL_MASK, token_valid ? hits : 0);
    if (blockDim.x > 32) {
      if (lane_id() == 0) sh[threadIdx.x >> 5] = hits;
      __syncthreads();
      hits = threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : 0;
      hits = __reduce_add_sync(FULL_MASK, hits); /* warp 0 has the row's count */
    }
    n = hits;
    if (blockDim.x > 32 && d + gridDim.x < q->T) __syncthreads(); /* sh is free for the next row */
  }
  if (threadIdx.x == 0) {
    if (q->Dk > 0 && !q->local) n = q->has_dlens ? *(const int32_t *)at(q->dlens, d, q->dlens_s) : (int64_t)q->Dk;
    *(int32_t *)at(q->lens, d, q->lens_s) = fi_decode_len(q->note, d, n, q->Dk, q->S, token_valid, req);
  }
}

/* Prefill token t whose request is outside [0, R): a row of G groups of -1
 * at out, length 0. */
static __device__ __noinline__ void fi4_bad_request(dnote n, uint8_t *out, int32_t *lens, uint32_t G, uint32_t t,
                                                    int32_t req, int64_t R) {
  if (threadIdx.x == 0) dnote1(n, skip_key(t, 0, 16), SKIP_FLASHINFER_REQUEST, t, req, R, 0, 0, 0);
  for (uint32_t g = threadIdx.x; g < G; g += blockDim.x) *(int4 *)(out + 16 * g) = make_int4(-1, -1, -1, -1);
  if (threadIdx.x == 0) *lens = 0;
}

/* A prefill row's request and window: req outside [0, R) gives a row of -1
 * (nsw = ntk = 0). */
typedef struct {
  int32_t req;
  uint32_t nsw, ntk; /* SWA entries (swa_len >= 0), top-k entries (topk_len) */
  int64_t swa_start;
} fi4_head;

static __device__ __forceinline__ fi4_head fi4_head_of(const fi4_params *q, uint32_t t) {
  fi4_head h = {*(const int32_t *)at(q->req, t, q->req_s), 0, 0, 0};
  if ((uint32_t)h.req >= q->R32) return h;
  const uint32_t r = (uint32_t)h.req;
  const fi_lens z = fi_lens_core(*(const int32_t *)at(q->qsl, r, q->qsl_s), *(const int32_t *)at(q->qsl, r + 1, q->qsl_s),
                                 *(const int32_t *)at(q->seq, r, q->seq_s), *(const int32_t *)at(q->replay, r, q->replay_s),
                                 t, h.req, q->window_size, q->compress_ratio, q->topk, q->Wp, q->note);
  /* 0 <= swa_len <= window_size <= S once positive; 0 <= topk_len <= Wp */
  h.nsw = z.swa_len > 0 ? (uint32_t)z.swa_len : 0u, h.ntk = (uint32_t)z.topk_len, h.swa_start = z.swa_start;
  return h;
}

/* The skipped lookups of this thread's groups of prefill row t (rare: after
 * its stores, entries read again). */
static __device__ __forceinline__ void fi4_note_prefill(const fi4_params *q, uint32_t t, const fi4_head *h,
                                                        const uint8_t *tk) {
  for (uint32_t g = threadIdx.x; g < q->G; g += blockDim.x)
    for (uint32_t k = 0; k < 4; k++) {
      const uint32_t j = g < q->Gs ? 4 * g + k : 4 * (g - q->Gs) + k;
      if (g < q->Gs && j < h->nsw)
        fi4_note(q->note, t, 1 + j, 0, h->req, h->swa_start + j, q->sbs, q->srows, q->scols);
      else if (g >= q->Gs && j < h->ntk)
        fi4_note(q->note, t, 1 + q->S + j, 1, h->req, *(const int32_t *)at(tk, j, q->ptopk_s1), q->cbs, q->crows,
                 q->ccols);
    }
}

/* Prefill token t (the block together): SWA groups look up consecutive
 * positions, top-k groups their entries; no barrier. */
static __device__ __forceinline__ void fi4_prefill_row(const fi4_params *q, uint32_t t, const int POW2) {
  const fi4_head h = fi4_head_of(q, t);
  const int32_t req = h.req;
  if ((uint32_t)req >= q->R32) {
    fi4_bad_request(q->note, (uint8_t *)at(q->out, t, q->out_s), (int32_t *)at(q->lens, t, q->lens_s), q->G, t, req,
                    q->R);
    return;
  }
  /* swa_start >= 0; positions from 2^31 on pass every table (the host takes
   * this path only when cols x bs <= 2^31) */
  const uint32_t r = (uint32_t)req, nsw = h.nsw, ntk = h.ntk;
  const uint32_t b = h.swa_start < ((int64_t)1 << 31) ? (uint32_t)h.swa_start : 1u << 31;
  const int s_ok = r < q->srows32, c_ok = r < q->crows32;
  const uint32_t slim = s_ok ? q->slim : 0u, clim = c_ok ? q->clim : 0u;
  const uint8_t *srow = at(q->sbt, s_ok ? r : 0u, q->sbt_s0), *crow = at(q->cbt, c_ok ? r : 0u, q->cbt_s0);
  const uint8_t *tk = at(q->ptopk, t - q->D, q->ptopk_s0);
  uint8_t *out = (uint8_t *)at(q->out, t, q->out_s);
  uint32_t g = threadIdx.x;
  int skip = 0; /* a group may hold a skipped entry */
  for (; g < q->Gs; g += blockDim.x) { /* the SWA groups, then the top-k ones */
    const uint32_t j = 4 * g;
    int32_t y[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const uint32_t u = j + k < nsw ? b + j + k : UINT32_MAX;
      y[k] = lookup_remap4(srow, q->sbt_s1, u, slim, q->sbs, q->sshift, q->sgap, POW2);
    }
    *(int4 *)(out + 16 * g) = make_int4(y[0], y[1], y[2], y[3]);
    skip |= j < nsw && b + min(j + 3, nsw - 1) >= slim; /* the group's last position */
  }
  for (; g < q->G; g += blockDim.x) {
    const uint32_t j = 4 * (g - q->Gs);
    int32_t x[4], y[4];
    load4(tk, j, ntk, q->ptopk_s1, q->vptopk, x);
#pragma unroll
    for (int k = 0; k < 4; k++)
      y[k] = lookup_remap4(crow, q->cbt_s1, (uint32_t)x[k], clim, q->cbs, q->cshift, q->cgap, POW2);
    *(int4 *)(out + 16 * g) = make_int4(y[0], y[1], y[2], y[3]);
    skip |= max(max(x[0], x[1]), max(x[2], x[3])) > (int32_t)(clim - 1u);
  }
  if (skip) fi4_note_prefill(q, t, &h, tk);
  if (threadIdx.x == 0) *(int32_t *)at(q->lens, t, q->lens_s) = (int32_t)(q->S + ntk);
}

/* Row after row of the grid; POW2: both block sizes are powers of two. */
static __device__ __forceinline__ void fi4_rows(const fi4_params *q, const int POW2) {
  if (dnote_idle(q->note)) return;
  __shared__ int32_t sh[CUDA_BLOCK / 32];
  for (uint32_t t = blockIdx.x; t < q->T; t += gridDim.x) {
    if (t < q->D)
      fi4_decode_row(q, t, sh, POW2);
    else
      fi4_prefill_row(q, t, POW2);
  }
}

__global__ void __launch_bounds__(CUDA_BLOCK, 8) flashinfer_rows4_pow2_kernel(fi4_params q) { fi4_rows(&q, 1); }
__global__ void __launch_bounds__(CUDA_BLOCK, 8) flashinfer_rows4_div_kernel(fi4_params q) { fi4_rows(&q, 0); }

/* Whole warps, a thread a group where the row has at most 256 groups, else
 * the fewest warps for as many groups a thread as 256 threads would take
 * (288 groups: 160 threads of 2, not 256 with 32 of them taking a second). */
static unsigned fi4_threads(int64_t groups) {
  const int64_t per = (groups + CUDA_BLOCK - 1) / CUDA_BLOCK, n = per < 1 ? 1 : (groups + per - 1) / per;
  return (unsigned)((n + 31) / 32 * 32);
}

/* min(cols x bs, 2^31) of a block table. */
static uint32_t fi4_lim(const tview *bt, int64_t bs) {
  const int64_t big = (int64_t)1 << 31, cols = bt->shape[1];
  return (uint32_t)(cols > big / bs ? big : cols * bs);
}

/* The strides of the call in bytes, 0 when one does not fit 32 bits. */
static int fi4_strides(const flashinfer_args *a, fi4_params *q) {
  int ok = stride32(&a->dswa, 0, 4, &q->dswa_s0) && stride32(&a->dswa, 1, 4, &q->dswa_s1) &&
           stride32(&a->ptopk, 0, 4, &q->ptopk_s0) && stride32(&a->ptopk, 1, 4, &q->ptopk_s1) &&
           stride32(&a->qsl, 0, 4, &q->qsl_s) && stride32(&a->seq_lens, 0, 4, &q->seq_s) &&
           stride32(&a->replay, 0, 4, &q->replay_s) && stride32(&a->req, 0, 4, &q->req_s) &&
           stride32(&a->out, 0, 4, &q->out_s) && stride32(&a->lens, 0, 4, &q->lens_s) &&
           stride32(&a->swa_bt, 0, 4, &q->sbt_s0) && stride32(&a->swa_bt, 1, 4, &q->sbt_s1) &&
           stride32(&a->comp_bt, 0, 4, &q->cbt_s0) && stride32(&a->comp_bt, 1, 4, &q->cbt_s1);
  if (a->has_dcomp) ok = ok && stride32(&a->dcomp, 0, 4, &q->dcomp_s0) && stride32(&a->dcomp, 1, 4, &q->dcomp_s1);
  if (a->has_dcomp_lens) ok = ok && stride32(&a->dcomp_lens, 0, 4, &q->dlens_s);
  if (a->has_dvalid) ok = ok && stride32(&a->dvalid, 0, 1, &q->dvalid_s);
  return ok;
}

/* The 4-entry kernels' parameters; 0 when the call does not fit them (rows
 * of sparse_indices not contiguous and 16-byte aligned, S not a multiple of
 * 4, sizes or strides past 32 bits, an SWA table of more than 2^31
 * positions): the general kernel runs. */
static int fi4_params_of(const flashinfer_args *a, fi4_params *q) {
  const int64_t big = (int64_t)1 << 31, T = a->D + a->P;
  if (a->S % 4 || T >= big || a->S + a->K4 >= (1 << 28) || a->Wp >= big || a->Dk >= big ||
      !rows4_view(&a->out, a->S + a->K4) || a->swa_bt.shape[1] > big / a->swa_bs)
    return 0;
  memset(q, 0, sizeof *q);
  if (!fi4_strides(a, q)) return 0;
  q->dswa = a->dswa.data, q->dcomp = a->has_dcomp ? a->dcomp.data : a->dswa.data, q->ptopk = a->ptopk.data;
  q->dlens = a->dcomp_lens.data, q->dvalid = a->dvalid.data, q->qsl = a->qsl.data, q->seq = a->seq_lens.data;
  q->replay = a->replay.data, q->req = a->req.data, q->sbt = a->swa_bt.data, q->cbt = a->comp_bt.data;
  q->out = a->out.data, q->lens = a->lens.data;
  q->D = (uint32_t)a->D, q->T = (uint32_t)T, q->G = (uint32_t)((a->S + a->K4) / 4), q->Gs = (uint32_t)(a->S / 4);
  q->S = (uint32_t)a->S, q->Dk = (uint32_t)a->Dk, q->Wp = (uint32_t)a->Wp;
  q->R32 = (uint32_t)(a->R < big ? a->R : big);
  q->srows32 = (uint32_t)(a->swa_bt.shape[0] < big ? a->swa_bt.shape[0] : big);
  q->crows32 = (uint32_t)(a->comp_bt.shape[0] < big ? a->comp_bt.shape[0] : big);
  q->slim = fi4_lim(&a->swa_bt, a->swa_bs), q->clim = fi4_lim(&a->comp_bt, a->c_bs);
  q->sbs = (uint32_t)a->swa_bs, q->cbs = (uint32_t)a->c_bs, q->sgap = (uint32_t)(a->swa_span - a->swa_bs);
  q->cgap = (uint32_t)(a->c_span - a->c_bs), q->sshift = dpagediv_of(a->swa_bs).shift, q->cshift = dpagediv_of(a->c_bs).shift;
  q->window_size = a->window_size, q->compress_ratio = a->compress_ratio, q->topk = a->topk;
  q->vswa = a->D > 0 && rows4_view(&a->dswa, a->S);
  q->vcomp = a->D > 0 && a->has_dcomp && rows4_view(&a->dcomp, a->Dk);
  q->vptopk = a->P > 0 && rows4_view(&a->ptopk, a->Wp);
  q->has_dlens = a->has_dcomp_lens, q->has_dvalid = a->has_dvalid, q->local = a->local;
  q->R = a->R, q->srows = a->swa_bt.shape[0], q->scols = a->swa_bt.shape[1];
  q->crows = a->comp_bt.shape[0], q->ccols = a->comp_bt.shape[1];
  return 1;
}

/* Launches the 4-entry kernel and returns 1 where the call fits it; else 0. */
static int rows4_flashinfer(const flashinfer_args *a, dnote note, const cuda_call *call) {
  fi4_params q;
  if (!fi4_params_of(a, &q)) return 0;
  q.note = note;
  const unsigned f = (unsigned)cuda_index_threads_forced();
  const unsigned grid = index_grid(q.T), w = fi4_threads(q.G), cap = index_block(q.T);
  const unsigned threads = f ? f : w < cap ? w : cap; /* many rows: fewer warps a row, several groups a thread */
  for (;;) { /* pass 1 (describe) only with a report */
    if (q.sshift >= 0 && q.cshift >= 0)
      flashinfer_rows4_pow2_kernel<<<grid, threads, 0, call->stream>>>(q);
    else
      flashinfer_rows4_div_kernel<<<grid, threads, 0, call->stream>>>(q);
    if (!q.note.rep || q.note.detail) break;
    q.note.detail = 1;
  }
  return 1;
}

static dtable dtable_of(const tview *v, int32_t bs) {
  dtable t = {dix_of(v), v->shape[0], v->shape[1], dpagediv_of(bs)};
  return t;
}

extern "C" dsv4kv_status cuda_flashinfer(const flashinfer_args *a, const exec_opts *o, dsv4kv_report *r) {
  cuda_call call;
  dsv4kv_status st = cuda_enter(&call, a->out.device_id, o);
  if (st) return st;
  fi_params p;
  p.dswa = dix_of(&a->dswa);
  p.dcomp = dix_of(&a->dcomp);
  p.dcomp_lens = dix_of(&a->dcomp_lens);
  p.dvalid = dix_of(&a->dvalid);
  p.ptopk = dix_of(&a->ptopk);
  p.qsl = dix_of(&a->qsl);
  p.seq_lens = dix_of(&a->seq_lens);
  p.replay = dix_of(&a->replay);
  p.req = dix_of(&a->req);
  p.out = dix_of(&a->out);
  p.lens = dix_of(&a->lens);
  p.swa_bt = dtable_of(&a->swa_bt, a->swa_bs);
  p.comp_bt = dtable_of(&a->comp_bt, a->c_bs);
  p.has_dcomp_lens = a->has_dcomp_lens;
  p.has_dvalid = a->has_dvalid;
  p.local = a->local;
  p.D = a->D, p.P = a->P, p.S = a->S, p.Dk = a->Dk, p.K4 = a->K4, p.Wp = a->Wp, p.R = a->R;
  p.swa_span = a->swa_span, p.c_span = a->c_span, p.window_size = a->window_size;
  p.compress_ratio = a->compress_ratio, p.topk = a->topk;
  p.note.rep = r;
  p.note.detail = 0;
  cuda_report_reset(&call, r, OP_FLASHINFER);
  if (a->D + a->P > 0 && !rows4_flashinfer(a, p.note, &call)) INDEX_LAUNCH(flashinfer_kernel, a->D + a->P, call, p);
  return cuda_leave(&call, "build_flashinfer_mixed_sparse_indices");
}


const void *const cuda_flashinfer_kernels[] = {(const void *)flashinfer_kernel, (const void *)flashinfer_rows4_pow2_kernel,
                                              (const void *)flashinfer_rows4_div_kernel, NULL};
