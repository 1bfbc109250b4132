/* --device cuda for the simulator: its caches live in device memory (a host
 * copy is kept only for the pages the indexer check reads, fetched on
 * demand), and every other tensor of a library call is staged on the device
 * around the call: views made with sim_t1/t2/t3 between sim_dev_call_begin
 * and the call point at device copies, sim_dev_call_end waits for the
 * stream, copies them back and gives the call's GPU time (CUDA events) and
 * report.  Device memory goes through tools/devmem (the caller's side of
 * the library, as an engine's allocator would be). */
#ifndef DSV4KV_SIM_DEVICE_H
#define DSV4KV_SIM_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "dsv4kv.h"

/* Turns device mode on; 0 on success, -1 with the reason on stderr. */
int sim_dev_open(void);
void sim_dev_close(void);
int sim_dev_on(void);
/* The device and driver, for the report. */
void sim_dev_describe(char *buf, size_t len);

/* A cache of `n` bytes whose host copy is `host` (contents uploaded): views
 * of it point at the device copy, without staging.  0 on success. */
int sim_dev_cache(void *host, size_t n);
/* Frees every cache's device copy (the run's caches are freed). */
void sim_dev_drop_caches(void);
/* The host copy of host[0..n) refreshed from the device (a registered
 * cache's range); 0 on success. */
int sim_dev_fetch(const void *host, size_t n);

/* Options for one call on the device: the device report, the stream. */
void sim_dev_call_begin(dsv4kv_options *o);
/* Where a view of host[0..n) points in device mode (staged unless part of
 * a cache); called by sim_t1/t2/t3.  NULL when staging failed. */
void *sim_dev_map(void *host, size_t n);
/* After the call returned `st`: waits, copies the staged tensors back, and
 * returns the status a synchronous call would have returned; *skipped and
 * *seconds (GPU time between the last staging and the end of the call). */
dsv4kv_status sim_dev_call_end(dsv4kv_status st, int64_t *skipped, double *seconds);
/* The message of the last call's warning or staging failure. */
const char *sim_dev_message(void);

#endif
