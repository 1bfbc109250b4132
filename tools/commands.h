/* Subcommands of the dsv4kv CLI: each takes the arguments after its name
 * (argv[0] is the subcommand) and returns the process exit status. */
#ifndef DSV4KV_TOOLS_COMMANDS_H
#define DSV4KV_TOOLS_COMMANDS_H

int cmd_verify(int argc, char **argv); /* tools/verify.c */
int cmd_run(int argc, char **argv);    /* tools/run.c    */
int cmd_bench(int argc, char **argv);  /* tools/bench.c  */

/* getopt_long's ':' (a missing value) or '?' (an unknown option) of
 * subcommand cmd as one line on stderr naming the option (tools/main.c). */
void cli_option_error(const char *cmd, int ch, char *const *argv);

/* When DSV4KV_CPU_PATH is set but names no path this build and processor
 * run (so the library ignored it), why, as one sentence; else NULL
 * (tools/main.c). */
const char *cli_cpu_path_ignored(void);

/* The commit the build was made from, or NULL (tools/main.c). */
const char *cli_git_commit(void);

#endif
