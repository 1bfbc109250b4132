/* How many processors the CPU backend's teams may count on: the ones the
 * process may run on (omp_get_num_procs: its affinity mask), capped by a
 * cgroup CPU quota (a container's --cpus): a team larger than the quota
 * only gets the process throttled, and a worker watching for the next call
 * spends the quota for nothing (measured beside a 1-CPU quota on 2 visible
 * processors: calls of 0.2 ms took up to 49 ms, the process throttled for
 * ~190 ms a second). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cpu/cpu.h"

enum { CG_PATH_MAX = 1024, CG_LINE_MAX = 1536 };

/* The first line of a small file into buf; 0 when it cannot be read. */
static int read_line(const char *path, char *buf, int n) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  const int ok = fgets(buf, n, f) != NULL;
  fclose(f);
  return ok;
}

/* The quota in processors of the cgroup directory dir (v2 cpu.max "max
 * 100000" or "QUOTA PERIOD"; v1 cpu.cfs_quota_us / cpu.cfs_period_us), or 0
 * where it sets none. */
static double quota_of_dir(const char *dir) {
  char path[CG_PATH_MAX + 32], line[128];
  long long q = 0, p = 0;
  snprintf(path, sizeof path, "%s/cpu.max", dir);
  if (read_line(path, line, sizeof line)) {
    if (sscanf(line, "%lld %lld", &q, &p) == 2 && q > 0 && p > 0) return (double)q / (double)p;
    return 0; /* "max": none */
  }
  snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
  if (!read_line(path, line, sizeof line) || sscanf(line, "%lld", &q) != 1 || q <= 0) return 0;
  snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
  if (!read_line(path, line, sizeof line) || sscanf(line, "%lld", &p) != 1 || p <= 0) return 0;
  return (double)q / (double)p;
}

/* The smallest quota of mount/rel and each directory above it up to mount
 * (a cgroup is held to its ancestors' quotas too); 0 where none sets one. */
static double quota_up_from(const char *mount, const char *rel) {
  char dir[CG_PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s%s", mount, rel) >= (int)sizeof dir) return 0;
  const size_t base = strlen(mount);
  double best = 0;
  for (;;) {
    const double q = quota_of_dir(dir);
    if (q > 0 && (best == 0 || q < best)) best = q;
    char *slash = strrchr(dir, '/');
    if (!slash || (size_t)(slash - dir) < base) break;
    *slash = '\0';
  }
  return best;
}

double cpu_cgroup_quota(const char *proc_cgroup, const char *sys_cgroup) {
  static const char *const v2_mounts[] = {"", "/unified"};
  static const char *const v1_mounts[] = {"/cpu", "/cpu,cpuacct", "/cpuacct,cpu"};
  FILE *f = fopen(proc_cgroup, "r");
  if (!f) return 0;
  char line[CG_LINE_MAX], mount[CG_PATH_MAX];
  double best = 0;
  for (int lines = 0; lines < 64 && fgets(line, sizeof line, f); lines++) {
    /* "ID:CONTROLLERS:PATH": v2's line is "0::PATH"; v1's cpu line names "cpu" among its controllers */
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/') continue;
    c2[strcspn(c2, "\n")] = '\0';
    const char *rel = strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1;
    *c2 = '\0';
    const char *ctrl = c1 + 1;
    int v1_cpu = 0;
    for (const char *t = ctrl; *t;) {
      const size_t n = strcspn(t, ",");
      v1_cpu |= n == 3 && strncmp(t, "cpu", 3) == 0;
      t += n + (t[n] == ',');
    }
    const int v2 = *ctrl == '\0';
    if (!v2 && !v1_cpu) continue;
    const char *const *mounts = v2 ? v2_mounts : v1_mounts;
    const int nm = v2 ? 2 : 3;
    for (int m = 0; m < nm; m++) {
      if (snprintf(mount, sizeof mount, "%s%s", sys_cgroup, mounts[m]) >= (int)sizeof mount) continue;
      const double q = quota_up_from(mount, rel);
      if (q > 0 && (best == 0 || q < best)) best = q;
    }
  }
  fclose(f);
  return best;
}

static int procs;
static pthread_once_t procs_once = PTHREAD_ONCE_INIT;
static void read_procs(void) {
  procs = omp_get_num_procs();
  const double q = cpu_cgroup_quota("/proc/self/cgroup", "/sys/fs/cgroup");
  if (q > 0 && q < procs) procs = (int)ceil(q); /* 1.5 processors: a team of 2 still gains */
  if (procs < 1) procs = 1;
}
int cpu_procs(void) {
  pthread_once(&procs_once, read_procs);
  return procs;
}
