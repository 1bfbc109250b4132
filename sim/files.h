/* Opening the files the tools read, which are untrusted: regular files only. */
#ifndef DSV4KV_SIM_FILES_H
#define DSV4KV_SIM_FILES_H

#include <stddef.h>
#include <stdio.h>

/* Opens `path` for reading when it is a regular file.  A FIFO would block
 * the open, and /dev/zero or a terminal never ends, so anything else is
 * refused.  Returns the stream, or NULL with a message in err naming the
 * path, what it should be (`what`, e.g. "a trace") and, when the file is
 * missing, `missing_hint` (may be NULL). */
FILE *sim_open_regular(const char *path, const char *what, const char *missing_hint, char *err, size_t errlen);

#endif
