/* dsv4kv verify: check the library against golden safetensors files.
 *
 * One line per file ("PASS <file>", "PASS <file> (warning: <status>: <message>)"
 * when a call returned a DSV4KV_WARN_* status but every expected tensor
 * matched, or "FAIL <file>: <reason>"), then "N passed, N failed".  Exit status: 0 when at least one file was checked
 * and all passed, 1 when any file failed or a path could not be read, 2 for
 * a usage error or a device without a backend. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "dsv4kv.h"
#include "golden.h"

enum { EXIT_ALL_PASSED = 0, EXIT_SOME_FAILED = 1, EXIT_USAGE = 2 };

static void usage(FILE *f) {
  fprintf(f,
          "usage: dsv4kv verify [--device cpu|cuda] [--verbose] PATH...\n"
          "\n"
          "Runs the library on golden safetensors files and compares its outputs\n"
          "byte for byte with the expected ones.  A PATH is a file or a directory;\n"
          "a directory stands for every *.safetensors file directly inside it,\n"
          "in name order.\n"
          "\n"
          "Each file holds one call: metadata 'op' names it, the inputs are\n"
          "tensors, the scalars metadata strings, the outputs 'expected.*'\n"
          "tensors (see tests/golden/MANIFEST.md).  Ops understood:\n");
  for (const char *const *op = golden_ops; *op; op++) fprintf(f, "  %s\n", *op);
  fprintf(f,
          "\n"
          "options:\n"
          "  -d, --device cpu|cuda  the device of the tensors handed to the library\n"
          "                         (default cpu; cuda: each file's tensors staged in\n"
          "                         GPU memory around each call; where the CUDA\n"
          "                         backend cannot run, one line says why, exit 2)\n"
          "  -v, --verbose          also print each file's op and library time\n"
          "  -h, --help             this text\n"
          "\n"
          "output: 'PASS <file>' or 'FAIL <file>: <reason>' per file, where a\n"
          "library warning (DSV4KV_WARN_*) on a file whose outputs all match is\n"
          "shown as 'PASS <file> (warning: <status>: <message>)' and a\n"
          "mismatch reads '<tensor> first differs at element <i> (<coords>): got <v>\n"
          "expected <v>; <n> of <total> elements differ', then 'N passed, N failed'.\n"
          "exit status: 0 if at least one file was checked and all passed, 1 if\n"
          "any file failed or a path could not be read, 2 for a usage error or\n"
          "a device without a backend.\n");
}

/* ------------------------------------------------------------------------ */
/* path list                                                                   */
/* ------------------------------------------------------------------------ */
typedef struct {
  char **items;
  size_t len, cap;
} str_list;

static int list_push(str_list *l, char *s) {
  if (!s) return -1;
  if (l->len == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    char **items = realloc(l->items, cap * sizeof *items);
    if (!items) {
      free(s);
      return -1;
    }
    l->items = items;
    l->cap = cap;
  }
  l->items[l->len++] = s;
  return 0;
}

static void list_free(str_list *l) {
  for (size_t i = 0; i < l->len; i++) free(l->items[i]);
  free(l->items);
  memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n > m && !strcmp(s + n - m, suffix);
}

static char *join_path(const char *dir, const char *name) {
  size_t n = strlen(dir);
  int slash = n > 0 && dir[n - 1] == '/';
  char *p = malloc(n + strlen(name) + 2);
  if (p) sprintf(p, "%s%s%s", dir, slash ? "" : "/", name);
  return p;
}

/* Appends the directory's *.safetensors entries but directories, sorted by name (a
 * byte-wise order, so the run order does not depend on the locale). */
static int expand_dir(const char *dir, str_list *files, char *err, size_t err_len) {
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, err_len, "cannot read directory: %s", strerror(errno));
    return -1;
  }
  str_list found = {0};
  struct dirent *e;
  int rc = 0;
  while (!rc && (e = readdir(d))) {
    if (!has_suffix(e->d_name, ".safetensors")) continue;
    char *path = join_path(dir, e->d_name);
    struct stat sb;
    if (path && !stat(path, &sb) && S_ISDIR(sb.st_mode)) { /* a dir named x.safetensors: not a file; a FIFO or a
                                                              device is listed, and fails as not a regular file */
      free(path);
      continue;
    }
    if (list_push(&found, path)) {
      snprintf(err, err_len, "out of memory listing the directory");
      rc = -1;
    }
  }
  closedir(d);
  if (found.len) qsort(found.items, found.len, sizeof *found.items, cmp_str);
  for (size_t i = 0; i < found.len && !rc; i++) {
    if (list_push(files, found.items[i])) {
      snprintf(err, err_len, "out of memory listing the directory");
      rc = -1;
    }
    found.items[i] = NULL;
  }
  list_free(&found);
  if (!rc && files->len == 0) snprintf(err, err_len, "no *.safetensors files in the directory");
  return rc;
}

/* ------------------------------------------------------------------------ */
/* running                                                                     */
/* ------------------------------------------------------------------------ */
typedef struct {
  DLDeviceType device;
  int verbose;
  long passed, failed;
} run_state;

/* A passing file may carry a note: the library's warning (DSV4KV_WARN_*) on
 * a call whose outputs all matched. */
static void report(run_state *s, const char *path, int ok, const char *why) {
  if (ok) {
    if (why && *why) printf("PASS %s (warning: %s)\n", path, why);
    else printf("PASS %s\n", path);
    s->passed++;
  } else {
    printf("FAIL %s: %s\n", path, why && *why ? why : "failed (no reason given)");
    s->failed++;
  }
  fflush(stdout); /* progress shows even when piped (the sparse cases take a while) */
}

static void verify_file(run_state *s, const char *path) {
  char msg[4096];
  golden_info info;
  int rc = golden_verify_file(path, s->device, msg, sizeof msg, &info);
  report(s, path, rc == 0, msg);
  if (s->verbose)
    printf("  op %s, %.3f ms in the library\n", info.op[0] ? info.op : "?",
           1e3 * info.call_seconds);
}

static void verify_path(run_state *s, const char *path) {
  struct stat sb;
  if (stat(path, &sb)) {
    char why[256];
    snprintf(why, sizeof why, "cannot open: %s", strerror(errno));
    report(s, path, 0, why);
    return;
  }
  if (!S_ISDIR(sb.st_mode)) {
    verify_file(s, path);
    return;
  }
  str_list files = {0};
  char err[256] = "";
  if (expand_dir(path, &files, err, sizeof err) || files.len == 0) {
    /* An empty directory is reported as a failure: a test pointed at the
     * wrong folder must not pass by checking nothing. */
    report(s, path, 0, err);
  }
  for (size_t i = 0; i < files.len; i++) verify_file(s, files.items[i]);
  list_free(&files);
}

static int parse_device(const char *name, DLDeviceType *out) {
  if (!strcmp(name, "cpu")) *out = kDLCPU;
  else if (!strcmp(name, "cuda")) *out = kDLCUDA;
  else return -1;
  return 0;
}

int cmd_verify(int argc, char **argv) {
  static const struct option longopts[] = {
      {"device", required_argument, NULL, 'd'},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  run_state s = {kDLCPU, 0, 0, 0};
  optind = 1; /* argv[0] is "verify" */
  opterr = 0; /* our own messages below */
  int ch;
  while ((ch = getopt_long(argc, argv, ":d:vh", longopts, NULL)) != -1) {
    switch (ch) {
    case 'd':
      if (parse_device(optarg, &s.device)) {
        fprintf(stderr, "dsv4kv verify: unknown device '%s' (cpu or cuda)\n", optarg);
        return EXIT_USAGE;
      }
      break;
    case 'v':
      s.verbose = 1;
      break;
    case 'h':
      usage(stdout);
      return EXIT_ALL_PASSED;
    default: /* ':' or '?' */
      cli_option_error("verify", ch, argv); /* one line, which names --help, as the other commands */
      return EXIT_USAGE;
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "dsv4kv verify: no PATH given\n");
    usage(stderr);
    return EXIT_USAGE;
  }
  /* One answer, not one FAIL line per file, when the device has no backend. */
  if (s.device != kDLCPU && !dsv4kv_backend_available(s.device)) {
    fprintf(stderr, "dsv4kv verify: --device cuda: CUDA cannot run here: %s; run with --device cpu\n",
            dsv4kv_backend_unavailable_reason(s.device));
    return EXIT_USAGE;
  }
  for (int i = optind; i < argc; i++) verify_path(&s, argv[i]);
  printf("%ld passed, %ld failed\n", s.passed, s.failed);
  return s.failed == 0 && s.passed > 0 ? EXIT_ALL_PASSED : EXIT_SOME_FAILED;
}
