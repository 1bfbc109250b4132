/* DLPack views of the simulator's host buffers, scratch buffers, the clock. */
#ifndef DSV4KV_SIM_TENSOR_H
#define DSV4KV_SIM_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "dsv4kv.h"

/* A DLTensor with its own shape storage (never copy one by value: t.shape
 * points into it). */
typedef struct {
  DLTensor t;
  int64_t shape[3];
} sim_tensor;

extern const DLDataType sim_dt_bf16, sim_dt_u8, sim_dt_i32, sim_dt_i64, sim_dt_f32, sim_dt_bool;

/* Compact row-major views on the CPU. */
const DLTensor *sim_t1(sim_tensor *s, void *data, DLDataType dt, int64_t n0);
const DLTensor *sim_t2(sim_tensor *s, void *data, DLDataType dt, int64_t n0, int64_t n1);
const DLTensor *sim_t3(sim_tensor *s, void *data, DLDataType dt, int64_t n0, int64_t n1,
                       int64_t n2);

/* A growable scratch buffer. */
typedef struct {
  void *p;
  size_t cap;
} sim_buf;

/* Makes b hold at least `bytes`; returns b->p or NULL out of memory. */
void *sim_buf_reserve(sim_buf *b, size_t bytes);
void sim_buf_free(sim_buf *b);

/* Monotonic seconds. */
double sim_now(void);

#endif
