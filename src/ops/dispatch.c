/* The tail every entry point shares: one device for all tensors, that
 * device's backend table, the op, and the report turned into the status,
 * the counters and the message. */
#include <stdio.h>

#include "backend.h"

static const char *device_name(DLDeviceType t, char *buf, size_t n) {
  switch ((int)t) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLCUDAManaged: return "cuda_managed";
    default: snprintf(buf, n, "device type %d", (int)t); return buf;
  }
}

static int same_device(const tview *a, const tview *b) {
  return a->device == b->device && a->device_id == b->device_id;
}

/* One device for every view; on a mismatch the message names a tensor off
 * the majority's device and one on it (the odd one out is the likely bug). */
static dsv4kv_status common_device(const tview *const *v, const char *const *names, int n, int *which) {
  int best = -1, best_count = 0;
  for (int i = 0; i < n; i++) {
    if (!v[i]) continue;
    int c = 0;
    for (int j = 0; j < n; j++) c += v[j] && same_device(v[i], v[j]);
    if (c > best_count) best = i, best_count = c;
  }
  *which = best;
  for (int i = 0; i < n; i++) {
    if (!v[i] || same_device(v[i], v[best])) continue;
    char b1[32], b2[32];
    return dsv4kv_fail(DSV4KV_ERR_DEVICE, "%s is on %s:%d but %s%s are on %s:%d; all tensors of a call must be on one device",
                       names[i], device_name(v[i]->device, b1, sizeof b1), v[i]->device_id, names[best],
                       best_count > 1 ? " and the others" : "", device_name(v[best]->device, b2, sizeof b2),
                       v[best]->device_id);
  }
  return DSV4KV_OK;
}

dsv4kv_status op_device(const tview *const *views, const char *const *names, int n, DLDeviceType *type) {
  int which;
  dsv4kv_status st = common_device(views, names, n, &which);
  *type = which >= 0 ? views[which]->device : kDLCPU;
  return st;
}

static dsv4kv_status backend_of(const tview *v, const backend_ops **be) {
  char b[32];
  if (!v || v->device == kDLCPU) {
    *be = &cpu_backend;
    return DSV4KV_OK;
  }
  if (v->device == kDLCUDA || v->device == kDLCUDAManaged) {
    if ((*be = cuda_backend_if_built())) return DSV4KV_OK;
    return dsv4kv_fail(DSV4KV_ERR_BACKEND_NOT_BUILT, "the tensors are on CUDA device %d, which cannot run them: %s", v->device_id,
                       cuda_unavailable_reason());
  }
  return dsv4kv_fail(DSV4KV_ERR_DEVICE, "the tensors are on %s, which no backend of this build runs",
                     device_name(v->device, b, sizeof b));
}

static dsv4kv_status run(const backend_ops *be, op_id op, const void *args, const exec_opts *x,
                         dsv4kv_report *r) {
  switch (op) {
    case OP_INSERT: return be->insert((const insert_args *)args, x, r);
    case OP_GATHER: return be->gather((const gather_args *)args, x, r);
    case OP_GLOBAL_TOPK: return be->global_topk((const global_topk_args *)args, x, r);
    case OP_COMBINE: return be->combine((const combine_args *)args, x, r);
    case OP_FLASHINFER: return be->flashinfer((const flashinfer_args *)args, x, r);
    case OP_INDEXER_STORE: return be->indexer_store((const indexer_args *)args, x, r);
    case OP_NONE: break;
  }
  return dsv4kv_fail(DSV4KV_ERR_BACKEND, "internal: no operation %d", (int)op);
}

dsv4kv_status op_dispatch(op_id op, const void *args, const tview *const *views,
                          const char *const *names, int n, const dsv4kv_options *opt) {
  int which;
  dsv4kv_status st;
  const backend_ops *be;
  if ((st = common_device(views, names, n, &which))) return st;
  if ((st = backend_of(which >= 0 ? views[which] : NULL, &be))) return st;
  exec_opts x = {0, NULL, 0, 0};
  if (opt) {
    x.num_threads = opt->num_threads > 0 ? opt->num_threads : 0;
    x.stream = opt->stream;
    x.check_nonfinite = opt->check_nonfinite != 0;
    x.distinct_slots = opt->distinct_slots != 0;
  }
  if (be->async) {
    if (opt && (opt->skipped || opt->nonfinite))
      return dsv4kv_fail(DSV4KV_ERR_VALUE,
                         "options.skipped / options.nonfinite are host counters, which a %s call cannot fill without "
                         "synchronizing; pass options.report (device memory) instead",
                         be->name);
    if ((st = run(be, op, args, &x, opt ? opt->report : NULL))) return st;
    dsv4kv_clear_error();
    return DSV4KV_OK;
  }
  dsv4kv_report r;
  report_init(&r, op);
  if ((st = run(be, op, args, &x, &r))) return st;
  if (!x.check_nonfinite) r.nonfinite = 0;
  if (opt) {
    if (opt->skipped) *opt->skipped = r.skipped;
    if (opt->nonfinite) *opt->nonfinite = r.nonfinite;
    if (opt->report) *opt->report = r;
  }
  st = dsv4kv_report_status(&r);
  if (st == DSV4KV_OK) {
    dsv4kv_clear_error();
    return st;
  }
  char msg[768];
  dsv4kv_report_message(&r, msg, sizeof msg);
  return dsv4kv_fail(st, "%s", msg);
}

int dsv4kv_backend_available(DLDeviceType device_type) {
  if (device_type == kDLCPU) return 1;
  if (device_type == kDLCUDA || device_type == kDLCUDAManaged) return cuda_backend_if_built() != NULL;
  return 0;
}

const char *dsv4kv_backend_unavailable_reason(DLDeviceType device_type) {
  if (dsv4kv_backend_available(device_type)) return NULL;
  if (device_type == kDLCUDA || device_type == kDLCUDAManaged) return cuda_unavailable_reason();
  return "no backend of this build runs that device type";
}

#ifndef DSV4KV_WITH_CUDA
const backend_ops *cuda_backend_if_built(void) { return NULL; }
const char *cuda_unavailable_reason(void) { return "this build has no CUDA backend"; }
dsv4kv_status cuda_warmup(int device_id, int indexer, int32_t *kernels) {
  (void)indexer;
  if (kernels) *kernels = 0;
  return dsv4kv_fail(DSV4KV_ERR_BACKEND_NOT_BUILT, "CUDA device %d: this build has no CUDA backend", device_id);
}
#endif
