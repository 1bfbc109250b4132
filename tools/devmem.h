/*
 * devmem.h - device memory for the tools (verify --device cuda, run --device
 * cuda): buffers, copies and event timing on one stream of the tools' own,
 * through the CUDA runtime.  The library itself never allocates; this is the
 * caller's side, as a serving engine would do it.  In a build without the
 * CUDA backend every function fails and devmem_available() is 0.
 */
#ifndef DSV4KV_TOOLS_DEVMEM_H
#define DSV4KV_TOOLS_DEVMEM_H

#include <stddef.h>

/* 1 when this build has CUDA and device 0 can be used (the first call
 * creates the stream and the events). */
int devmem_available(void);
/* The last CUDA failure, "" when none. */
const char *devmem_error(void);
/* The device's name and the driver's / runtime's versions, for reports. */
void devmem_describe(char *buf, size_t len);
/* The tools' cudaStream_t (non-blocking), as options.stream. */
void *devmem_stream(void);

/* cudaMalloc / cudaFree (n = 0 allocates one byte); NULL on failure. */
void *devmem_alloc(size_t n);
void devmem_free(void *p);
/* Copies on the tools' stream, in its order; 0 = enqueued.  The host side
 * must stay untouched until devmem_sync(). */
int devmem_upload(void *dev, const void *host, size_t n);
int devmem_download(void *host, const void *dev, size_t n);
int devmem_fill(void *dev, int byte, size_t n);
/* Waits for the stream; 0 = every enqueued operation succeeded. */
int devmem_sync(void);

/* A device-to-device copy on the stream (the bandwidth ceiling). */
int devmem_copy(void *dst, const void *src, size_t n);

/* CUDA graphs of the stream's work: capture_begin() .. the calls ..
 * capture_end(&exec) instantiates what was captured; graph_launch replays it
 * on the stream.  0 = success. */
int devmem_capture_begin(void);
int devmem_capture_end(void **exec);
int devmem_graph_launch(void *exec);
void devmem_graph_free(void *exec);

/* Event timing on the stream: mark(0) before the timed work, mark(1) after;
 * devmem_elapsed_ms() after devmem_sync() (marking 0 again moves the start). */
int devmem_mark(int which);
double devmem_elapsed_ms(void);

#endif /* DSV4KV_TOOLS_DEVMEM_H */
