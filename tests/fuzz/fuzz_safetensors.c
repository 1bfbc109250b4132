/* fuzz_safetensors.c - libFuzzer target: the safetensors reader behind
 * `dsv4kv verify` on arbitrary bytes, then every accessor the tools use on
 * what it accepts, then the golden harness's validation of the file (metadata
 * against tensors, size caps; golden_check_file allocates nothing it sizes
 * and calls no op), and for a file that passes it the whole verify run (ops
 * and comparisons) from a memfd.  Invariants the reader promises are checked
 * with abort(), which libFuzzer reports as a crash.  Built and run by
 * run_libfuzzer.sh. */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "golden.h"
#include "golden_case.h"
#include "safetensors.h"

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "fuzz_safetensors: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                              \
    }                                                                       \
  } while (0)

static volatile uint8_t sink;

/* Every promise of safetensors.h about one accepted tensor. */
static void check_tensor(const st_file *f, const st_tensor *t, const uint8_t *data, size_t size) {
  CHECK(t->name && t->name[0]);
  CHECK(st_find(f, t->name) == t);
  CHECK(t->ndim >= 0 && t->ndim <= ST_MAX_NDIM);
  int64_t numel = 1;
  for (int d = 0; d < t->ndim; d++) {
    CHECK(t->shape[d] >= 0);
    numel *= t->shape[d];
  }
  CHECK(numel == t->numel);
  size_t isz = st_dtype_size(t->dtype);
  CHECK(isz > 0 && (size_t)t->numel * isz == t->nbytes);
  CHECK(strcmp(st_dtype_name(t->dtype), "?") != 0);
  CHECK(t->nbytes == 0 || (t->data >= data + 8 && t->data + t->nbytes <= data + size));
  uint8_t x = 0;
  for (size_t i = 0; i < t->nbytes; i++) x ^= t->data[i]; /* ASan sees any stray byte */
  sink = x;
  DLTensor v;
  st_dltensor(t, (void *)t->data, &v);
  CHECK(v.ndim == t->ndim && v.shape == t->shape && v.data == t->data && !v.strides);
  DLDataType dl = st_dl_dtype(t->dtype);
  CHECK(v.dtype.code == dl.code && v.dtype.bits == dl.bits && dl.bits == 8 * isz);
}

/* golden_verify_file as `dsv4kv verify` runs it, on the input as a file. */
static void verify_as_file(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz_safetensors", MFD_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, data, size) == (ssize_t)size) {
    char path[64], msg[4096];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    golden_info info;
    int rc = golden_verify_file(path, kDLCPU, msg, sizeof msg, &info);
    CHECK(rc == 0 || (rc == -1 && msg[0]));
  }
  close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  st_file *f = (st_file *)data; /* must come back NULL on failure */
  char err[1024];
  if (st_open_memory("fuzz", data, size, &f, err, sizeof err)) {
    CHECK(f == NULL && !strncmp(err, "fuzz: ", 6) && err[6]);
    return 0;
  }
  CHECK(!strcmp(st_path(f), "fuzz") && st_file_size(f) == size);
  size_t n = st_num_tensors(f);
  for (size_t i = 0; i < n; i++) check_tensor(f, st_tensor_at(f, i), data, size);
  CHECK(st_tensor_at(f, n) == NULL);
  size_t m = st_num_meta(f);
  for (size_t i = 0; i < m; i++) {
    const char *key = st_meta_key_at(f, i);
    CHECK(key && st_meta(f, key));
    sink = (uint8_t)strlen(st_meta(f, key));
  }
  CHECK(st_meta_key_at(f, m) == NULL);
  CHECK(st_find(f, "") == NULL);
  char msg[4096];
  int rc = golden_check_file(f, kDLCPU, msg, sizeof msg);
  CHECK(rc == 0 || (rc == -1 && msg[0]));
  st_close(f);
  if (rc == 0) verify_as_file(data, size);
  return 0;
}
