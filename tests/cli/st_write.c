/* st_write.c - see st_write.h. */
#include "st_write.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int stw_write_raw(const char *path, uint64_t header_len, const char *header, size_t header_bytes,
                  const void *data, size_t data_len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(header_len >> (8 * i));
  int ok = fwrite(len, 1, 8, f) == 8 && fwrite(header, 1, header_bytes, f) == header_bytes &&
           (data_len == 0 || fwrite(data, 1, data_len, f) == data_len);
  return fclose(f) == 0 && ok ? 0 : -1;
}

int stw_write_json(const char *path, const char *json, const void *data, size_t data_len) {
  return stw_write_raw(path, strlen(json), json, strlen(json), data, data_len);
}

/* Appends printf output to a growing string. */
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if (*len + (size_t)n < *cap) {
      *len += (size_t)n;
      return 0;
    }
    size_t cap2 = 2 * (*cap + (size_t)n);
    char *p = realloc(*buf, cap2);
    if (!p) return -1;
    *buf = p;
    *cap = cap2;
  }
}

int stw_write(const char *path, const char *const *meta, const stw_tensor *tensors, size_t n) {
  size_t cap = 256, len = 0, offset = 0;
  char *h = malloc(cap);
  if (!h) return -1;
  h[0] = '\0';
  int rc = append(&h, &len, &cap, "{");
  if (meta && meta[0]) {
    rc |= append(&h, &len, &cap, "\"__metadata__\":{");
    for (size_t i = 0; meta[i] && meta[i + 1]; i += 2)
      rc |= append(&h, &len, &cap, "%s\"%s\":\"%s\"", i ? "," : "", meta[i], meta[i + 1]);
    rc |= append(&h, &len, &cap, "}%s", n ? "," : "");
  }
  for (size_t i = 0; i < n; i++) {
    const stw_tensor *t = &tensors[i];
    rc |= append(&h, &len, &cap, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", t->name,
                 t->dtype);
    for (int d = 0; d < t->ndim; d++)
      rc |= append(&h, &len, &cap, "%s%" PRId64, d ? "," : "", t->shape[d]);
    rc |= append(&h, &len, &cap, "],\"data_offsets\":[%zu,%zu]}", offset, offset + t->nbytes);
    offset += t->nbytes;
  }
  rc |= append(&h, &len, &cap, "}");
  while (!rc && len % 8) rc |= append(&h, &len, &cap, " "); /* as safetensors pads */
  uint8_t *data = malloc(offset ? offset : 1);
  if (rc || !data) {
    free(h);
    free(data);
    return -1;
  }
  offset = 0;
  for (size_t i = 0; i < n; i++) {
    if (tensors[i].nbytes) memcpy(data + offset, tensors[i].data, tensors[i].nbytes);
    offset += tensors[i].nbytes;
  }
  rc = stw_write_raw(path, len, h, len, data, offset);
  free(h);
  free(data);
  return rc;
}
