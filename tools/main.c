/* dsv4kv: the command-line front end.  Dispatches to one subcommand. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "dsv4kv.h"
#include "plot.h"
#include "dsv4kv_git_commit.h" /* DSV4KV_GIT_COMMIT, when known: generated at each build (cmake/git_commit.cmake) */

static void usage(FILE *f) {
  fprintf(f,
          "usage: dsv4kv <command> [options]\n"
          "\n"
          "commands:\n"
          "  run      replay a serving workload through the K caches and report\n"
          "  plot     draw a JSON report of 'run' with gnuplot (.png or .svg)\n"
          "  verify   check the library against golden safetensors files\n"
          "  bench    time every op at the reference's sizes beside the copy bandwidth\n"
          "  version  print the library version (also -V, --version)\n"
          "\n"
          "'dsv4kv <command> --help' describes a command's options.  Every command exits 2\n"
          "when its standard output cannot be written.\n"
          "\n"
          "environment (the CPU backend; a malformed value is ignored):\n"
          "  DSV4KV_CPU_PATH=scalar|avx2|avx512  the SIMD path (default: the best this processor runs)\n"
          "  DSV4KV_CPU_PARALLEL_MIN_NS=N        single-thread estimate from which a call wakes\n"
          "                                      workers (default 200000; 0: every call, all threads)\n"
          "  DSV4KV_CPU_SPIN_US=N                how long a worker watches for the next call before\n"
          "                                      it sleeps (default 50; 0: at once)\n"
          "  DSV4KV_CPU_NT_MIN_BYTES=N           output size from which rows are stored non-temporally\n"
          "                                      (default 33554432)\n");
}

static void usage_version(FILE *f) {
  fprintf(f,
          "usage: dsv4kv version   (also dsv4kv --version, dsv4kv -V)\n"
          "\n"
          "Prints the version of the library actually loaded (dsv4kv_version()), the git\n"
          "commit the build was made from when known, the header's version when\n"
          "it differs from the library's, the CPU kernel paths this processor runs (the one\n"
          "in use: DSV4KV_CPU_PATH=NAME picks another) and the backends that can run here.\n");
}

void cli_option_error(const char *cmd, int ch, char *const *argv) {
  const char *arg = optind > 0 ? argv[optind - 1] : "";
  const int long_opt = arg && !strncmp(arg, "--", 2);
  if (ch == ':')
    fprintf(stderr, "dsv4kv %s: option '%s' needs a value (see 'dsv4kv %s --help')\n", cmd, arg, cmd);
  else if (long_opt && optopt) /* a known long option given a value it does not take (--quiet=1) */
    fprintf(stderr, "dsv4kv %s: option '%.*s' takes no value (see 'dsv4kv %s --help')\n", cmd,
            (int)strcspn(arg, "="), arg, cmd);
  else if (optopt && !long_opt) /* a short one: in a cluster (-xh) argv[optind - 1] is not the option */
    fprintf(stderr, "dsv4kv %s: unknown option '-%c' (see 'dsv4kv %s --help')\n", cmd, optopt, cmd);
  else
    fprintf(stderr, "dsv4kv %s: unknown option '%s' (see 'dsv4kv %s --help')\n", cmd, argv[optind - 1], cmd);
}

const char *cli_cpu_path_ignored(void) {
  static char why[160];
  const char *env = getenv("DSV4KV_CPU_PATH");
  if (!env || !*env) return NULL;
  for (int i = 0; i < dsv4kv_cpu_path_count(); i++)
    if (!strcmp(env, dsv4kv_cpu_path_name(i))) return NULL;
  snprintf(why, sizeof why, "DSV4KV_CPU_PATH=%.40s ignored: not a path this build and processor run", env);
  return why;
}

const char *cli_git_commit(void) {
#ifdef DSV4KV_GIT_COMMIT
  return DSV4KV_GIT_COMMIT;
#else
  return NULL;
#endif
}

/* The library's run-time version (the one actually loaded), the commit the
 * build was made from when known, and the header's when it differs. */
static int print_version(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage_version(stdout);
      return 0;
    }
    fprintf(stderr, "dsv4kv version: unexpected argument '%s'\n", argv[i]);
    usage_version(stderr);
    return 2;
  }
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", DSV4KV_VERSION_MAJOR, DSV4KV_VERSION_MINOR,
           DSV4KV_VERSION_PATCH);
  const char *lib = dsv4kv_version();
  printf("dsv4kv %s", lib);
  if (cli_git_commit())
    printf(" (commit %s)", cli_git_commit());
  if (strcmp(lib, header) != 0)
    printf(" (built against header %s)", header);
  printf("\ncpu paths:");
  for (int i = 0; i < dsv4kv_cpu_path_count(); i++) printf(" %s", dsv4kv_cpu_path_name(i));
  printf(" (in use: %s)", dsv4kv_cpu_path_current());
  const char *ignored = cli_cpu_path_ignored();
  if (ignored) printf("; %s", ignored);
  if (dsv4kv_backend_available(kDLCUDA))
    printf("\nbackends: cpu, cuda\n");
  else
    printf("\nbackends: cpu (cuda: %s)\n", dsv4kv_backend_unavailable_reason(kDLCUDA));
  return 0;
}

/* A command's exit status once what it printed is flushed: a standard
 * output that could not take it (a full disk, a closed pipe) is a failed
 * output, exit 2, as an unwritable --json file is. */
static int finish(int rc) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "dsv4kv: cannot write to standard output: %s\n", strerror(errno));
    return 2;
  }
  return rc;
}

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") || !strcmp(cmd, "-V"))
    return print_version(argc - 1, argv + 1);
  if (!strcmp(cmd, "verify")) return cmd_verify(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
  if (!strcmp(cmd, "plot")) return sim_plot_command(argc - 1, argv + 1);
  fprintf(stderr, "dsv4kv: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}

int main(int argc, char **argv) { return finish(dispatch(argc, argv)); }
