/* golden_device.c - verify --device cuda: a case's buffers staged in device
 * memory around each library call (see golden_case.h). */
#include <stdio.h>
#include <string.h>

#include "devmem.h"
#include "golden_case.h"

int gc_device_begin(golden_case *c) {
  c->dev_msg[0] = '\0';
  if (c->device.device_type == kDLCPU) return 0;
  if (!devmem_available()) return gc_fail(c, "--device cuda: %s", devmem_error());
  dsv4kv_report poison;
  memset(&poison, 0xEE, sizeof poison); /* every call must overwrite its report */
  c->dev_report = devmem_alloc(sizeof poison);
  if (!c->dev_report || devmem_upload(c->dev_report, &poison, sizeof poison))
    return gc_fail(c, "--device cuda: staging the report: %s", devmem_error());
  for (gc_buf *b = c->bufs; b; b = b->next) {
    b->dev = devmem_alloc(b->nbytes);
    if (!b->dev || devmem_upload(b->dev, b->data, b->nbytes))
      return gc_fail(c, "--device cuda: staging %s (%zu bytes): %s", b->name, b->nbytes, devmem_error());
    b->t.data = b->dev;
    b->t.device = c->device;
  }
  c->opt.skipped = NULL; /* host counters: refused on a stream-ordered device */
  c->opt.report = (dsv4kv_report *)c->dev_report;
  c->opt.stream = devmem_stream();
  return devmem_sync() ? gc_fail(c, "--device cuda: %s", devmem_error()) : 0;
}

dsv4kv_status gc_device_end(golden_case *c, dsv4kv_status st) {
  if (c->device.device_type == kDLCPU) return st;
  int bad = devmem_sync();
  dsv4kv_report rep;
  memset(&rep, 0, sizeof rep);
  if (c->dev_report) bad |= devmem_download(&rep, c->dev_report, sizeof rep);
  for (gc_buf *b = c->bufs; b; b = b->next) {
    if (b->dev) bad |= devmem_download(b->data, b->dev, b->nbytes);
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
    gc_fail(c, "--device cuda: after the call: %s", devmem_error());
    return DSV4KV_ERR_BACKEND;
  }
  if (dsv4kv_is_error(st)) return st;
  c->skipped = rep.skipped;
  st = dsv4kv_report_status(&rep);
  if (st != DSV4KV_OK) dsv4kv_report_message(&rep, c->dev_msg, sizeof c->dev_msg);
  return st;
}
