/* Opening the files the tools read (files.h). */
#define _POSIX_C_SOURCE 200809L
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static const char *file_type(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a plain file";
}

/* O_NONBLOCK so that a FIFO cannot block the open; the type is read off the
 * open descriptor (no window between a stat and the open). */
FILE *sim_open_regular(const char *path, const char *what, const char *missing_hint, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int missing = errno == ENOENT && missing_hint;
    snprintf(err, errlen, "%s: cannot open: %s%s%s", path, strerror(errno), missing ? " " : "",
             missing ? missing_hint : "");
    return NULL;
  }
  struct stat sb;
  FILE *fp = NULL;
  if (fstat(fd, &sb))
    snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    snprintf(err, errlen, "%s: not a regular file (%s); %s must be a file", path, file_type(sb.st_mode), what);
  else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) || !(fp = fdopen(fd, "rb")))
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  if (!fp)
    close(fd);
  return fp;
}
