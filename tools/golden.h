/*
 * golden.h - check the library against one golden safetensors file.
 *
 * A golden file holds one call of one op (metadata `op`): its inputs under
 * the reference's parameter names, its scalars in __metadata__, and the
 * outputs it must produce as `expected.<name>` (see shared/golden/MANIFEST.md).
 */
#ifndef DSV4KV_TOOLS_GOLDEN_H
#define DSV4KV_TOOLS_GOLDEN_H

#include <stddef.h>

#include <dlpack/dlpack.h>

typedef struct {
  char op[96];          /* metadata op ("" when unreadable)           */
  double call_seconds;  /* wall time of the library call(s)            */
} golden_info;

/* Runs the file's op on `device` and compares.  Returns 0 when everything
 * matched; otherwise -1 with a one-line reason (no file name, no newline) in
 * msg.  `info` may be NULL. */
int golden_verify_file(const char *path, DLDeviceType device, char *msg, size_t msg_len,
                       golden_info *info);

/* The ops golden_verify_file knows, for --help; NULL-terminated. */
extern const char *const golden_ops[];

#endif /* DSV4KV_TOOLS_GOLDEN_H */
