/* Status codes, the thread-local error message, and the skip log. */
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[512];

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

run_opts run_opts_of(const dsv4kv_options *opt) {
  run_opts o = {0};
  if (opt) {
    o.skipped = opt->skipped;
    o.nonfinite = opt->nonfinite;
    o.check_nonfinite = opt->check_nonfinite;
    o.num_threads = opt->num_threads > 0 ? opt->num_threads : 0;
  }
  /* More threads than processors never helps; a huge request would only make
   * OpenMP try to create them. */
  int procs = omp_get_num_procs();
  if (o.num_threads == 0) o.num_threads = omp_get_max_threads();
  if (o.num_threads > procs) o.num_threads = procs;
  if (o.num_threads < 1) o.num_threads = 1;
  return o;
}

int64_t sat_mul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

int threads_for(const run_opts *o, int64_t items, int64_t grain) {
  int64_t n = items / grain;
  if (n < 1) n = 1;
  return n < o->num_threads ? (int)n : o->num_threads;
}

void skiplog_init(skiplog *s) {
  s->count = 0;
  s->first_key = INT64_MAX;
  s->msg[0] = '\0';
}

static void skiplog_vnote(skiplog *s, int64_t n, int64_t key, const char *fmt, va_list ap) {
#pragma omp critical(dsv4kv_skiplog)
  {
    s->count += n;
    if (key < s->first_key) {
      s->first_key = key;
      vsnprintf(s->msg, sizeof s->msg, fmt, ap);
    }
  }
}

void skiplog_note_n(skiplog *s, int64_t n, int64_t key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  skiplog_vnote(s, n, key, fmt, ap);
  va_end(ap);
}

void skiplog_note(skiplog *s, int64_t key, const char *fmt, ...) {
#pragma omp critical(dsv4kv_skiplog)
  {
    s->count++;
    if (key < s->first_key) {
      s->first_key = key;
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(s->msg, sizeof s->msg, fmt, ap);
      va_end(ap);
    }
  }
}

dsv4kv_status skiplog_finish(const skiplog *s, const run_opts *o, int64_t nonfinite,
                             const char *input) {
  if (o->skipped) *o->skipped = s->count;
  if (o->nonfinite) *o->nonfinite = o->check_nonfinite ? nonfinite : 0;
  if (s->count > 0) {
    if (s->count == 1)
      return dsv4kv_fail(DSV4KV_WARN_SKIPPED, "1 entry skipped: %s", s->msg);
    return dsv4kv_fail(DSV4KV_WARN_SKIPPED, "%lld entries skipped; the first: %s",
                       (long long)s->count, s->msg);
  }
  if (o->check_nonfinite && nonfinite > 0)
    return dsv4kv_fail(DSV4KV_WARN_NONFINITE,
                       "%s holds %lld NaN/Inf values; stored as the reference stores them",
                       input ? input : "the input", (long long)nonfinite);
  dsv4kv_clear_error();
  return DSV4KV_OK;
}
