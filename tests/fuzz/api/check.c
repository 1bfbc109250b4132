/*
 * The harness's findings and contract checks: fz_issue records a finding,
 * fz_dump_all prints an iteration's arguments for reproduction, and fz_exec3
 * runs one call with 1, 2 and 3 threads and checks the status / message /
 * counter / report contract, the bytes written and the inputs left alone.
 */
#include <stdarg.h>

#include "fuzz.h"

/* ------------------------------------------------------------------------ */
/* Findings                                                                   */
/* ------------------------------------------------------------------------ */
struct fz_kind fz_g_kinds[MAX_KINDS];
int fz_g_nkinds;
char fz_g_ignore[1024];

void fz_issue(const char *kind, const char *fmt, ...) {
  int k;
  for (k = 0; k < fz_g_nkinds; k++)
    if (!strcmp(fz_g_kinds[k].kind, kind)) break;
  if (k == fz_g_nkinds && fz_g_nkinds < MAX_KINDS) {
    snprintf(fz_g_kinds[k].kind, sizeof fz_g_kinds[k].kind, "%s", kind);
    fz_g_nkinds++;
  }
  long c = k < MAX_KINDS ? ++fz_g_kinds[k].count : 1;
  if (c <= 3 || fz_g_verbose) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ISSUE [%s] iter %ld op %s: ", kind, fz_g_iter, fz_g_op);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (c == 1 && !fz_g_libfuzzer) fz_dump_all();
  }
  if (fz_g_libfuzzer && !strstr(fz_g_ignore, kind)) abort();
}

/* ------------------------------------------------------------------------ */
/* Dump (for reproduction)                                                   */
/* ------------------------------------------------------------------------ */
char fz_g_scalars[1024];
void fz_dump_all(void) {
  fprintf(stderr, "  scalars: %s\n", fz_g_scalars);
  for (int i = 0; i < fz_g_npool; i++) {
    Ten *T = &fz_g_pool[i];
    fprintf(stderr, "  %s%s: dtype(%d,%d,%d) ndim %d shape [", T->name, T->isnull ? " (passed NULL)" : "",
            T->t.dtype.code, T->t.dtype.bits, T->t.dtype.lanes, T->t.ndim);
    for (int d = 0; d < T->t.ndim; d++) fprintf(stderr, "%s%lld", d ? "," : "", (long long)T->shape[d]);
    fprintf(stderr, "] strides %s[", T->t.strides ? "" : "(NULL) ");
    for (int d = 0; d < T->t.ndim; d++) fprintf(stderr, "%s%lld", d ? "," : "", (long long)T->es[d]);
    fprintf(stderr, "] byte_offset %llu dev (%d,%d)%s%s", (unsigned long long)T->t.byte_offset,
            T->t.device.device_type, T->t.device.device_id, T->out ? " OUT" : "", T->aliased ? " ALIASED" : "");
    if ((T->elem == 4 || T->elem == 8 || T->elem == 1) && T->numel > 0 && T->numel <= 64 && T->t.ndim <= 2 &&
        T->t.dtype.code != kDLFloat && T->name[0] != 'k') {
      fprintf(stderr, " values {");
      int64_t n1 = T->t.ndim == 2 ? T->shape[1] : 1;
      for (int64_t i0 = 0; i0 < (T->t.ndim ? T->shape[0] : 1); i0++)
        for (int64_t i1 = 0; i1 < n1; i1++) {
          /* read the snapshot (initial) contents */
          int64_t off = (i0 * T->es[0] + (T->t.ndim == 2 ? i1 * T->es[1] : 0)) * T->elem;
          const uint8_t *p = T->snap + (T->data - T->buf) + off;
          int64_t v = 0;
          if (T->elem == 4) { int32_t w; memcpy(&w, p, 4); v = w; }
          else if (T->elem == 8) memcpy(&v, p, 8);
          else v = *p;
          fprintf(stderr, "%s%lld", (i0 || i1) ? "," : "", (long long)v);
        }
      fprintf(stderr, "}");
    }
    fprintf(stderr, "\n");
  }
}

/* ------------------------------------------------------------------------ */
/* Running one call three ways and checking the contract                    */
/* ------------------------------------------------------------------------ */
/* A host report the call must overwrite (poisoned so an unwritten one shows). */
void fz_report_poison(dsv4kv_report *rep) { memset(rep, 0xA5, sizeof *rep); }

/* The report contract of a call that did not fail (dsv4kv.h, dsv4kv_report):
 * on the CPU the report carries the host counters, turns into the status the
 * call returned and into the message it left in dsv4kv_last_error().
 * `skipped` / `nonf` are the host counters (NULL when not passed), `msg` the
 * call's dsv4kv_last_error(). */
void fz_check_report(const char *tag, dsv4kv_status st, const dsv4kv_report *rep, const int64_t *skipped,
                     const int64_t *nonf, const char *msg) {
  if (dsv4kv_is_error(st)) return;
  if (skipped && rep->skipped != *skipped)
    fz_issue("report-count", "%s: report.skipped %lld, options.skipped %lld", tag, (long long)rep->skipped,
             (long long)*skipped);
  if (nonf && rep->nonfinite != *nonf)
    fz_issue("report-count", "%s: report.nonfinite %lld, options.nonfinite %lld", tag, (long long)rep->nonfinite,
             (long long)*nonf);
  dsv4kv_status rst = dsv4kv_report_status(rep);
  if (rst != st)
    fz_issue("report-status", "%s: call returned %s, dsv4kv_report_status says %s", tag, dsv4kv_status_string(st),
             dsv4kv_status_string(rst));
  char rmsg[512]; /* the size of the library's message buffer: both truncate alike */
  size_t need = dsv4kv_report_message(rep, rmsg, sizeof rmsg);
  if (strcmp(rmsg, msg))
    fz_issue("report-message", "%s: %s: dsv4kv_report_message \"%s\", dsv4kv_last_error \"%s\"", tag,
             dsv4kv_status_string(st), rmsg, msg);
  if (need != strlen(rmsg) && need < sizeof rmsg)
    fz_issue("report-message", "%s: dsv4kv_report_message returned %zu for \"%s\"", tag, need, rmsg);
  if (dsv4kv_report_message(rep, NULL, 0) != need)
    fz_issue("report-message", "%s: dsv4kv_report_message(rep, NULL, 0) differs from the length it needs", tag);
}

static int names_arg(const char *msg, const char *const *names) {
  for (int i = 0; names[i]; i++)
    if (strstr(msg, names[i])) return 1;
  return 0;
}

static void check_outputs(Ten **outs, int nouts, dsv4kv_status st, const char *tag) {
  for (int o = 0; o < nouts; o++) {
    Ten *T = outs[o];
    if (!T) continue;
    size_t bad_pad = 0, bad_allowed = 0, changed = 0, first_pad = (size_t)-1, first_allowed = (size_t)-1;
    for (size_t i = 0; i < T->nbytes; i++) {
      if (T->buf[i] == T->snap[i]) continue;
      changed++;
      if (!T->mask[i]) { if (!bad_pad++) first_pad = i; }
      else if (!T->allowed[i]) { if (!bad_allowed++) first_allowed = i; }
    }
    if (bad_pad)
      fz_issue("write-outside-tensor", "%s (%s): %zu bytes changed outside the elements of %s (first at buffer byte %zu, "
               "data at %td)", tag, dsv4kv_status_string(st), bad_pad, T->name, first_pad, T->data - T->buf);
    if (bad_allowed)
      fz_issue("write-not-allowed-by-spec", "%s (%s): %zu bytes of %s changed that the op may not write (first at "
               "buffer byte %zu, data at %td)", tag, dsv4kv_status_string(st), bad_allowed, T->name, first_allowed,
            T->data - T->buf);
    if (changed && dsv4kv_is_error(st))
      fz_issue("write-on-error", "%s: %s returned but %zu bytes of %s changed", tag, dsv4kv_status_string(st), changed,
               T->name);
  }
}

static void check_inputs(Ten **outs, int nouts) {
  for (int i = 0; i < fz_g_npool; i++) {
    Ten *T = &fz_g_pool[i];
    int is_out = 0;
    for (int o = 0; o < nouts; o++) is_out |= outs[o] == T;
    if (is_out) continue;
    if (memcmp(T->buf, T->snap, T->nbytes))
      fz_issue("input-modified", "input %s was modified", T->name);
  }
}
long fz_g_stat[DSV4KV_STATUS_LAST + 1];
long fz_g_calls;

/* One run of fz_exec3: k 0 with 1 thread, k 1 with 2, k 2 (by iteration) with
 * NULL options or 0, -5, 3 or 2 threads; r receives its status, message,
 * counts and outputs. */
static void exec_one(call_fn f, void *ctx, Ten **outs, int nouts, const char *const *names, int check_nf, int k,
                     Res *r) {
  for (int o = 0; o < nouts; o++)
    if (outs[o]) memcpy(outs[o]->buf, outs[o]->snap, outs[o]->nbytes);
  int64_t skipped = -777, nonf = -777;
  dsv4kv_report rep;
  fz_report_poison(&rep);
  /* a report on the 1-thread run always, on the others every other iteration */
  int with_report = k == 0 || ((fz_g_iter >> (1 + k)) & 1);
  dsv4kv_options opt = {&skipped, &nonf, check_nf, k == 0 ? 1 : k == 1 ? 2 : ((fz_g_iter & 15) == 3 ? 3 : 2), NULL,
                        with_report ? &rep : NULL, 0};
  const dsv4kv_options *op = &opt;
  if (k == 2 && (fz_g_iter & 3) == 0) op = NULL;
  if (k == 2 && (fz_g_iter & 3) == 1) opt.num_threads = 0;
  if (k == 2 && (fz_g_iter & 3) == 2) opt.num_threads = -5;
  dsv4kv_status st = f(ctx, op);
  fz_g_calls++;
  r->st = st;
  snprintf(r->msg, sizeof r->msg, "%s", dsv4kv_last_error());
  r->skipped = skipped;
  r->nonfinite = nonf;
  r->have_counts = op != NULL;
  char tag[32];
  snprintf(tag, sizeof tag, "threads=%d", op ? opt.num_threads : -1);
  if ((unsigned)st > g_max_status) fz_issue("bad-status", "%s: status %d is not a dsv4kv_status", tag, (int)st);
  if (k == 0 && (unsigned)st <= g_max_status) fz_g_stat[st]++;
  if (st != DSV4KV_OK) {
    if (!r->msg[0]) fz_issue("empty-message", "%s: %s with empty dsv4kv_last_error()", tag, dsv4kv_status_string(st));
    else if (!names_arg(r->msg, names))
      fz_issue(st == DSV4KV_WARN_NONFINITE ? "message-names-no-argument(NONFINITE)" : "message-names-no-argument",
               "%s: %s: \"%s\"", tag, dsv4kv_status_string(st), r->msg);
  } else if (r->msg[0]) {
    fz_issue("message-on-ok", "%s: OK but last_error = \"%s\"", tag, r->msg);
  }
  if (r->have_counts && !dsv4kv_is_error(st)) {
    if (st == DSV4KV_WARN_SKIPPED && !(skipped > 0)) fz_issue("skipped-count", "%s: WARN_SKIPPED with skipped = %lld", tag, (long long)skipped);
    if (st != DSV4KV_WARN_SKIPPED && skipped != 0) fz_issue("skipped-count", "%s: %s with skipped = %lld", tag, dsv4kv_status_string(st), (long long)skipped);
    if (st == DSV4KV_WARN_NONFINITE && !(check_nf && nonf > 0))
      fz_issue("nonfinite-count", "%s: WARN_NONFINITE with nonfinite = %lld, check = %d", tag, (long long)nonf, check_nf);
    if (!check_nf && nonf != 0) fz_issue("nonfinite-count", "%s: check off but nonfinite = %lld", tag, (long long)nonf);
    if (with_report) fz_check_report(tag, st, &rep, &skipped, &nonf, r->msg);
  }
  check_outputs(outs, nouts, st, tag);
  for (int o = 0; o < nouts; o++)
    if (outs[o]) {
      r->outs[o] = malloc(outs[o]->nbytes ? outs[o]->nbytes : 1);
      memcpy(r->outs[o], outs[o]->buf, outs[o]->nbytes);
    }
}

/* fz_exec3's determinism check: runs 1 and 2 against the 1-thread run. */
static void compare_runs(const Res *rs, Ten **outs, int nouts, int aliased) {
  /* determinism */
  for (int k = 1; k < 3; k++) {
    const char *kind = aliased ? "thread-dependence(aliased-output)" : "thread-dependence";
    int null_opt_nf = !rs[k].have_counts && rs[0].st == DSV4KV_WARN_NONFINITE && rs[k].st == DSV4KV_OK;
    int nf_only = (rs[k].st == DSV4KV_OK && rs[0].st == DSV4KV_WARN_NONFINITE) ||
                  (rs[0].st == DSV4KV_OK && rs[k].st == DSV4KV_WARN_NONFINITE);
    if (rs[k].st != rs[0].st && !null_opt_nf && nf_only)
      fz_issue("thread-dependence(nonfinite-count)", "status differs: 1 thread %s, run %d %s", dsv4kv_status_string(rs[0].st),
               k, dsv4kv_status_string(rs[k].st));
    else if (rs[k].st != rs[0].st && !null_opt_nf)
      fz_issue(kind, "status differs: 1 thread %s, run %d %s", dsv4kv_status_string(rs[0].st), k,
               dsv4kv_status_string(rs[k].st));
    else if (rs[k].have_counts && rs[k].skipped == rs[0].skipped && rs[k].nonfinite != rs[0].nonfinite)
      fz_issue("thread-dependence(nonfinite-count)", "nonfinite differs: 1 thread %lld, run %d %lld", (long long)rs[0].nonfinite, k,
               (long long)rs[k].nonfinite);
    else if (rs[k].have_counts && (rs[k].skipped != rs[0].skipped || rs[k].nonfinite != rs[0].nonfinite))
      fz_issue(kind, "counts differ: 1 thread skipped %lld nonfinite %lld; run %d: %lld %lld", (long long)rs[0].skipped,
               (long long)rs[0].nonfinite, k, (long long)rs[k].skipped, (long long)rs[k].nonfinite);
    for (int o = 0; o < nouts; o++)
      if (outs[o] && memcmp(rs[k].outs[o], rs[0].outs[o], outs[o]->nbytes))
        fz_issue(kind, "output %s bytes differ between 1 thread and run %d", outs[o]->name, k);
  }
}

/* Runs call with num_threads 1, 2 and (NULL opt | 3 | 0); checks everything;
 * r1 receives the 1-thread result (outputs copied). */
void fz_exec3(call_fn f, void *ctx, Ten **outs, int nouts, const char *const *names, int check_nf, Res *r1) {
  Res rs[3];
  memset(rs, 0, sizeof rs);
  int aliased = 0;
  for (int o = 0; o < nouts; o++) aliased |= outs[o] && outs[o]->aliased;
  if (fz_g_verbose) fz_dump_all();
  for (int k = 0; k < 3; k++) exec_one(f, ctx, outs, nouts, names, check_nf, k, &rs[k]);
  if (fz_g_expect_err && !dsv4kv_is_error(rs[0].st) && !(fz_g_expect_soft && fz_g_shape_mut))
    fz_issue("bad-argument-accepted", "%s accepted (%s)", fz_g_expect_why, dsv4kv_status_string(rs[0].st));
  compare_runs(rs, outs, nouts, aliased);
  check_inputs(outs, nouts);
  /* leave the 1-thread result in the outputs */
  for (int o = 0; o < nouts; o++)
    if (outs[o]) memcpy(outs[o]->buf, rs[0].outs[o], outs[o]->nbytes);
  *r1 = rs[0];
  for (int k = 0; k < 3; k++)
    for (int o = 0; o < nouts; o++) {
      if (k == 0) continue;
      free(rs[k].outs[o]);
    }
}
void fz_res_free(Res *r) {
  for (int o = 0; o < 8; o++) free(r->outs[o]);
}
