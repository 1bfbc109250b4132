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

/* Whether `path` could be written later without touching anything now:
 * an existing file (not a directory) writable by us, or a missing one in a
 * directory we may create files in.  0, or -1 with the reason in why.
 * Nothing is created or truncated (a run refused or failed afterwards
 * leaves the file as it was). */
int sim_output_writable(const char *path, char *why, size_t n);

/* Whether paths a and b name one file: the same device and inode where both
 * exist, else the same directory (resolved) and name; 0 when either is NULL. */
int sim_same_file(const char *a, const char *b);

#endif
