/* golden_device.c - verify --device cuda: a case's buffers staged in device
 * memory around each library call (see golden_case.h).
 *
 * A sparse cache (a lazily mapped span with only its listed blocks resident)
 * is staged block by block: the device copy is zeroed, the listed blocks are
 * uploaded, and afterwards only they come back, while the rest is read in
 * bounded chunks and checked to be still zero (a chunk that is not comes back
 * too, so the host-side check reports the stray write).  The host never
 * holds more of the span than the CPU run would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "golden_case.h"

#define GC_SCAN_CHUNK ((size_t)32 << 20)

static int upload_sparse(gc_buf *b) {
  const int64_t n = b->block_ids->shape[0], stride = b->block_stride;
  if (devmem_fill(b->dev, 0, b->nbytes)) return -1;
  for (int64_t k = 0; k < n; k++) {
    size_t off = (size_t)(b->sorted_ids[k] * stride);
    if (devmem_upload((uint8_t *)b->dev + off, (uint8_t *)b->data + off, (size_t)stride)) return -1;
  }
  return 0;
}

/* Device bytes [lo, hi) of a sparse cache, expected zero: checked in chunks. */
static int scan_gap(gc_buf *b, uint8_t *scratch, size_t lo, size_t hi) {
  for (size_t at = lo; at < hi; at += GC_SCAN_CHUNK) {
    size_t len = hi - at < GC_SCAN_CHUNK ? hi - at : GC_SCAN_CHUNK;
    if (devmem_download(scratch, (uint8_t *)b->dev + at, len) || devmem_sync()) return -1;
    size_t i = 0;
    while (i < len && !scratch[i]) i++;
    if (i < len) memcpy((uint8_t *)b->data + at, scratch, len); /* a stray write: let the check see it */
  }
  return 0;
}

static int download_sparse(gc_buf *b) {
  const int64_t n = b->block_ids->shape[0], stride = b->block_stride;
  uint8_t *scratch = malloc(GC_SCAN_CHUNK);
  if (!scratch) return -1;
  size_t pos = 0;
  int bad = 0;
  for (int64_t k = 0; k <= n && !bad; k++) {
    size_t off = k < n ? (size_t)(b->sorted_ids[k] * stride) : b->nbytes;
    bad |= scan_gap(b, scratch, pos, off);
    if (k < n) bad |= devmem_download((uint8_t *)b->data + off, (uint8_t *)b->dev + off, (size_t)stride);
    pos = off + (size_t)stride;
  }
  free(scratch);
  return bad | devmem_sync();
}

int gc_device_begin(golden_case *c) {
  c->dev_msg[0] = '\0';
  if (c->device.device_type == kDLCPU) return 0;
  if (!devmem_available()) {
    snprintf(c->dev_msg, sizeof c->dev_msg, "--device cuda: %s", devmem_error());
    return gc_fail(c, "%s", c->dev_msg);
  }
  dsv4kv_report poison;
  memset(&poison, 0xEE, sizeof poison); /* every call must overwrite its report */
  c->dev_report = devmem_alloc(sizeof poison);
  if (!c->dev_report || devmem_upload(c->dev_report, &poison, sizeof poison)) {
    snprintf(c->dev_msg, sizeof c->dev_msg, "--device cuda: staging the report: %s", devmem_error());
    return gc_fail(c, "%s", c->dev_msg);
  }
  for (gc_buf *b = c->bufs; b; b = b->next) {
    b->dev = devmem_alloc(b->nbytes);
    if (!b->dev || (b->sparse ? upload_sparse(b) : devmem_upload(b->dev, b->data, b->nbytes))) {
      snprintf(c->dev_msg, sizeof c->dev_msg, "--device cuda: staging %s (%zu bytes): %s", b->name, b->nbytes,
               devmem_error());
      return gc_fail(c, "%s", c->dev_msg);
    }
    b->t.data = b->dev;
    b->t.device = c->device;
  }
  c->opt.skipped = NULL; /* host counters: refused on a stream-ordered device */
  c->opt.report = (dsv4kv_report *)c->dev_report;
  c->opt.stream = devmem_stream();
  if (devmem_sync()) {
    snprintf(c->dev_msg, sizeof c->dev_msg, "--device cuda: staging: %s", devmem_error());
    return gc_fail(c, "%s", c->dev_msg);
  }
  return 0;
}

dsv4kv_status gc_device_end(golden_case *c, dsv4kv_status st) {
  if (c->device.device_type == kDLCPU) return st;
  int bad = devmem_sync();
  dsv4kv_report rep;
  memset(&rep, 0, sizeof rep);
  if (c->dev_report) bad |= devmem_download(&rep, c->dev_report, sizeof rep);
  for (gc_buf *b = c->bufs; b; b = b->next) {
    if (b->dev) bad |= b->sparse ? download_sparse(b) : devmem_download(b->data, b->dev, b->nbytes);
  }
  bad |= devmem_sync();
  for (gc_buf *b = c->bufs; b; b = b->next) {
    devmem_free(b->dev);
    b->dev = NULL;
    b->t.data = b->data;
    b->t.device = (DLDevice){kDLCPU, 0};
  }
  devmem_free(c->dev_report);
  c->dev_report = NULL;
  c->opt.skipped = &c->skipped;
  c->opt.report = NULL;
  c->opt.stream = NULL;
  if (bad) {
    snprintf(c->dev_msg, sizeof c->dev_msg, "--device cuda: after the call: %s", devmem_error());
    gc_fail(c, "%s", c->dev_msg);
    return DSV4KV_ERR_BACKEND;
  }
  if (dsv4kv_is_error(st)) return st;
  c->skipped = rep.skipped;
  st = dsv4kv_report_status(&rep);
  if (st != DSV4KV_OK) dsv4kv_report_message(&rep, c->dev_msg, sizeof c->dev_msg);
  return st;
}
