/* DLPack views, scratch buffers and the clock (see tensor.h). */
#define _POSIX_C_SOURCE 200809L

#include "tensor.h"

#include "device.h"

#include <time.h>

#include <stdlib.h>
#include <string.h>

const DLDataType sim_dt_bf16 = {kDLBfloat, 16, 1};
const DLDataType sim_dt_u8 = {kDLUInt, 8, 1};
const DLDataType sim_dt_i32 = {kDLInt, 32, 1};
const DLDataType sim_dt_i64 = {kDLInt, 64, 1};
const DLDataType sim_dt_f32 = {kDLFloat, 32, 1};
const DLDataType sim_dt_bool = {DSV4KV_DL_BOOL, 8, 1};

static const DLTensor *view(sim_tensor *s, void *data, DLDataType dt, int ndim) {
  s->t.data = data;
  s->t.device.device_type = kDLCPU;
  s->t.device.device_id = 0;
  if (sim_dev_on()) { /* --device cuda: the device copy (device.h) */
    size_t n = (dt.bits + 7) / 8;
    for (int d = 0; d < ndim; d++) n *= (size_t)s->shape[d];
    s->t.data = sim_dev_map(data, n);
    s->t.device.device_type = kDLCUDA;
  }
  s->t.ndim = ndim;
  s->t.dtype = dt;
  s->t.shape = s->shape;
  s->t.strides = NULL;
  s->t.byte_offset = 0;
  return &s->t;
}

const DLTensor *sim_t1(sim_tensor *s, void *data, DLDataType dt, int64_t n0) {
  s->shape[0] = n0;
  return view(s, data, dt, 1);
}

const DLTensor *sim_t2(sim_tensor *s, void *data, DLDataType dt, int64_t n0, int64_t n1) {
  s->shape[0] = n0;
  s->shape[1] = n1;
  return view(s, data, dt, 2);
}

const DLTensor *sim_t3(sim_tensor *s, void *data, DLDataType dt, int64_t n0, int64_t n1,
                       int64_t n2) {
  s->shape[0] = n0;
  s->shape[1] = n1;
  s->shape[2] = n2;
  return view(s, data, dt, 3);
}

void *sim_buf_reserve(sim_buf *b, size_t bytes) {
  if (bytes == 0)
    bytes = 1;
  if (bytes <= b->cap)
    return b->p;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < bytes)
    cap *= 2;
  void *p = realloc(b->p, cap);
  if (!p)
    return NULL;
  b->p = p;
  b->cap = cap;
  return p;
}

void sim_buf_free(sim_buf *b) {
  free(b->p);
  b->p = NULL;
  b->cap = 0;
}

double sim_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
