/* Cache and K fixtures for the tests. */
#include <math.h>
#include <stdio.h>

#include "support.h"

void tcache_make(tcache *c, dsv4kv_record rec, int fnuz, int32_t bs, int64_t pages, int64_t pad,
                 uint8_t fill, int three_d) {
  memset(c, 0, sizeof(*c));
  c->rec_bytes = dsv4kv_record_bytes(rec);
  if (c->rec_bytes == 0) {
    /* independent of the library: the widths of SPEC §2 / §6 */
    static const int32_t w[] = {584, 528, 288, 132, 68};
    c->rec_bytes = w[rec];
  }
  c->bs = bs;
  c->pages = pages;
  c->page_stride = (int64_t)bs * c->rec_bytes + pad;
  c->nbytes = (size_t)(c->page_stride * pages);
  c->data = (uint8_t *)fb_alloc(&c->fb, c->nbytes, 64);
  memset(c->data, fill, c->nbytes);
  if (three_d)
    tv_3d(&c->v, c->data, dt_u8(), pages, bs, c->rec_bytes, c->page_stride, c->rec_bytes, 1);
  else
    tv_2d(&c->v, c->data, dt_u8(), pages, c->page_stride, c->page_stride);
  c->desc.record = rec;
  c->desc.fp8 = fnuz ? DSV4KV_FP8_FNUZ : DSV4KV_FP8_OCP;
  c->desc.block_size = bs;
  c->desc.page_stride = 0;
  c->desc.flags = 0;
}

void tcache_free(tcache *c) { fb_free(&c->fb); }
uint8_t *tcache_page(tcache *c, int64_t page) { return c->data + page * c->page_stride; }

void tmat16_make(tmat16 *m, int64_t rows, int64_t cols, int64_t row_stride) {
  memset(m, 0, sizeof(*m));
  m->rows = rows;
  m->cols = cols;
  m->row_stride = row_stride;
  size_t n = rows > 0 ? (size_t)((rows - 1) * row_stride + cols) : 0;
  m->data = (uint16_t *)fb_alloc(&m->fb, n * 2, 16);
  fill_u16(m->data, n, 0x7FC1);
  tv_2d(&m->v, m->data, dt_bf16(), rows, cols, row_stride);
}
uint16_t *tmat16_row(tmat16 *m, int64_t r) { return m->data + r * m->row_stride; }
void tmat16_free(tmat16 *m) { fb_free(&m->fb); }

void gen_row(rng_t *r, uint16_t *row, int n, int kind) {
  double rowscale = 1.0;
  if (kind == 1) rowscale = 1e-6;
  if (kind == 2) rowscale = 1e20;
  for (int i = 0; i < n; i++) {
    double x = rng_normal(r) * rowscale;
    if (kind == 0 && (i % 97) == 5) x *= 20.0;
    if (kind == 3) x *= pow(2.0, (double)((i / 16) % 40) - 20.0);
    row[i] = bf16_of(x);
  }
  if (kind == 4) {
    static const uint16_t sp[] = {0x0000, 0x8000, 0x0001, 0x8003, 0x7FC0, 0xFFC1,
                                  0x7F80, 0xFF80, 0x3F88, 0xBF98, 0x0080, 0x7F7F};
    for (int k = 0; k < 6; k++) row[rng_below(r, (uint32_t)n)] = sp[rng_below(r, 12)];
  }
}

void slots_make(tslots *t, const int64_t *vals, int64_t n) {
  t->s = (int64_t *)fb_alloc(&t->fb, (size_t)n * 8, 8);
  if (n) memcpy(t->s, vals, (size_t)n * 8);
  tv_1d(&t->v, t->s, dt_i64(), n);
}

dsv4kv_status run_insert(tmat16 *k, tcache *c, tslots *s, int threads, int64_t *skipped) {
  dsv4kv_options opt;
  memset(&opt, 0, sizeof(opt));
  opt.skipped = skipped;
  opt.num_threads = threads;
  if (skipped) *skipped = -12345;
  return dsv4kv_quantize_and_insert_k_cache(&k->v.t, &c->v.t, &c->desc, &s->v.t, &opt);
}

const fmt_case kFormats[NFORMATS] = {{DSV4KV_RECORD_V4, 0},    {DSV4KV_RECORD_V4, 1},
                                     {DSV4KV_RECORD_MXFP8, 0}, {DSV4KV_RECORD_MXFP8, 1},
                                     {DSV4KV_RECORD_NVFP4, 0}};

const char *fmt_name(const fmt_case *f) {
  static const char *const fnuz[] = {"V4/fnuz", "MXFP8/fnuz"};
  if (f->fnuz && (f->rec == DSV4KV_RECORD_V4 || f->rec == DSV4KV_RECORD_MXFP8)) return fnuz[f->rec];
  return dsv4kv_record_name(f->rec);
}
