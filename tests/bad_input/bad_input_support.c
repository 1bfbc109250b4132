/*
 * test_bad_input's shared helpers (bad_input.h): the soft-failure counter,
 * bi_check_call, the fenced test tensors and the CUDA-label helpers.
 */
#include "bad_input.h"

/* The running test's soft failures (soft_fail / END_CASES in bad_input.h). */
int bi_g_fail;

/* Checks status, message and (for errors) that the message names `name`
 * ("a|b": either).  Returns 1 when the status matched. */
int bi_check_call(dsv4kv_status got, dsv4kv_status want, const char *name, const char *what) {
  if (got != want) {
    soft_fail("%s: status %d (%s), want %d (%s); last_error: \"%s\"", what, (int)got,
              dsv4kv_status_string(got), (int)want, dsv4kv_status_string(want), dsv4kv_last_error());
    return 0;
  }
  const char *m = dsv4kv_last_error();
  if (!m) {
    soft_fail("%s: dsv4kv_last_error() is NULL", what);
    return 1;
  }
  if (want != DSV4KV_OK && strlen(m) == 0) soft_fail("%s: dsv4kv_last_error() is empty", what);
  if (want == DSV4KV_OK && strlen(m) != 0) soft_fail("%s: last_error \"%s\" after DSV4KV_OK", what, m);
  if (name) {
    char buf[128];
    const char *p = name;
    int found = 0;
    while (*p) {
      const char *bar = strchr(p, '|');
      size_t n = bar ? (size_t)(bar - p) : strlen(p);
      memcpy(buf, p, n);
      buf[n] = 0;
      if (strstr(m, buf)) found = 1;
      p += n + (bar ? 1 : 0);
    }
    if (!found) soft_fail("%s: last_error \"%s\" does not name \"%s\"", what, m, name);
  }
  return 1;
}

void *bi_tt_make(tt *t, DLDataType dt, size_t esz, int ndim, const int64_t *shape, const void *vals,
                 int fillbyte) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  t->d = fb_alloc(&t->fb, n * esz, esz < 8 ? (esz ? esz : 1) : 8);
  if (vals)
    memcpy(t->d, vals, n * esz);
  else
    memset(t->d, fillbyte, n * esz);
  tv_init(&t->v, t->d, dt, ndim, shape, NULL);
  return t->d;
}
void bi_tt_free(tt *t) {
  if (t->fb.map) fb_free(&t->fb);
}

void bi_set_cuda(DLTensor *t) { t->device.device_type = kDLCUDA; }
/* Host buffers labelled CUDA, with host counters in the options: a build
 * without the backend answers BACKEND_NOT_BUILT; with it, the counters are
 * refused (ERR_VALUE) before anything is launched on those pointers. */
dsv4kv_status bi_want_cuda_host(void) {
  return dsv4kv_backend_available(kDLCUDA) ? DSV4KV_ERR_VALUE : DSV4KV_ERR_BACKEND_NOT_BUILT;
}
