/* Trace parsing: Mooncake JSONL and Azure LLM-inference CSV (auto-detected).
 *
 * Mooncake (kvcache-ai/Mooncake FAST25 traces), one JSON object per line:
 *   {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}
 *   with ceil(input_length / 512) hash ids, one per 512-token prompt block.
 * Azure (Azure/AzurePublicDataset 2023), CSV with CRLF line endings:
 *   TIMESTAMP,ContextTokens,GeneratedTokens
 *   2023-11-16 18:15:46.6805900,374,44
 *
 * Every line is validated; nothing in a file can make the parser read outside
 * its buffers or abort, and no line may exceed SIM_TRACE_MAX_LINE bytes. */
#define _POSIX_C_SOURCE 200809L

#include "trace.h"
#include "files.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* How many skipped lines are described one by one on the diagnostic stream. */
#define SIM_TRACE_DIAG_LINES 5

typedef struct {
  const char *path;
  int64_t lineno;
  char why[256]; /* reason of the current line's rejection */
} line_ctx;

static void set_why(line_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, sizeof c->why, fmt, ap);
  va_end(ap);
}

static int is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isspace((unsigned char)s[i]))
      return 0;
  return 1;
}

/* ---------------------------------------------------------------------- */
/* Numbers                                                                  */
/* ---------------------------------------------------------------------- */

/* A JSON number that must be an integer in [lo, hi]. */
static int json_int(line_ctx *c, const cJSON *obj, const char *key, int64_t lo, int64_t hi,
                    int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    set_why(c, "\"%s\" is missing", key);
    return -1;
  }
  if (!cJSON_IsNumber(v)) {
    set_why(c, "\"%s\" is not a number", key);
    return -1;
  }
  double d = v->valuedouble;
  if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi) {
    set_why(c, "\"%s\" = %.17g is not an integer in [%lld, %lld]", key, d, (long long)lo,
            (long long)hi);
    return -1;
  }
  *out = (int64_t)d;
  return 0;
}

/* A decimal integer field of a CSV row, in [lo, hi]. */
static int text_int(line_ctx *c, const char *name, const char *s, size_t n, int64_t lo, int64_t hi,
                    int64_t *out) {
  char buf[32];
  if (n == 0) {
    set_why(c, "%s is empty", name);
    return -1;
  }
  if (n >= sizeof buf) {
    set_why(c, "%s is not an integer (%zu characters)", name, n);
    return -1;
  }
  memcpy(buf, s, n);
  buf[n] = 0;
  for (size_t i = 0; i < n; i++)
    if (!isdigit((unsigned char)buf[i]) && !(i == 0 && (buf[i] == '-' || buf[i] == '+'))) {
      set_why(c, "%s \"%s\" is not an integer", name, buf);
      return -1;
    }
  errno = 0;
  char *end = NULL;
  long long v = strtoll(buf, &end, 10);
  if (errno || end != buf + n || v < lo || v > hi) {
    set_why(c, "%s %s is out of range [%lld, %lld]", name, buf, (long long)lo, (long long)hi);
    return -1;
  }
  *out = v;
  return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* Reads exactly `n` digits at s[*i]. */
static int digits(const char *s, size_t len, size_t *i, int n, int64_t *out) {
  int64_t v = 0;
  for (int k = 0; k < n; k++, (*i)++) {
    if (*i >= len || !isdigit((unsigned char)s[*i]))
      return -1;
    v = v * 10 + (s[*i] - '0');
  }
  *out = v;
  return 0;
}

/* "YYYY-MM-DD HH:MM:SS[.fffffff]" (a 'T' separator is accepted) -> ms since epoch. */
static int parse_timestamp(line_ctx *c, const char *s, size_t len, double *ms) {
  size_t i = 0;
  int64_t y, mo, d, h, mi, se;
  if (digits(s, len, &i, 4, &y) || i >= len || s[i++] != '-' || digits(s, len, &i, 2, &mo) ||
      i >= len || s[i++] != '-' || digits(s, len, &i, 2, &d) || i >= len ||
      (s[i] != ' ' && s[i] != 'T') || (++i, digits(s, len, &i, 2, &h)) || i >= len ||
      s[i++] != ':' || digits(s, len, &i, 2, &mi) || i >= len || s[i++] != ':' ||
      digits(s, len, &i, 2, &se))
    goto bad;
  /* second 60: a leap second, as UTC has them; year 0000 is the proleptic
   * calendar's (ISO 8601) */
  static const int8_t month_days[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > month_days[mo - 1] || h > 23 || mi > 59 || se > 60)
    goto bad;
  if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
    goto bad; /* February 29th of a year that is not a leap year */
  double frac = 0.0, unit = 0.1;
  if (i < len && s[i] == '.') {
    i++;
    if (i >= len || !isdigit((unsigned char)s[i]))
      goto bad;
    for (; i < len && isdigit((unsigned char)s[i]); i++, unit *= 0.1)
      frac += (s[i] - '0') * unit;
  }
  if (i != len)
    goto bad;
  *ms = ((double)days_from_civil(y, mo, d) * 86400.0 + (double)(h * 3600 + mi * 60 + se) + frac) *
        1000.0;
  return 0;
bad:
  set_why(c, "TIMESTAMP \"%.*s\" is not YYYY-MM-DD HH:MM:SS[.fraction]", (int)(len > 40 ? 40 : len),
          s);
  return -1;
}

/* ---------------------------------------------------------------------- */
/* Mooncake JSONL                                                           */
/* ---------------------------------------------------------------------- */

/* Whether one of the keys a request is read from appears twice in obj (set
 * in c): the parser would take the first silently, as the safetensors
 * reader refuses to. */
static int duplicate_key(line_ctx *c, const cJSON *obj) {
  static const char *const keys[] = {"timestamp", "input_length", "output_length", "hash_ids"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    int seen = 0;
    for (const cJSON *it = obj->child; it; it = it->next)
      seen += it->string && !strcmp(it->string, keys[k]);
    if (seen > 1) {
      set_why(c, "\"%s\" appears %d times", keys[k], seen);
      return 1;
    }
  }
  return 0;
}

static int parse_mooncake(line_ctx *c, const char *line, size_t len, sim_request_spec *r,
                          int64_t **ids_buf, size_t *ids_cap) {
  const char *end = NULL;
  cJSON *obj = cJSON_ParseWithLengthOpts(line, len, &end, 0);
  if (!obj) {
    size_t at = (end && end >= line && end <= line + len) ? (size_t)(end - line) : 0;
    set_why(c, "not valid JSON (near column %zu)", at + 1);
    return -1;
  }
  int rc = -1;
  if (end && end >= line && end <= line + len && !is_blank(end, (size_t)(line + len - end))) {
    set_why(c, "unexpected text after the JSON object (column %zu)", (size_t)(end - line) + 1);
    goto out;
  }
  if (!cJSON_IsObject(obj)) {
    set_why(c, "not a JSON object");
    goto out;
  }
  if (duplicate_key(c, obj))
    goto out;
  const cJSON *ts = cJSON_GetObjectItemCaseSensitive(obj, "timestamp");
  if (!ts) {
    set_why(c, "\"timestamp\" is missing");
    goto out;
  }
  if (!cJSON_IsNumber(ts) || !isfinite(ts->valuedouble) || fabs(ts->valuedouble) > 1e15) {
    set_why(c, "\"timestamp\" is not a finite number of milliseconds");
    goto out;
  }
  int64_t in, outl;
  if (json_int(c, obj, "input_length", 1, SIM_MAX_REQUEST_TOKENS, &in))
    goto out;
  if (json_int(c, obj, "output_length", 0, SIM_MAX_REQUEST_TOKENS, &outl))
    goto out;
  if (in + outl > SIM_MAX_REQUEST_TOKENS) {
    set_why(c, "input_length + output_length = %lld tokens: more than the model's context of %d",
            (long long)(in + outl), SIM_MAX_REQUEST_TOKENS);
    goto out;
  }
  r->arrival_ms = ts->valuedouble;
  r->input_len = (int32_t)in;
  r->output_len = (int32_t)outl;
  r->num_hash = 0;
  r->hash_ids = NULL;
  const cJSON *ids = cJSON_GetObjectItemCaseSensitive(obj, "hash_ids");
  if (ids) {
    if (!cJSON_IsArray(ids)) {
      set_why(c, "\"hash_ids\" is not an array");
      goto out;
    }
    int64_t want = (in + SIM_HASH_BLOCK_TOKENS - 1) / SIM_HASH_BLOCK_TOKENS;
    int64_t have = cJSON_GetArraySize(ids);
    if (have != want) {
      set_why(c, "\"hash_ids\" has %lld entries, expected ceil(input_length / %d) = %lld",
              (long long)have, SIM_HASH_BLOCK_TOKENS, (long long)want);
      goto out;
    }
    if ((size_t)have > *ids_cap) {
      int64_t *p = realloc(*ids_buf, (size_t)have * sizeof *p);
      if (!p) {
        set_why(c, "out of memory");
        goto out;
      }
      *ids_buf = p;
      *ids_cap = (size_t)have;
    }
    int64_t k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ids) {
      double d = cJSON_IsNumber(e) ? e->valuedouble : -1.0;
      if (!cJSON_IsNumber(e) || !isfinite(d) || d != floor(d) || d < 0 || d > 9007199254740992.0) {
        set_why(c, "\"hash_ids\"[%lld] is not a non-negative integer", (long long)k);
        goto out;
      }
      (*ids_buf)[k++] = (int64_t)d;
    }
    r->num_hash = (int32_t)have;
    r->hash_ids = *ids_buf;
  }
  rc = 0;
out:
  cJSON_Delete(obj);
  return rc;
}

/* ---------------------------------------------------------------------- */
/* Azure CSV                                                                */
/* ---------------------------------------------------------------------- */

#define CSV_MAX_FIELDS 64

typedef struct {
  int ncols;
  int col_ts, col_ctx, col_gen;
} csv_header;

/* Splits a line at commas; trims blanks and one pair of surrounding quotes. */
static int csv_split(const char *s, size_t len, const char **f, size_t *fl, int max) {
  int n = 0;
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i == len || s[i] == ',') {
      if (n == max)
        return -1;
      size_t a = start, b = i;
      while (a < b && isspace((unsigned char)s[a]))
        a++;
      while (b > a && isspace((unsigned char)s[b - 1]))
        b--;
      if (b - a >= 2 && s[a] == '"' && s[b - 1] == '"')
        a++, b--;
      f[n] = s + a;
      fl[n] = b - a;
      n++;
      start = i + 1;
    }
  }
  return n;
}

static int field_is(const char *f, size_t n, const char *name) {
  size_t m = strlen(name);
  if (n != m)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)f[i]) != tolower((unsigned char)name[i]))
      return 0;
  return 1;
}

static int parse_csv_header(line_ctx *c, const char *line, size_t len, csv_header *h) {
  const char *f[CSV_MAX_FIELDS];
  size_t fl[CSV_MAX_FIELDS];
  int n = csv_split(line, len, f, fl, CSV_MAX_FIELDS);
  if (n < 0) {
    const char *cr = memchr(line, '\r', len); /* a file of CR-only line endings reads as one line */
    if (cr && cr + 1 < line + len && cr[1] != '\n')
      set_why(c, "header has more than %d columns; the file's lines end in CR alone (convert them to LF)",
              CSV_MAX_FIELDS);
    else
      set_why(c, "header has more than %d columns", CSV_MAX_FIELDS);
    return -1;
  }
  h->ncols = n;
  h->col_ts = h->col_ctx = h->col_gen = -1;
  static const char *const names[3] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
  int *const col[3] = {&h->col_ts, &h->col_ctx, &h->col_gen};
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 3; k++)
      if (field_is(f[i], fl[i], names[k])) {
        if (*col[k] >= 0) { /* which one is meant is not ours to guess (the JSONL reader refuses duplicate keys too) */
          set_why(c, "header names %s twice (columns %d and %d)", names[k], *col[k] + 1, i + 1);
          return -1;
        }
        *col[k] = i;
      }
  if (h->col_ts < 0 || h->col_ctx < 0 || h->col_gen < 0) {
    set_why(c,
            "not a trace: a Mooncake JSONL line starts with '{', an Azure CSV header names "
            "TIMESTAMP, ContextTokens and GeneratedTokens");
    return -1;
  }
  return 0;
}

static int parse_csv_row(line_ctx *c, const csv_header *h, const char *line, size_t len,
                         sim_request_spec *r) {
  const char *f[CSV_MAX_FIELDS];
  size_t fl[CSV_MAX_FIELDS];
  int n = csv_split(line, len, f, fl, CSV_MAX_FIELDS);
  if (n != h->ncols) {
    set_why(c, "%d fields, the header has %d", n < 0 ? CSV_MAX_FIELDS + 1 : n, h->ncols);
    return -1;
  }
  int64_t ctx, gen;
  if (parse_timestamp(c, f[h->col_ts], fl[h->col_ts], &r->arrival_ms))
    return -1;
  if (text_int(c, "ContextTokens", f[h->col_ctx], fl[h->col_ctx], 1, SIM_MAX_REQUEST_TOKENS, &ctx))
    return -1;
  if (text_int(c, "GeneratedTokens", f[h->col_gen], fl[h->col_gen], 0, SIM_MAX_REQUEST_TOKENS,
               &gen))
    return -1;
  if (ctx + gen > SIM_MAX_REQUEST_TOKENS) {
    set_why(c, "ContextTokens + GeneratedTokens = %lld tokens: more than the model's context of %d",
            (long long)(ctx + gen), SIM_MAX_REQUEST_TOKENS);
    return -1;
  }
  r->input_len = (int32_t)ctx;
  r->output_len = (int32_t)gen;
  r->num_hash = 0;
  r->hash_ids = NULL;
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Driver                                                                   */
/* ---------------------------------------------------------------------- */

enum { LINE_EOF = -1, LINE_TOO_LONG = -2, LINE_READ_ERROR = -3, LINE_NO_MEMORY = -4 };

/* One line without its '\n' into *buf, NUL-terminated (embedded NULs kept,
 * so that they can be reported).  Returns its length or a LINE_* code; never
 * holds more than `max` bytes in memory, however long the line. */
static ssize_t read_line(FILE *fp, char **buf, size_t *cap, size_t max) {
  size_t n = 0;
  int ch;
  if (!*buf) {
    *cap = 4096 < max + 1 ? 4096 : max + 1;
    if (!(*buf = malloc(*cap)))
      return LINE_NO_MEMORY;
  }
  while ((ch = getc_unlocked(fp)) != EOF && ch != '\n') {
    if (n == max)
      return LINE_TOO_LONG;
    if (n + 1 >= *cap) {
      size_t grown = 2 * *cap;
      if (grown > max + 1)
        grown = max + 1;
      char *p = realloc(*buf, grown);
      if (!p)
        return LINE_NO_MEMORY;
      *buf = p;
      *cap = grown;
    }
    (*buf)[n++] = (char)ch;
  }
  (*buf)[n] = 0;
  if (ch == EOF && ferror(fp))
    return LINE_READ_ERROR;
  if (ch == EOF && n == 0)
    return LINE_EOF;
  return (ssize_t)n;
}

typedef struct {
  line_ctx c;
  int format; /* 0 unknown, 1 Mooncake, 2 Azure */
  csv_header hdr;
  int64_t *ids;
  size_t ids_cap;
  int skip_bad;
  FILE *diag;
} trace_state;

/* One non-blank line: the header, a request, or a malformed line (skipped
 * under skip_bad).  Returns 0, or -1 / -2 (sim_trace_load's codes) with `err`. */
static int take_line(trace_state *t, const char *s, size_t len, sim_workload *w, char *err,
                     size_t errlen) {
  line_ctx *c = &t->c;
  w->lines_read++;
  c->why[0] = 0;
  int bad = 0;
  if (memchr(s, 0, len)) {
    set_why(c, "contains a NUL byte");
    bad = 1;
  }
  if (!bad && t->format == 0) {
    size_t i = 0;
    while (i < len && isspace((unsigned char)s[i]))
      i++;
    if (s[i] == '{') {
      t->format = 1;
      w->source = SIM_SOURCE_MOONCAKE;
    } else {
      if (parse_csv_header(c, s, len, &t->hdr)) {
        snprintf(err, errlen, "%s:%lld: %s", c->path, (long long)c->lineno, c->why);
        return -1;
      }
      t->format = 2;
      w->source = SIM_SOURCE_AZURE;
      return 0;
    }
  }
  sim_request_spec r;
  memset(&r, 0, sizeof r);
  if (!bad)
    bad = (t->format == 1 ? parse_mooncake(c, s, len, &r, &t->ids, &t->ids_cap)
                          : parse_csv_row(c, &t->hdr, s, len, &r)) != 0;
  if (bad) {
    const char *what = t->format == 1 ? "Mooncake JSONL" : t->format == 2 ? "Azure CSV" : "trace";
    if (!t->skip_bad) {
      snprintf(err, errlen, "%s:%lld: malformed %s line: %s", c->path, (long long)c->lineno, what,
               c->why);
      return -2;
    }
    w->skipped_lines++;
    if (t->diag && w->skipped_lines <= SIM_TRACE_DIAG_LINES)
      fprintf(t->diag, "%s:%lld: skipped malformed %s line: %s\n", c->path, (long long)c->lineno,
              what, c->why);
    return 0;
  }
  r.line = c->lineno;
  if (sim_workload_push(w, &r)) {
    snprintf(err, errlen, "%s:%lld: out of memory", c->path, (long long)c->lineno);
    return -1;
  }
  return 0;
}

static int read_lines(trace_state *t, FILE *fp, int64_t max_requests, sim_workload *w, char *err,
                      size_t errlen) {
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  while (rc == 0 && !(max_requests > 0 && w->n >= max_requests)) {
    ssize_t got = read_line(fp, &line, &cap, SIM_TRACE_MAX_LINE);
    if (got == LINE_EOF)
      break;
    long long at = (long long)t->c.lineno + 1;
    if (got < 0) {
      if (got == LINE_TOO_LONG)
        snprintf(err, errlen, "%s:%lld: line is longer than %d bytes, the limit of a trace line",
                 t->c.path, at, SIM_TRACE_MAX_LINE);
      else
        snprintf(err, errlen, "%s:%lld: cannot read: %s", t->c.path, at,
                 got == LINE_NO_MEMORY ? "out of memory" : strerror(errno));
      rc = -1;
      break;
    }
    t->c.lineno++;
    size_t len = (size_t)got;
    const char *s = line;
    if (len && s[len - 1] == '\r')
      len--;
    if (t->c.lineno == 1 && len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3))
      s += 3, len -= 3;
    if (!is_blank(s, len))
      rc = take_line(t, s, len, w, err, errlen);
  }
  free(line);
  return rc;
}

int sim_trace_read(FILE *fp, const char *name, int64_t max_requests, int skip_bad, FILE *diag,
                   sim_workload *w, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  snprintf(w->name, sizeof w->name, "%s", name);
  trace_state t = {{name, 0, {0}}, 0, {0, -1, -1, -1}, NULL, 0, skip_bad, diag};
  int rc = read_lines(&t, fp, max_requests, w, err, errlen);
  free(t.ids);
  if (rc == 0 && t.format == 0) {
    if (w->skipped_lines) /* every line malformed (--skip-bad), none told the format */
      snprintf(err, errlen, "%s: no valid requests (%lld malformed line%s skipped, no trace header found)", name,
               (long long)w->skipped_lines, w->skipped_lines == 1 ? "" : "s");
    else
      snprintf(err, errlen, "%s: empty file: no trace header or request lines", name);
    rc = -1;
  }
  if (rc == 0 && w->n == 0) {
    snprintf(err, errlen, "%s: no valid requests (%lld malformed line%s skipped)", name,
             (long long)w->skipped_lines, w->skipped_lines == 1 ? "" : "s");
    rc = -1;
  }
  if (rc) {
    sim_workload_free(w);
    return rc;
  }
  if (sim_workload_finish(w)) {
    snprintf(err, errlen, "%s: out of memory sorting %lld requests by arrival", name, (long long)w->n);
    sim_workload_free(w);
    return -1;
  }
  return 0;
}

int sim_trace_load(const char *path, int64_t max_requests, int skip_bad, FILE *diag,
                   sim_workload *w, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  FILE *fp = sim_open_regular(path, "a trace", "(a relative path is from the current directory; docs/TRACES.md "
                               "says where the public traces live and scripts/fetch_traces.sh fetches them)",
                               err, errlen);
  if (!fp)
    return -1;
  int rc = sim_trace_read(fp, path, max_requests, skip_bad, diag, w, err, errlen);
  fclose(fp);
  return rc;
}
