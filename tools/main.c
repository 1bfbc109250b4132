/* dsv4kv: the command-line front end.  Dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "dsv4kv.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: dsv4kv <command> [options]\n"
          "\n"
          "commands:\n"
          "  run      replay a serving workload through the K caches and report\n"
          "  verify   check the library against golden safetensors files\n"
          "  version  print the library version (also -V, --version)\n"
          "\n"
          "'dsv4kv <command> --help' describes a command's options.\n");
}

/* The library's run-time version (the one actually loaded), the commit the
 * build was configured at when known, and the header's when it differs. */
static int print_version(void) {
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", DSV4KV_VERSION_MAJOR, DSV4KV_VERSION_MINOR,
           DSV4KV_VERSION_PATCH);
  const char *lib = dsv4kv_version();
  printf("dsv4kv %s", lib);
#ifdef DSV4KV_GIT_COMMIT
  printf(" (commit %s)", DSV4KV_GIT_COMMIT);
#endif
  if (strcmp(lib, header) != 0)
    printf(" (built against header %s)", header);
  printf("\n");
  return 0;
}

int main(int argc, char **argv) {
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
    return print_version();
  if (!strcmp(cmd, "verify")) return cmd_verify(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  fprintf(stderr, "dsv4kv: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}
