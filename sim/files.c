/* Opening the files the tools read (files.h). */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The directory part of path ("." when it has none) in buf. */
static const char *dir_of(const char *path, char *buf, size_t n) {
  const char *slash = strrchr(path, '/');
  if (!slash) return ".";
  size_t len = slash == path ? 1 : (size_t)(slash - path);
  if (len >= n) len = n - 1;
  memcpy(buf, path, len);
  buf[len] = '\0';
  return buf;
}

int sim_output_writable(const char *path, char *why, size_t n) {
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) {
      snprintf(why, n, "is a directory");
      return -1;
    }
    if (access(path, W_OK) != 0) {
      snprintf(why, n, "cannot write the file: %s", strerror(errno));
      return -1;
    }
    return 0;
  }
  char dir[4096];
  if (access(dir_of(path, dir, sizeof dir), W_OK | X_OK) != 0) {
    snprintf(why, n, "cannot create the file: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* dir resolved + "/" + name, in buf, for a path that does not resolve to a
 * file; a dangling link stands for the file it would create (its target,
 * followed up to 8 links); -1 when the directory does not resolve. */
static int canonical(const char *path, char *buf, size_t n, int depth) {
  char dir[4096], real[PATH_MAX];
  struct stat sb;
  if (depth < 8 && lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
    char target[PATH_MAX], joined[PATH_MAX + 4096];
    const ssize_t len = readlink(path, target, sizeof target - 1);
    if (len < 0) return -1;
    target[len] = '\0';
    if (target[0] == '/' || !strchr(path, '/'))
      snprintf(joined, sizeof joined, "%s", target);
    else
      snprintf(joined, sizeof joined, "%s/%s", dir_of(path, dir, sizeof dir), target);
    return canonical(joined, buf, n, depth + 1);
  }
  const char *slash = strrchr(path, '/');
  if (!realpath(dir_of(path, dir, sizeof dir), real)) return -1;
  return snprintf(buf, n, "%s/%s", real, slash ? slash + 1 : path) < (int)n ? 0 : -1;
}

int sim_same_file(const char *a, const char *b) {
  if (!a || !b) return 0;
  struct stat sa, sb;
  const int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return 0; /* one exists, the other does not */
  char ca[PATH_MAX + 256], cb[PATH_MAX + 256];
  return canonical(a, ca, sizeof ca, 0) == 0 && canonical(b, cb, sizeof cb, 0) == 0 && strcmp(ca, cb) == 0;
}
