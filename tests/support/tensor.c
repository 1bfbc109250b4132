/* Tensor views, fenced buffers, fills, RNG and bit helpers for the tests. */
#define _DEFAULT_SOURCE 1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "support.h"

static DLDataType mk(uint8_t code, uint8_t bits) {
  DLDataType d;
  d.code = code;
  d.bits = bits;
  d.lanes = 1;
  return d;
}
DLDataType dt_bf16(void) { return mk(kDLBfloat, 16); }
DLDataType dt_f32(void) { return mk(kDLFloat, 32); }
DLDataType dt_f16(void) { return mk(kDLFloat, 16); }
DLDataType dt_i32(void) { return mk(kDLInt, 32); }
DLDataType dt_i64(void) { return mk(kDLInt, 64); }
DLDataType dt_u8(void) { return mk(kDLUInt, 8); }
DLDataType dt_i8(void) { return mk(kDLInt, 8); }
DLDataType dt_bool(void) { return mk(DSV4KV_DL_BOOL, 8); }

void tv_init(tview *v, void *data, DLDataType dt, int ndim, const int64_t *shape,
             const int64_t *strides) {
  memset(v, 0, sizeof(*v));
  v->t.data = data;
  v->t.device.device_type = kDLCPU;
  v->t.device.device_id = 0;
  v->t.ndim = ndim;
  v->t.dtype = dt;
  for (int i = 0; i < ndim && i < 6; i++) v->shape[i] = shape[i];
  v->t.shape = v->shape;
  if (strides) {
    for (int i = 0; i < ndim && i < 6; i++) v->strides[i] = strides[i];
    v->t.strides = v->strides;
  } else {
    v->t.strides = NULL;
  }
  v->t.byte_offset = 0;
}

void tv_1d(tview *v, void *data, DLDataType dt, int64_t n) {
  int64_t s[1] = {n};
  tv_init(v, data, dt, 1, s, NULL);
}

void tv_2d(tview *v, void *data, DLDataType dt, int64_t rows, int64_t cols, int64_t row_stride) {
  int64_t s[2] = {rows, cols};
  int64_t st[2] = {row_stride, 1};
  tv_init(v, data, dt, 2, s, st);
}

void tv_3d(tview *v, void *data, DLDataType dt, int64_t d0, int64_t d1, int64_t d2, int64_t s0,
           int64_t s1, int64_t s2) {
  int64_t s[3] = {d0, d1, d2};
  int64_t st[3] = {s0, s1, s2};
  tv_init(v, data, dt, 3, s, st);
}

/* ---------------------------------------------------------------- fences */
void *fb_alloc(fbuf *b, size_t nbytes, size_t align) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  if (align == 0) align = 1;
  size_t body = ((nbytes + align + pg - 1) / pg) * pg;
  if (body == 0) body = pg;
  memset(b, 0, sizeof(*b));
  b->map_len = body + 2 * pg;
  void *m = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    fail_msg("mmap of %zu bytes failed", b->map_len);
    return NULL;
  }
  b->map = (uint8_t *)m;
  if (mprotect(b->map, pg, PROT_NONE) != 0 || mprotect(b->map + pg + body, pg, PROT_NONE) != 0)
    fail_msg("mprotect failed");
  b->lo = b->map + pg;
  b->hi = b->lo + body;
  uintptr_t d = (uintptr_t)(b->hi - nbytes);
  d &= ~(uintptr_t)(align - 1);
  b->data = (uint8_t *)d;
  b->nbytes = nbytes;
  memset(b->lo, FB_GUARD, (size_t)(b->data - b->lo));
  memset(b->data + nbytes, FB_GUARD, (size_t)(b->hi - (b->data + nbytes)));
  return b->data;
}

int fb_guards_ok(const fbuf *b) {
  for (const uint8_t *p = b->lo; p < b->data; p++)
    if (*p != FB_GUARD) return 0;
  for (const uint8_t *p = b->data + b->nbytes; p < b->hi; p++)
    if (*p != FB_GUARD) return 0;
  return 1;
}

void fb_free(fbuf *b) {
  if (b->map) munmap(b->map, b->map_len);
  memset(b, 0, sizeof(*b));
}

/* ---------------------------------------------------------------- fills */
void fill_u8(void *p, size_t n, uint8_t v) { memset(p, v, n); }
void fill_u16(uint16_t *p, size_t n, uint16_t v) {
  for (size_t i = 0; i < n; i++) p[i] = v;
}
void fill_i32(int32_t *p, size_t n, int32_t v) {
  for (size_t i = 0; i < n; i++) p[i] = v;
}
void fill_i64(int64_t *p, size_t n, int64_t v) {
  for (size_t i = 0; i < n; i++) p[i] = v;
}

/* ---------------------------------------------------------------- rng (splitmix64) */
void rng_seed(rng_t *r, uint64_t seed) { r->s = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull; }
uint64_t rng_u64(rng_t *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint32_t rng_u32(rng_t *r) { return (uint32_t)(rng_u64(r) >> 32); }
uint32_t rng_below(rng_t *r, uint32_t n) { return n ? (uint32_t)(rng_u64(r) % n) : 0; }
double rng_unit(rng_t *r) { return (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }
double rng_normal(rng_t *r) {
  double s = 0;
  for (int i = 0; i < 12; i++) s += rng_unit(r);
  return s - 6.0;
}
void rng_bytes(rng_t *r, void *p, size_t n) {
  uint8_t *b = (uint8_t *)p;
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(rng_u64(r) >> 56);
}

/* ---------------------------------------------------------------- bits */
uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}
float f32_from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}
float bf16_val(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

uint16_t ref_f32_to_bf16(float x) {
  if (isnan(x)) return 0x7FFF;
  uint32_t u = f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t m = u & 0x7FFFFFFFu;
  uint16_t lo = (uint16_t)(m >> 16); /* truncated magnitude */
  if ((m & 0xFFFFu) == 0) return (uint16_t)(sign | lo);
  double ax = fabs((double)x);
  double vlo = (double)bf16_val(lo);
  double vhi = (lo + 1 == 0x7F80) ? ldexp(1.0, 128) : (double)bf16_val((uint16_t)(lo + 1));
  double dlo = ax - vlo, dhi = vhi - ax;
  uint16_t r;
  if (dlo < dhi)
    r = lo;
  else if (dhi < dlo)
    r = (uint16_t)(lo + 1);
  else
    r = (lo & 1) ? (uint16_t)(lo + 1) : lo;
  return (uint16_t)(sign | r);
}

uint16_t bf16_of(double x) { return ref_f32_to_bf16((float)x); }

int same_float(float a, float b) {
  if (isnan(a) && isnan(b)) return 1;
  return f32_bits(a) == f32_bits(b);
}

size_t count_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *first) {
  size_t c = 0;
  if (first) *first = (size_t)-1;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) {
      if (c == 0 && first) *first = i;
      c++;
    }
  return c;
}

int64_t round_up64(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int32_t imin32(int32_t a, int32_t b) { return a < b ? a : b; }
int32_t imax32(int32_t a, int32_t b) { return a > b ? a : b; }
