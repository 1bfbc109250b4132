/* st_write.h - writes safetensors files for the CLI tests, well-formed or
 * deliberately broken. */
#ifndef DSV4KV_TESTS_CLI_ST_WRITE_H
#define DSV4KV_TESTS_CLI_ST_WRITE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *name;
  const char *dtype;    /* "U8", "I32", ... (any string: tests use bad ones too) */
  int ndim;
  int64_t shape[4];
  const void *data;
  size_t nbytes;
} stw_tensor;

/* A well-formed file: metadata pairs (key, value, ..., NULL) and tensors laid
 * out back to back in the given order, header padded with spaces to 8 bytes.
 * Returns 0 on success. */
int stw_write(const char *path, const char *const *meta, const stw_tensor *tensors, size_t n);

/* Raw bytes: the 8-byte length field `header_len` (need not match), the
 * header text (`header_bytes` of it), then `data_len` bytes of data. */
int stw_write_raw(const char *path, uint64_t header_len, const char *header, size_t header_bytes,
                  const void *data, size_t data_len);

/* A header string with the length field equal to its size, then data. */
int stw_write_json(const char *path, const char *json, const void *data, size_t data_len);

#endif
