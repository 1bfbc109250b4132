/* golden_ops.c - one runner per op: map a golden file's tensors and metadata
 * onto the dsv4kv call, run it, compare (see golden.h, golden_case.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "golden.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dsv4kv.h"
#include "golden_case.h"
#include "opcall.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs `call` (an assignment to a status) and charges its time to the case. */
/* One library call `st = ...` of a case, timed; on a device, staged there
 * and back around it (golden_device.c). */
#define TIMED(c, st, call)                                 \
  do {                                                     \
    if (gc_device_begin(c)) { /* undo what was staged */   \
      (st) = gc_device_end((c), DSV4KV_ERR_BACKEND);       \
      break;                                               \
    }                                                      \
    double t0_ = now_seconds();                            \
    (st) = (call);                                         \
    (st) = gc_device_end((c), (st));                       \
    (c)->call_seconds += now_seconds() - t0_;              \
  } while (0)

/* ------------------------------------------------------------------------ */
/* cache descriptions from metadata                                            */
/* ------------------------------------------------------------------------ */

/* block_size, and block_stride as the page stride when the file gives it (the
 * library then cross-checks it against the cache tensor's stride(0)). */
static void page_geometry(golden_case *c, dsv4kv_cache_desc *desc) {
  gc_meta_i32(c, "block_size", &desc->block_size);
  int64_t stride = 0;
  if (st_meta(c->st, "block_stride")) gc_meta_i64(c, "block_stride", &stride);
  desc->page_stride = stride;
}

/* Main K cache: the record named by `record` and/or read off `record_bytes`
 * as the reference does (both present: they must agree). */
static int main_cache_desc(golden_case *c, dsv4kv_cache_desc *desc) {
  memset(desc, 0, sizeof *desc);
  const char *name = st_meta(c->st, "record");
  int named = name != NULL;
  if (named) {
    if (!strcmp(name, "v4")) desc->record = DSV4KV_RECORD_V4;
    else if (!strcmp(name, "mxfp8")) desc->record = DSV4KV_RECORD_MXFP8;
    else if (!strcmp(name, "nvfp4")) desc->record = DSV4KV_RECORD_NVFP4;
    else return gc_fail(c, "metadata record = '%s' is not v4, mxfp8 or nvfp4", name);
  }
  if (st_meta(c->st, "record_bytes")) {
    int64_t width;
    dsv4kv_record by_width;
    if (gc_meta_i64(c, "record_bytes", &width)) return -1;
    if (dsv4kv_record_from_width(width, &by_width) != DSV4KV_OK)
      return gc_fail(c, "metadata record_bytes = %" PRId64 " is no main-cache record: %s", width,
                     dsv4kv_last_error());
    if (named && by_width != desc->record)
      return gc_fail(c, "metadata record = '%s' disagrees with record_bytes = %" PRId64, name, width);
    desc->record = by_width;
  } else if (!named) {
    return gc_fail(c, "metadata names no record format ('record' or 'record_bytes')");
  }
  int fnuz = 0;
  gc_meta_bool(c, "use_fnuz", 0, &fnuz);
  desc->fp8 = fnuz ? DSV4KV_FP8_FNUZ : DSV4KV_FP8_OCP;
  page_geometry(c, desc);
  return c->failed ? -1 : 0;
}

/* block_size records of the cache's format must fit in one page: checked
 * here, before a sparse cache is mapped, as well as by the library. */
static int page_fits(golden_case *c, const dsv4kv_cache_desc *desc, const gc_buf *cache) {
  if (c->failed) return -1;
  if (!cache || desc->block_size <= 0) return 0; /* <= 0: the library's error */
  int64_t need = (int64_t)desc->block_size * dsv4kv_record_bytes(desc->record);
  if (need > cache->shape[1])
    return gc_fail(c, "metadata block_size = %d x %d-byte %s records = %" PRId64
                   " bytes do not fit in the cache's %" PRId64 "-byte pages (block_stride)",
                   desc->block_size, (int)dsv4kv_record_bytes(desc->record),
                   dsv4kv_record_name(desc->record), need, cache->shape[1]);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* SPEC §3: quantize_and_insert_k_cache                                        */
/* ------------------------------------------------------------------------ */
static int run_insert(golden_case *c) {
  dsv4kv_cache_desc desc;
  main_cache_desc(c, &desc);
  const DLTensor *k = gc_input(c, "k", GC_REQUIRED, 2);
  const DLTensor *slots = gc_input(c, "slot_mapping", GC_REQUIRED, 1);
  gc_buf *cache = gc_cache(c, "k_cache", 1);
  page_fits(c, &desc, cache);
  if (c->failed || c->dry_run) return c->failed ? -1 : 0;
  opcall_insert call = {k, &cache->t, &desc, slots};
  dsv4kv_status st;
  TIMED(c, st, opcall_insert_run(&call, &c->opt));
  if (gc_status(c, "dsv4kv_quantize_and_insert_k_cache", st)) return -1;
  return gc_compare_cache(c, cache);
}

/* ------------------------------------------------------------------------ */
/* SPEC §4: dequantize_and_gather_k_cache                                      */
/* ------------------------------------------------------------------------ */
static int run_gather(golden_case *c) {
  dsv4kv_cache_desc desc;
  main_cache_desc(c, &desc);
  int64_t offset = 0;
  gc_meta_i64(c, "offset", &offset);
  gc_buf *out = gc_output_copy(c, "out"); /* pre-filled 0xA5A5: unwritten rows must stay */
  gc_buf *cache = gc_cache(c, "k_cache", 0);
  const DLTensor *seq_lens = gc_input(c, "seq_lens", GC_REQUIRED, 1);
  const DLTensor *gather_lens = gc_input(c, "gather_lens", GC_OPTIONAL, 1); /* absent = None */
  const DLTensor *block_table = gc_input(c, "block_table", GC_REQUIRED, 2);
  page_fits(c, &desc, cache);
  if (c->failed || c->dry_run) return c->failed ? -1 : 0;
  opcall_gather call = {&out->t, &cache->t, &desc, seq_lens, gather_lens, block_table, offset};
  dsv4kv_status st;
  TIMED(c, st, opcall_gather_run(&call, &c->opt));
  if (gc_status(c, "dsv4kv_dequantize_and_gather_k_cache", st)) return -1;
  gc_compare(c, out, "expected.out");
  gc_compare_cache(c, cache); /* sparse: listed blocks unchanged, nothing else written */
  return c->failed ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* SPEC §5.1: compute_global_topk_indices_and_lens                             */
/* ------------------------------------------------------------------------ */
static int run_global_topk(golden_case *c) {
  int32_t block_size = 0;
  gc_meta_i32(c, "block_size", &block_size);
  const DLTensor *topk = gc_input(c, "topk_indices", GC_REQUIRED, 2);
  const DLTensor *token_to_req = gc_input(c, "token_to_req_indices", GC_REQUIRED, 1);
  const DLTensor *block_table = gc_input(c, "block_table", GC_REQUIRED, 2);
  const DLTensor *valid = gc_input(c, "is_valid_token", GC_REQUIRED, 1);
  if (c->failed) return -1;
  /* Both outputs are written in full: poisoned buffers expose any gap. */
  gc_buf *global = gc_output_new(c, "global_topk_indices", ST_I32, 2, topk->shape);
  gc_buf *lens = gc_output_new(c, "topk_lens", ST_I32, 1, topk->shape);
  if (c->failed || c->dry_run) return c->failed ? -1 : 0;
  opcall_global_topk call = {topk, token_to_req, block_table, block_size, valid, &global->t, &lens->t};
  dsv4kv_status st;
  TIMED(c, st, opcall_global_topk_run(&call, &c->opt));
  if (gc_status(c, "dsv4kv_compute_global_topk_indices_and_lens", st)) return -1;
  gc_compare(c, global, "expected.global_topk_indices");
  gc_compare(c, lens, "expected.topk_lens");
  return c->failed ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* SPEC §5.2: combine_topk_swa_indices                                         */
/* ------------------------------------------------------------------------ */
/* The reference's out=None path (dsv4kv_combine_topk_swa_indices_alloc): the
 * library's -1 fill equals the file's prefill when out_prefill is "-1 ...",
 * so expected.combined_indices applies as is.  Lens the op leaves alone come
 * back as the library's 0 fill instead of the file's prefill. */
static int run_combine_alloc(golden_case *c, const opcall_combine *given) {
  opcall_combine a = *given;
  a.alloc = 1;
  a.combined = a.lens = NULL;
  dsv4kv_status st;
  TIMED(c, st, opcall_combine_run(&a, &c->opt));
  if (!gc_status(c, "dsv4kv_combine_topk_swa_indices_alloc", st)) {
    gc_compare_dl(c, "combined_indices (alloc path)", &a.combined_alloc->dl_tensor,
                  "expected.combined_indices");
    const st_tensor *want = st_find(c->st, "expected.combined_lens");
    const st_tensor *prefill = st_find(c->st, "combined_lens");
    gc_buf *masked = gc_output_copy(c, "expected.combined_lens");
    const DLTensor *got = &a.lens_alloc->dl_tensor;
    if (masked && prefill && prefill->nbytes == want->nbytes && want->ndim == 1 &&
        got->ndim == 1 && got->shape[0] == want->shape[0] && got->dtype.code == kDLInt &&
        got->dtype.bits == 32 && got->dtype.lanes == 1) {
      int32_t *m = masked->data;
      for (int64_t i = 0; i < want->shape[0]; i++) {
        int32_t pre;
        memcpy(&pre, prefill->data + 4 * i, 4);
        if (m[i] == pre) m[i] = 0; /* not written by the op: the library's fill */
      }
      gc_compare_bytes(c, "combined_lens (alloc path)", ST_I32, 1, want->shape,
                       (const uint8_t *)got->data + got->byte_offset, m);
    } else if (masked) {
      gc_fail(c, "combined_lens (alloc path) is not int32 [%" PRId64 "]", want->shape[0]);
    }
  }
  opcall_combine_release(&a);
  return c->failed ? -1 : 0;
}

/* The out=None path allocates [T, round_up(topk + window_size, 128)] inside
 * the library: that must be expected.combined_indices' shape, checked before
 * the library is asked for it. */
static int combine_alloc_fits(golden_case *c, const opcall_combine *a) {
  const st_tensor *e = st_find(c->st, "expected.combined_indices");
  int64_t width = ((int64_t)a->topk + a->window_size + 127) / 128 * 128;
  if (e && e->ndim == 2 && e->shape[1] != width)
    return gc_fail(c, "metadata topk = %d + window_size = %d make %" PRId64 " columns for the "
                   "out=None path, but expected.combined_indices has %" PRId64,
                   a->topk, a->window_size, width, e->shape[1]);
  return 0;
}

static int run_combine(golden_case *c) {
  opcall_combine a;
  memset(&a, 0, sizeof a);
  gc_meta_i32(c, "window_size", &a.window_size);
  gc_meta_i32(c, "compress_ratio", &a.compress_ratio);
  gc_meta_i32(c, "topk", &a.topk);
  gc_meta_i32(c, "M", &a.M);
  gc_meta_i32(c, "N", &a.N);
  a.topk_indices = gc_input(c, "topk_indices", GC_REQUIRED, 2);
  a.query_start_loc = gc_input(c, "query_start_loc", GC_REQUIRED, 1);
  a.seq_lens = gc_input(c, "seq_lens", GC_REQUIRED, 1);
  a.gather_lens = gc_input(c, "gather_lens", GC_REQUIRED, 1);
  /* Outputs are written only in part; the file pre-fills them. */
  gc_buf *combined = gc_output_copy(c, "combined_indices");
  gc_buf *lens = gc_output_copy(c, "combined_lens");
  const char *prefill = st_meta(c->st, "out_prefill");
  int alloc_path = prefill && !strncmp(prefill, "-1", 2) && c->device.device_type == kDLCPU;
  if (!c->failed && alloc_path) combine_alloc_fits(c, &a);
  if (c->failed || c->dry_run) return c->failed ? -1 : 0;
  a.combined = &combined->t;
  a.lens = &lens->t;
  dsv4kv_status st;
  TIMED(c, st, opcall_combine_run(&a, &c->opt));
  if (gc_status(c, "dsv4kv_combine_topk_swa_indices", st)) return -1;
  gc_compare(c, combined, "expected.combined_indices");
  gc_compare(c, lens, "expected.combined_lens");
  if (!c->failed && alloc_path) run_combine_alloc(c, &a);
  return c->failed ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* SPEC §5.3: build_flashinfer_mixed_sparse_indices                            */
/* ------------------------------------------------------------------------ */
static int flashinfer_scalars(golden_case *c, dsv4kv_flashinfer_args *a) {
  gc_meta_i32(c, "swa_block_size", &a->swa_block_size);
  gc_meta_i32_or_none(c, "swa_block_span", 0, &a->swa_block_span); /* none -> block size */
  gc_meta_i32(c, "compressed_block_size", &a->compressed_block_size);
  gc_meta_i32_or_none(c, "compressed_block_span", 0, &a->compressed_block_span);
  gc_meta_i32(c, "window_size", &a->window_size);
  gc_meta_i32(c, "compress_ratio", &a->compress_ratio);
  gc_meta_i32(c, "topk", &a->topk);
  gc_meta_bool(c, "decode_compressed_indices_are_local", 0, &a->decode_compressed_indices_are_local);
  return c->failed ? -1 : 0;
}

static int run_flashinfer(golden_case *c) {
  dsv4kv_flashinfer_args a;
  memset(&a, 0, sizeof a);
  flashinfer_scalars(c, &a);
  /* Absent tensors were None in the reference call: NULL here. */
  a.decode_swa_indices = gc_input(c, "decode_swa_indices", GC_REQUIRED, 2);
  a.decode_compressed_indices = gc_input(c, "decode_compressed_indices", GC_OPTIONAL, 2);
  a.decode_compressed_topk_lens = gc_input(c, "decode_compressed_topk_lens", GC_OPTIONAL, 1);
  a.decode_is_valid_token = gc_input(c, "decode_is_valid_token", GC_OPTIONAL, 1);
  a.prefill_topk_indices = gc_input(c, "prefill_topk_indices", GC_REQUIRED, 2);
  a.query_start_loc = gc_input(c, "query_start_loc", GC_REQUIRED, 1);
  a.seq_lens = gc_input(c, "seq_lens", GC_REQUIRED, 1);
  a.replay_start = gc_input(c, "replay_start", GC_REQUIRED, 1);
  a.token_to_req_indices = gc_input(c, "token_to_req_indices", GC_REQUIRED, 1);
  a.swa_block_table = gc_input(c, "swa_block_table", GC_REQUIRED, 2);
  a.compressed_block_table = gc_input(c, "compressed_block_table", GC_OPTIONAL, 2);
  if (c->failed) return -1;
  /* Output geometry (SPEC §5.3): [D + P, S + K4], K4 = round_up(max(topk, Dk), 4). */
  int64_t D = a.decode_swa_indices->shape[0], S = a.decode_swa_indices->shape[1];
  int64_t P = a.prefill_topk_indices->shape[0];
  int64_t Dk = a.decode_compressed_indices ? a.decode_compressed_indices->shape[1] : 0;
  int64_t widest = a.topk > Dk ? a.topk : Dk;
  int64_t K4 = (widest + 3) / 4 * 4;
  int64_t shape[2] = {D + P, S + K4};
  const st_tensor *e = st_find(c->st, "expected.sparse_indices");
  if (e && e->ndim == 2 && shape[1] > e->shape[1])
    return gc_fail(c, "metadata topk = %d makes the output %" PRId64 " columns wide (S %" PRId64
                   " + K4 %" PRId64 "), but expected.sparse_indices has %" PRId64,
                   a.topk, shape[1], S, K4, e->shape[1]);
  gc_buf *indices = gc_output_new(c, "sparse_indices", ST_I32, 2, shape);
  gc_buf *lens = gc_output_new(c, "sparse_topk_lens", ST_I32, 1, shape);
  if (c->failed || c->dry_run) return c->failed ? -1 : 0;
  opcall_flashinfer call = {&a, &indices->t, &lens->t};
  dsv4kv_status st;
  TIMED(c, st, opcall_flashinfer_run(&call, &c->opt));
  if (gc_status(c, "dsv4kv_build_flashinfer_mixed_sparse_indices", st)) return -1;
  gc_compare(c, indices, "expected.sparse_indices");
  gc_compare(c, lens, "expected.sparse_topk_lens");
  return c->failed ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* SPEC §6: indexer_k_norm_rope_store                                          */
/* ------------------------------------------------------------------------ */
static int indexer_cache_desc(golden_case *c, dsv4kv_cache_desc *desc) {
  memset(desc, 0, sizeof *desc);
  int fp4 = 0, mx = 0, tiled = 0;
  gc_meta_bool(c, "use_fp4_cache", -1, &fp4);
  gc_meta_bool(c, "mx_scale", 0, &mx);
  gc_meta_bool(c, "shuffle", 0, &tiled);
  desc->record = fp4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8;
  desc->fp8 = DSV4KV_FP8_OCP;
  desc->flags = (mx ? DSV4KV_CACHE_MX_SCALE : 0u) | (tiled ? DSV4KV_CACHE_TILED : 0u);
  page_geometry(c, desc);
  if (!c->failed && st_meta(c->st, "record_bytes")) {
    int64_t width;
    if (!gc_meta_i64(c, "record_bytes", &width) && width != dsv4kv_record_bytes(desc->record))
      gc_fail(c, "metadata record_bytes = %" PRId64 " disagrees with use_fp4_cache = %d (%d bytes)",
              width, fp4, (int)dsv4kv_record_bytes(desc->record));
  }
  return c->failed ? -1 : 0;
}

static int run_indexer(golden_case *c) {
  dsv4kv_cache_desc desc;
  indexer_cache_desc(c, &desc);
  double eps = 0;
  int32_t ratio = 0;
  /* the reference passes a Python float; the kernel an fp32 (out of float's
   * range the conversion below would be undefined) */
  if (!gc_meta_f64(c, "rms_norm_eps", &eps) && !(eps >= 0 && eps <= FLT_MAX))
    gc_fail(c, "metadata rms_norm_eps = %g is not a finite float >= 0", eps);
  gc_meta_i32(c, "compress_ratio", &ratio);
  const DLTensor *k_pre = gc_input(c, "k_pre", GC_REQUIRED, 2);
  const DLTensor *positions = gc_input(c, "positions", GC_REQUIRED, 1);
  const DLTensor *cos_sin = gc_input(c, "cos_sin_cache", GC_REQUIRED, 2);
  const DLTensor *weight = gc_input(c, "rms_norm_weight", GC_REQUIRED, 1);
  const DLTensor *slots = gc_input(c, "kv_slot_mapping", GC_REQUIRED, 1);
  gc_buf *cache = gc_cache(c, "k_cache", 1);
  page_fits(c, &desc, cache);
  if (c->failed || c->dry_run) return c->failed ? -1 : 0;
  opcall_indexer call = {k_pre, positions, cos_sin, weight, (float)eps, &cache->t, &desc, slots, ratio};
  dsv4kv_status st;
  TIMED(c, st, opcall_indexer_run(&call, &c->opt));
  if (gc_status(c, "dsv4kv_indexer_k_norm_rope_store", st)) return -1;
  return gc_compare_cache(c, cache);
}

/* ------------------------------------------------------------------------ */
/* dispatch                                                                    */
/* ------------------------------------------------------------------------ */
static const struct {
  const char *op;
  int (*run)(golden_case *c);
} runners[] = {
    {"quantize_and_insert_k_cache", run_insert},
    {"dequantize_and_gather_k_cache", run_gather},
    {"compute_global_topk_indices_and_lens", run_global_topk},
    {"combine_topk_swa_indices", run_combine},
    {"build_flashinfer_mixed_sparse_indices", run_flashinfer},
    {"indexer_k_norm_rope_store", run_indexer},
};

const char *const golden_ops[] = {
    "quantize_and_insert_k_cache",       "dequantize_and_gather_k_cache",
    "compute_global_topk_indices_and_lens", "combine_topk_swa_indices",
    "build_flashinfer_mixed_sparse_indices", "indexer_k_norm_rope_store",
    NULL,
};

/* st_open's messages start with the path; the caller prints it already. */
static const char *without_path(const char *msg, const char *path) {
  size_t n = strlen(path);
  return !strncmp(msg, path, n) && !strncmp(msg + n, ": ", 2) ? msg + n + 2 : msg;
}

typedef int (*runner_fn)(golden_case *c);

/* The op's runner, or NULL with the reason in msg. */
static runner_fn find_runner(const st_file *f, char *msg, size_t msg_len, golden_info *info) {
  const char *op = st_meta(f, "op");
  if (!op) {
    snprintf(msg, msg_len, "metadata has no 'op' (not a golden file?)");
    return NULL;
  }
  if (info) snprintf(info->op, sizeof info->op, "%s", op);
  for (size_t i = 0; i < sizeof runners / sizeof runners[0]; i++)
    if (!strcmp(op, runners[i].op)) return runners[i].run;
  snprintf(msg, msg_len, "unknown op '%.64s'", op);
  return NULL;
}

/* Everything the run checks, with nothing allocated: a file whose metadata
 * disagrees with its tensors, or would need more than the caps, stops here. */
static int dry_run(const st_file *f, runner_fn run, DLDeviceType device, char *msg,
                   size_t msg_len) {
  golden_case c;
  gc_init(&c, f, device);
  c.dry_run = 1;
  if (!gc_check_extents(&c)) run(&c);
  snprintf(msg, msg_len, "%s", c.msg);
  int rc = c.failed ? -1 : 0;
  gc_free(&c);
  return rc;
}

int golden_check_file(const st_file *f, DLDeviceType device, char *msg, size_t msg_len) {
  msg[0] = '\0';
  runner_fn run = find_runner(f, msg, msg_len, NULL);
  return run ? dry_run(f, run, device, msg, msg_len) : -1;
}

int golden_verify_file(const char *path, DLDeviceType device, char *msg, size_t msg_len,
                       golden_info *info) {
  golden_info scratch;
  if (!info) info = &scratch;
  memset(info, 0, sizeof *info);
  msg[0] = '\0';
  char err[1024];
  st_file *f = NULL;
  if (st_open(path, &f, err, sizeof err)) {
    snprintf(msg, msg_len, "%s", without_path(err, path));
    return -1;
  }
  runner_fn run = find_runner(f, msg, msg_len, info);
  if (!run || dry_run(f, run, device, msg, msg_len)) {
    st_close(f);
    return -1;
  }
  golden_case c;
  gc_init(&c, f, device);
  run(&c);
  if (!c.failed) gc_check_all_expected_used(&c);
  gc_check_inputs(&c); /* also after a failure: a corrupted input is worth knowing */
  info->call_seconds = c.call_seconds;
  snprintf(msg, msg_len, "%s", c.msg);
  int rc = c.failed ? -1 : 0;
  gc_free(&c);
  st_close(f);
  return rc;
}
