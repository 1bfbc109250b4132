/* Status codes, the thread-local error message, version and struct sizes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[768];

const char *dsv4kv_status_string(dsv4kv_status st) {
  switch (st) {
    case DSV4KV_OK: return "DSV4KV_OK: success";
    case DSV4KV_ERR_NULL: return "DSV4KV_ERR_NULL: a required argument is NULL";
    case DSV4KV_ERR_DTYPE: return "DSV4KV_ERR_DTYPE: wrong tensor dtype";
    case DSV4KV_ERR_RANK: return "DSV4KV_ERR_RANK: wrong number of tensor dimensions";
    case DSV4KV_ERR_SHAPE: return "DSV4KV_ERR_SHAPE: wrong tensor shape";
    case DSV4KV_ERR_STRIDE: return "DSV4KV_ERR_STRIDE: unsupported tensor strides";
    case DSV4KV_ERR_VALUE: return "DSV4KV_ERR_VALUE: scalar argument out of range";
    case DSV4KV_ERR_DEVICE: return "DSV4KV_ERR_DEVICE: tensors on different or unsupported devices";
    case DSV4KV_ERR_BACKEND_NOT_BUILT: return "DSV4KV_ERR_BACKEND_NOT_BUILT: backend not built";
    case DSV4KV_ERR_ALLOC: return "DSV4KV_ERR_ALLOC: out of memory";
    case DSV4KV_ERR_FORMAT: return "DSV4KV_ERR_FORMAT: cache format mismatch";
    case DSV4KV_WARN_SKIPPED: return "DSV4KV_WARN_SKIPPED: out-of-range entries were skipped";
    case DSV4KV_WARN_NONFINITE: return "DSV4KV_WARN_NONFINITE: input held NaN or Inf";
    case DSV4KV_ERR_BACKEND: return "DSV4KV_ERR_BACKEND: backend failure";
    case DSV4KV_ERR_ALIGNMENT: return "DSV4KV_ERR_ALIGNMENT: tensor data not aligned to its element size";
  }
  return "unknown dsv4kv status";
}

const char *dsv4kv_last_error(void) { return last_error; }

void dsv4kv_clear_error(void) { last_error[0] = '\0'; }

dsv4kv_status dsv4kv_fail(dsv4kv_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return st;
}

int64_t sat_mul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

int dsv4kv_is_error(dsv4kv_status st) {
  return st != DSV4KV_OK && st != DSV4KV_WARN_SKIPPED && st != DSV4KV_WARN_NONFINITE;
}

const char *dsv4kv_version(void) { return DSV4KV_VERSION_STRING; }

size_t dsv4kv_struct_size(const char *name) {
  if (!name) return 0;
  if (!strcmp(name, "dsv4kv_options")) return sizeof(dsv4kv_options);
  if (!strcmp(name, "dsv4kv_cache_desc")) return sizeof(dsv4kv_cache_desc);
  if (!strcmp(name, "dsv4kv_report")) return sizeof(dsv4kv_report);
  if (!strcmp(name, "dsv4kv_flashinfer_args")) return sizeof(dsv4kv_flashinfer_args);
  if (!strcmp(name, "dsv4kv_model_desc")) return sizeof(dsv4kv_model_desc);
  return 0;
}
