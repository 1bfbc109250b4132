/*
 * device.h - how the registry reaches a device's memory.  The registry copies
 * a case's buffers to the device through this table, runs the op there with
 * options.report in device memory, and copies everything back to compare.
 * A CUDA test build fills it in tests/ops/device_cuda.c (cudaMalloc,
 * cudaMemcpy, cudaStreamSynchronize) and passes that file as
 * DSV4KV_OPS_DEVICE_SOURCE; without one, device_none.c says there is none.
 */
#ifndef DSV4KV_TESTS_OPS_DEVICE_H
#define DSV4KV_TESTS_OPS_DEVICE_H

#include <stddef.h>

#include <dlpack/dlpack.h>

typedef struct {
  const char *name;     /* the path name printed per case ("cuda")             */
  DLDevice device;      /* what the tensors' device becomes ({kDLCUDA, 0})     */
  void *stream;         /* passed as options.stream                            */
  void *(*alloc)(size_t n);                                  /* NULL on failure */
  void (*release)(void *p);
  int (*upload)(void *dst, const void *src, size_t n);       /* 0 = done        */
  int (*download)(void *dst, const void *src, size_t n);     /* 0 = done        */
  int (*sync)(void *stream);                                 /* 0 = done        */
} ops_device;

/* The CUDA device's table, or NULL when this test build has none. */
const ops_device *ops_cuda_device(void);

#endif /* DSV4KV_TESTS_OPS_DEVICE_H */
