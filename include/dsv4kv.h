/*
 * dsv4kv.h - the key cache of DeepSeek-V4 / V4.1 sparse attention, as a C library.
 *
 * A tour
 * ------
 * An attention layer of DeepSeek-V4 keeps its keys (head dim 512: dims 0..447
 * "NoPE", 448..511 "RoPE") in a paged cache: a *page* holds `block_size`
 * consecutive token positions of one request, a *slot* is
 * `page_id * block_size + position_in_page`, a *block table* maps a request's
 * logical page number to a physical page id.  Each token's keys are stored as a
 * quantized *record*:
 *
 *   V4     584 B  e4m3 NoPE + bf16 RoPE, UE8M0 scale per 64 dims (split page)
 *   MXFP8  528 B  e4m3 of all 512 dims, UE8M0 scale per 32 dims (token-major)
 *   NVFP4  288 B  e2m1 of all 512 dims, e4m3 scale per 16 dims (token-major)
 *
 * and the indexer's keys (head dim 128) as
 *
 *   INDEXER_FP8    132 B  e4m3 x 128 + one fp32 2^e scale (or 4 UE8M0 bytes)
 *   INDEXER_MXFP4   68 B  e2m1 x 128 + 4 UE8M0 scales (one per 32 dims)
 *
 * The library writes records (quantize_and_insert_k_cache,
 * indexer_k_norm_rope_store), reads them back (dequantize_and_gather_k_cache)
 * and builds the int32 index lists that sparse attention consumes (top-k of the
 * compressed cache + the sliding window).  Every byte matches the reference
 * Triton kernels of vLLM (see SPEC.md / NUMERICS.md of the project).
 *
 * Tensors are DLPack `DLTensor`s: data pointer, device, dtype, shape and
 * strides (in elements; NULL = compact row-major), byte_offset honoured.  A
 * torch / numpy / JAX caller hands its tensors over without copies.  The
 * backend is chosen by the tensors' device (all of one call's tensors must be
 * on one device): kDLCPU always; kDLCUDA (and kDLCUDAManaged) when the library
 * was built with its CUDA backend and a GPU is visible
 * (dsv4kv_backend_available), DSV4KV_ERR_BACKEND_NOT_BUILT otherwise.  On
 * CUDA a call is enqueued on options.stream and returns at once; its counts
 * arrive through options.report (see dsv4kv_report).
 *
 * A cache is described once, by a dsv4kv_cache_desc, and that description is
 * passed to every writer and reader of the cache: the record format and the
 * fp8 flavour (OCP e4m3fn vs. AMD e4m3fnuz) travel with it, so a cache written
 * in one flavour is never read in the other by mistake, as long as the
 * caller keeps one description per cache: the bytes carry no format tag.  The
 * cache tensor is uint8, either 2-D [num_pages, page_bytes] or 3-D
 * [num_pages, block_size, record_bytes]; its stride(0) is the page stride in
 * bytes and may exceed block_size * record_bytes (padding).  So a 2-D page
 * big enough for another record format passes the shape checks under that
 * format's description; the 3-D view's last dimension pins the record size
 * (a V4 cache described as MXFP8 is then ERR_SHAPE).
 *
 * Worked example (CPU, V4 records, 64 tokens per page): insert T rows, gather
 * the first request's n tokens back.  Complete programs: examples/ of the
 * project (insert_gather.c, index_ops.c; built against an install with CMake's
 * find_package(dsv4kv) or pkg-config, see examples/CMakeLists.txt).
 *
 *   // k: T x 512 bf16 values (uint16_t bits); cache: num_pages x (64 * 584) bytes
 *   int64_t k_shape[2] = {T, 512}, s_shape[1] = {T}, c_shape[2] = {num_pages, 64 * 584};
 *   DLTensor k = {k_bits, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, k_shape, NULL, 0};
 *   DLTensor slots = {slot_ids, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, s_shape, NULL, 0};
 *   DLTensor k_cache = {cache_bytes, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, c_shape, NULL, 0};
 *   dsv4kv_cache_desc cache = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, 64, 0, 0};
 *   int64_t skipped = 0;
 *   dsv4kv_options opt = {.skipped = &skipped};
 *   dsv4kv_status st = dsv4kv_quantize_and_insert_k_cache(&k, &k_cache, &cache, &slots, &opt);
 *   if (st != DSV4KV_OK) fprintf(stderr, "%s\n", dsv4kv_last_error());
 *
 *   // one request of n tokens whose pages are block_row[0..]: out is [1, n, 512] bf16
 *   int32_t seq_len = n;
 *   int64_t o_shape[3] = {1, n, 512}, r_shape[1] = {1}, b_shape[2] = {1, max_pages};
 *   DLTensor out = {out_bits, {kDLCPU, 0}, 3, {kDLBfloat, 16, 1}, o_shape, NULL, 0};
 *   DLTensor seq_lens = {&seq_len, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, r_shape, NULL, 0};
 *   DLTensor table = {block_row, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, b_shape, NULL, 0};
 *   st = dsv4kv_dequantize_and_gather_k_cache(&out, &k_cache, &cache, &seq_lens, NULL,
 *                                             &table, 0, &opt);
 *
 * Build: cc app.c $(pkg-config --cflags --libs dsv4kv) after `cmake --install`
 * (or find_package(dsv4kv CONFIG) + target_link_libraries(app dsv4kv::dsv4kv)),
 * or -Iinclude -Ibuild/include -Lbuild -ldsv4kv -Wl,-rpath,$PWD/build from a
 * checkout.
 * The cache tensor may also be 3-D [num_pages, block_size, record_bytes] (the
 * vLLM view); for V4's split page that view is only a byte layout: a page's
 * first block_size * 576 bytes are the tokens' values, then 8 scale bytes each.
 * The out-parameters of dsv4kv_options are overwritten (not added to) by each
 * call that does not return an error; a call that returns an error (see
 * dsv4kv_is_error) leaves them as they were.  DSV4KV_WARN_SKIPPED is not an
 * error: the valid entries were written and the skipped ones were not (for a
 * gather, tokens past out's rows among them), so a caller that tests only
 * dsv4kv_is_error() should still read `skipped`.
 *
 * Errors.  Every call returns a dsv4kv_status.  Argument errors (null, dtype,
 * rank, shape, stride, scalar out of range) are found before anything is read
 * or written.  Index values read from tensors (slots, page ids, positions,
 * lengths, request ids) are bounds-checked one by one; an entry that would
 * touch memory outside its tensor is skipped (nothing read or written through
 * it), counted in dsv4kv_options.skipped, and the call returns
 * DSV4KV_WARN_SKIPPED after completing every valid entry.  dsv4kv_last_error()
 * gives a sentence naming the argument and the value (thread-local, valid until
 * the thread's next call).  The library never aborts and never writes outside
 * the output tensors passed in.
 *
 * Threads.  Every op may be called from several application threads at once
 * (the library's own state is set up once, and the message above is per
 * thread).  Calls at once may share inputs, and one cache: an insert or
 * indexer store writes only the records its rows' slots name, a gather and
 * the index ops only their outputs, so calls whose writes land in different
 * records (or outputs) do not disturb each other, and a gather may read
 * pages that another call is not writing.  Two calls writing one record (or
 * one output) at the same time leave its bytes undefined, as two kernels
 * would, and calls at once must not share a dsv4kv_options whose counters
 * they write.  On the
 * CPU one call at a time runs on the backend's worker threads; a call that
 * finds them busy runs on its own thread, with the same bytes.  On CUDA a
 * call's kernels are ordered on its options.stream only.  The exception is
 * dsv4kv_cpu_path_select (below), which is for tests.
 */
#ifndef DSV4KV_H
#define DSV4KV_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* DSV4KV_VERSION_MAJOR / _MINOR / _PATCH: this header's version, generated from
 * the project's version into dsv4kv_version.h (installed beside this header;
 * <build>/include in a build tree).  dsv4kv_version() is the library's, at run
 * time.  A compiler that cannot find the generated header (only -Iinclude of a
 * checkout) gets the API without these three macros. */
#if defined(__has_include)
#if __has_include("dsv4kv_version.h")
#include "dsv4kv_version.h"
#endif
#else
#include "dsv4kv_version.h"
#endif

/* DLPack 0.8 added kDLBool (6); Debian's dlpack 0.6 predates it.  Bool tensors
 * are accepted as kDLBool/8 or kDLUInt/8 (one byte, nonzero = true). */
#define DSV4KV_DL_BOOL 6

#if defined(DSV4KV_BUILDING) && defined(__GNUC__)
#define DSV4KV_API __attribute__((visibility("default")))
#else
#define DSV4KV_API
#endif

/* ======================================================================== */
/* STABLE.  What follows up to the ADVANCED fence is the API bindings freeze. */
/* ======================================================================== */

/* ------------------------------------------------------------------------ */
/* Status codes.  Values are pinned; new codes are only ever appended.       */
/* ------------------------------------------------------------------------ */
typedef enum {
  DSV4KV_OK = 0,
  DSV4KV_ERR_NULL = 1,              /* a required pointer or tensor is NULL       */
  DSV4KV_ERR_DTYPE = 2,             /* a tensor has the wrong dtype               */
  DSV4KV_ERR_RANK = 3,              /* a tensor has the wrong number of dims      */
  DSV4KV_ERR_SHAPE = 4,             /* a tensor's extent is wrong or inconsistent */
  DSV4KV_ERR_STRIDE = 5,            /* unsupported strides (e.g. last dim not 1), or an
                                        output overlapping another output or an input */
  DSV4KV_ERR_VALUE = 6,             /* a scalar argument is out of range          */
  DSV4KV_ERR_DEVICE = 7,            /* tensors on different / unsupported devices */
  DSV4KV_ERR_BACKEND_NOT_BUILT = 8, /* the device's backend is not in this build,
                                       or cannot run here (no driver or GPU:
                                       dsv4kv_backend_unavailable_reason) */
  DSV4KV_ERR_ALLOC = 9,             /* memory allocation failed                   */
  DSV4KV_ERR_FORMAT = 10,           /* record format / cache description mismatch */
  DSV4KV_WARN_SKIPPED = 11,         /* done, but out-of-range entries were skipped */
  DSV4KV_WARN_NONFINITE = 12,       /* done, input held NaN/Inf (when asked)      */
  DSV4KV_ERR_BACKEND = 13,          /* the backend failed (e.g. a CUDA error)     */
  DSV4KV_ERR_ALIGNMENT = 14         /* data + byte_offset not aligned to the dtype */
} dsv4kv_status;

/* The largest status value of this version (bindings and fuzzers bound with it). */
#define DSV4KV_STATUS_LAST DSV4KV_ERR_ALIGNMENT

/* 1 when `status` is an error (the call wrote nothing it promised); 0 for
 * DSV4KV_OK and the two warnings, whose calls completed every valid entry. */
DSV4KV_API int dsv4kv_is_error(dsv4kv_status status);

/* A fixed English name for a status ("DSV4KV_ERR_SHAPE: bad tensor shape"). */
DSV4KV_API const char *dsv4kv_status_string(dsv4kv_status status);

/* The message of this thread's last non-OK call: the argument, its value and
 * the rule it broke.  "" when the last call returned DSV4KV_OK. */
DSV4KV_API const char *dsv4kv_last_error(void);

/* The library's version, "MAJOR.MINOR.PATCH" (the build's, not the header's). */
DSV4KV_API const char *dsv4kv_version(void);

/* 1 when this build has a backend for tensors on `device_type` and it can run
 * here (for kDLCUDA: the CUDA backend is built and a device is visible); 0
 * otherwise.  kDLCPU is always available. */
DSV4KV_API int dsv4kv_backend_available(DLDeviceType device_type);
/* Why dsv4kv_backend_available(device_type) is 0, in English ("this build has
 * no CUDA backend", or what the CUDA runtime reported, e.g. a driver older
 * than the runtime); NULL when it is 1.  Static storage. */
DSV4KV_API const char *dsv4kv_backend_unavailable_reason(DLDeviceType device_type);

/* ------------------------------------------------------------------------ */
/* Head dims and record widths (SPEC §2, §6)                                  */
/* ------------------------------------------------------------------------ */
#define DSV4KV_HEAD_DIM 512          /* main K row: 448 NoPE + 64 RoPE dims    */
#define DSV4KV_NOPE_DIM 448
#define DSV4KV_ROPE_DIM 64
#define DSV4KV_INDEXER_HEAD_DIM 128  /* indexer K row                          */
#define DSV4KV_V4_BYTES_PER_TOKEN 584
#define DSV4KV_MXFP8_BYTES_PER_TOKEN 528
#define DSV4KV_NVFP4_BYTES_PER_TOKEN 288
#define DSV4KV_INDEXER_FP8_BYTES_PER_TOKEN 132
#define DSV4KV_INDEXER_MXFP4_BYTES_PER_TOKEN 68

/* ------------------------------------------------------------------------ */
/* Cache description                                                          */
/* ------------------------------------------------------------------------ */
typedef enum {
  DSV4KV_RECORD_V4 = 0,            /* 584 B, SPEC §2 "V4"                      */
  DSV4KV_RECORD_MXFP8 = 1,         /* 528 B, SPEC §2 "V4.1 MXFP8"              */
  DSV4KV_RECORD_NVFP4 = 2,         /* 288 B, SPEC §2 "V4.1 NVFP4"              */
  DSV4KV_RECORD_INDEXER_FP8 = 3,   /* 132 B, SPEC §6 FP8 (128 values + 4 B)    */
  DSV4KV_RECORD_INDEXER_MXFP4 = 4  /*  68 B, SPEC §6 FP4 (64 B of 128 e2m1 + 4 B) */
} dsv4kv_record;

typedef enum {
  DSV4KV_FP8_OCP = 0,  /* e4m3fn: bias 7, max 448 (NVIDIA, OCP)                 */
  DSV4KV_FP8_FNUZ = 1  /* e4m3fnuz: bias 8, 0x80 = NaN (AMD gfx942); caches
                          quantize against 224 (the reference's fp8 max for this
                          flavour), decoding accepts every code up to 240       */
} dsv4kv_fp8_flavor;

/* Flags of dsv4kv_cache_desc (indexer FP8 caches only). */
#define DSV4KV_CACHE_MX_SCALE 0x1u /* scale = 4 UE8M0 bytes instead of fp32 2^e */
#define DSV4KV_CACHE_TILED 0x2u    /* 16x16-tiled values (ROCm readers); needs
                                      block_size % 16 == 0                       */

typedef struct {
  dsv4kv_record record;   /* record format                                     */
  dsv4kv_fp8_flavor fp8;  /* e4m3 flavour of V4 / MXFP8 / INDEXER_FP8 records; */
                          /* NVFP4 and INDEXER_MXFP4 need DSV4KV_FP8_OCP        */
  int32_t block_size;     /* tokens per page, > 0                               */
  int64_t page_stride;    /* bytes from a page to the next; 0 = take it from
                             the cache tensor's stride(0).  When nonzero it must
                             equal that stride.                                  */
  uint32_t flags;         /* DSV4KV_CACHE_* flags                                */
} dsv4kv_cache_desc;

/* The record's name ("V4", "MXFP8", "NVFP4", "INDEXER_FP8", "INDEXER_MXFP4");
 * "unknown" for a value outside dsv4kv_record. */
DSV4KV_API const char *dsv4kv_record_name(dsv4kv_record record);

/* Bytes of one token record (584, 528, 288, 132, 68); 0 for an unknown record. */
DSV4KV_API int32_t dsv4kv_record_bytes(dsv4kv_record record);

/* The record whose width is `bytes_per_token` among the three main-cache
 * records (584 -> V4, 528 -> MXFP8, 288 -> NVFP4), as the reference reads the
 * format off the record width.  DSV4KV_ERR_FORMAT for any other width. */
DSV4KV_API dsv4kv_status dsv4kv_record_from_width(int64_t bytes_per_token, dsv4kv_record *record);

/* ------------------------------------------------------------------------ */
/* What a call reports: skipped entries and non-finite values                */
/* ------------------------------------------------------------------------ */
/* The report of one call, as plain data (80 bytes, layout fixed below).
 *
 * How counts reach the caller.  On the CPU a call is synchronous: it returns
 * DSV4KV_WARN_SKIPPED / DSV4KV_WARN_NONFINITE, writes the optional host
 * counters of dsv4kv_options, and fills `report` when one is given.  On an
 * asynchronous device (CUDA) the call only enqueues work on the caller's
 * stream and returns DSV4KV_OK once it is enqueued, so it cannot know the
 * counts: they reach the caller only through `report`, which must then point
 * to DEVICE memory (cudaMalloc'd, or managed) of at least
 * sizeof(dsv4kv_report) bytes, 8-byte aligned.  The call's kernels reset and
 * fill it in stream order; nothing is synchronized and nothing is allocated,
 * so the call is capturable in a CUDA graph (each replay refills the report).
 * The caller copies it to the host when it chooses (e.g. once per step) and
 * turns it into a status and message with dsv4kv_report_status /
 * dsv4kv_report_message.  Give each call of a step its own report to keep
 * every call's counts.  The host counters `skipped` / `nonfinite` would need
 * a synchronization and are refused on such devices (DSV4KV_ERR_VALUE).
 *
 * Every call that does not return an error overwrites its report in full
 * (it never adds to it); a call that returns an error leaves it untouched. */
typedef struct {
  int64_t skipped;       /* entries skipped as out of range                     */
  int64_t nonfinite;     /* non-finite values seen (0 unless check_nonfinite)   */
  int64_t first_key;     /* ordering key of the first skipped entry (opaque)    */
  int32_t reason;        /* what was wrong with it (opaque; 0 = nothing)        */
  int32_t op;            /* which operation wrote the report (opaque)           */
  int64_t values[6];     /* the values involved, per reason                     */
} dsv4kv_report;

/* The status a synchronous call would have returned for `report`:
 * DSV4KV_WARN_SKIPPED when anything was skipped, else DSV4KV_WARN_NONFINITE
 * when a non-finite value was counted, else DSV4KV_OK; DSV4KV_ERR_NULL for a
 * NULL report, DSV4KV_ERR_VALUE for one no call could have written (a
 * negative count, an unknown op or reason: e.g. copied from the wrong
 * address); a zeroed report is DSV4KV_OK.  `report` is host memory. */
DSV4KV_API dsv4kv_status dsv4kv_report_status(const dsv4kv_report *report);

/* The sentence a synchronous call would have left in dsv4kv_last_error() for
 * `report` (host memory), written to buf[0..len) NUL-terminated; "" when
 * nothing was reported.  Returns the length the whole sentence needs. */
DSV4KV_API size_t dsv4kv_report_message(const dsv4kv_report *report, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Per-call options (every op takes `const dsv4kv_options *`, NULL = defaults) */
/* ------------------------------------------------------------------------ */
typedef struct {
  int64_t *skipped;      /* out, optional, host: entries skipped as out of
                            range (CPU only; see dsv4kv_report)                  */
  int64_t *nonfinite;    /* out, optional, host: non-finite input values seen,
                            plus, for the indexer store, one per row whose
                            RMSNorm alone is non-finite (counted only when
                            check_nonfinite; CPU only)                           */
  int check_nonfinite;   /* inserts / indexer store: count NaN/Inf in the input
                            (and in the indexer's norm) and report them; the
                            bytes stored are the reference's either way          */
  int num_threads;       /* CPU backend: most threads a call uses; 0 (or a
                            negative value) = the processors (or
                            OMP_NUM_THREADS); calls too small to gain run on
                            the calling thread either way                        */
  void *stream;          /* CUDA backend: a cudaStream_t (NULL = legacy default) */
  dsv4kv_report *report; /* out, optional: the call's report, in memory of the
                            tensors' device (see dsv4kv_report)                  */
  int distinct_slots;    /* inserts / indexer store: the caller promises that no
                            two rows that write name one slot (negative slots
                            aside: -1 padding may repeat; for the indexer store
                            only the rows that store a key count), as an
                            engine's slot mapping never does.  CUDA then skips
                            finding duplicates (past 1024 rows: two mark kernels
                            and a mark read a row); a promise broken leaves the
                            records named more than once with undefined bytes
                            (rows may mix), nothing else.  The CPU always
                            resolves duplicates (the later row wins) and ignores
                            it; 0 = no promise.  New in 0.2.0 (the struct grew:
                            rebuild against this header)                         */
} dsv4kv_options;

/* Sizes of the public structs a binding mirrors (e.g. Python's ctypes), by
 * name: "dsv4kv_options", "dsv4kv_cache_desc", "dsv4kv_report",
 * "dsv4kv_flashinfer_args", "dsv4kv_model_desc".  0 for another name.  A binding compares these
 * with its own layouts once at load time. */
DSV4KV_API size_t dsv4kv_struct_size(const char *name);

/* ------------------------------------------------------------------------ */
/* Main K cache: insert and gather (SPEC §2-§4)                               */
/* ------------------------------------------------------------------------ */

/* quantize_and_insert_k_cache (SPEC §3; reference: vLLM cache_utils
 * quantize_and_insert_k_cache and the V4.1 insert kernels).
 *
 *   k             bf16 [T_k, 512], any row stride, last-dim stride 1
 *   k_cache       uint8 cache of `cache` (record V4, MXFP8 or NVFP4)
 *   cache         the cache description (record, fp8 flavour, block_size)
 *   slot_mapping  int64 [T], T <= T_k: rows T..T_k-1 of k are DP padding and
 *                 are never read.  Slot -1 skips its row silently; any other
 *                 negative slot, or a slot whose page is past the cache, is
 *                 skipped and counted.
 *
 * Writes only the records of the slots named (and, for V4, the token's 8
 * scale bytes).  When two rows name one slot, the later row wins, whatever the
 * thread count.  On CUDA, a call of more than 1024 rows finds duplicates by
 * marking the named records first (two small kernels); that needs k_cache's
 * data and page stride to be multiples of 4 bytes, else (and past 2^24 rows)
 * each row scans the later rows' slots, O(T^2): keep caches aligned (any
 * framework allocation is).  options.distinct_slots skips all of that where
 * the caller knows its slots are distinct (up to a third of a large call's
 * time on an H100).  k and slot_mapping must not lie inside k_cache's pages
 * (DSV4KV_ERR_STRIDE).
 * Returns DSV4KV_OK, DSV4KV_WARN_SKIPPED, DSV4KV_WARN_NONFINITE (when asked)
 * or an argument error (NULL, DTYPE, RANK, SHAPE, STRIDE, VALUE, FORMAT,
 * DEVICE, BACKEND_NOT_BUILT). */
DSV4KV_API dsv4kv_status dsv4kv_quantize_and_insert_k_cache(const DLTensor *k, const DLTensor *k_cache,
                                                 const dsv4kv_cache_desc *cache,
                                                 const DLTensor *slot_mapping,
                                                 const dsv4kv_options *opt);

/* dequantize_and_gather_k_cache (SPEC §4; reference: vLLM cache_utils
 * dequantize_and_gather_k_cache).
 *
 *   out          bf16 [R_out >= R, max_tokens, 512], any strides on dims 0-1,
 *                last-dim stride 1
 *   k_cache      uint8 cache of `cache` (record V4, MXFP8 or NVFP4)
 *   seq_lens     int32 [R]
 *   gather_lens  int32 [R] or NULL (NULL: gather whole sequences)
 *   block_table  int32 [R_bt >= R, max_pages], any strides
 *   offset       first row of out written for each request, >= 0
 *
 * For request r, L = gather_lens ? gather_lens[r] : seq_lens[r]; the LAST L
 * tokens of the sequence go to out[r][offset .. offset+L).  Nothing else of out
 * is written.  Skipped and counted (one per token): a position past the block
 * table row or before position 0, a page id outside the cache, a row past
 * max_tokens; a request with L < 0 counts once.
 * Returns as the insert (no NONFINITE). */
DSV4KV_API dsv4kv_status dsv4kv_dequantize_and_gather_k_cache(const DLTensor *out, const DLTensor *k_cache,
                                                   const dsv4kv_cache_desc *cache,
                                                   const DLTensor *seq_lens,
                                                   const DLTensor *gather_lens,
                                                   const DLTensor *block_table, int64_t offset,
                                                   const dsv4kv_options *opt);

/* gather_num_workers (SPEC §4): the reference's launch width, for API parity.
 * max_gather_len < 0 means unknown -> 128; else clamp(ceil(len / 8), 128, 8192). */
DSV4KV_API int32_t dsv4kv_gather_num_workers(int64_t max_gather_len);

/* ------------------------------------------------------------------------ */
/* Sparse-attention index preparation (SPEC §5).  Integers only.              */
/* ------------------------------------------------------------------------ */

/* compute_global_topk_indices_and_lens (SPEC §5.1).
 *
 *   topk_indices          int32 [T, K]   local compressed positions, < 0 = none
 *   token_to_req_indices  int32 [T]
 *   block_table           int32 [R, P]
 *   block_size            > 0
 *   is_valid_token        bool [T]
 *   global_out            int32 [T, K]   (written in full)
 *   lens_out              int32 [T]
 *
 * global = block_table[req][x / bs] * bs + x % bs for x >= 0, else -1;
 * lens = valid ? (the entries written as slots) : 0, so lens <= K.  Written
 * as -1 without a lookup: an entry whose page x / bs is past the block-table
 * row; every entry of a token whose request id is outside [0, R).  For a
 * valid token these are skipped and counted (the row of a bad request id
 * once); a token with is_valid_token false is padding (e.g. CUDA-graph rows)
 * and is not counted.  Returns OK, WARN_SKIPPED or an argument error. */
DSV4KV_API dsv4kv_status dsv4kv_compute_global_topk_indices_and_lens(
    const DLTensor *topk_indices, const DLTensor *token_to_req_indices,
    const DLTensor *block_table, int32_t block_size, const DLTensor *is_valid_token,
    const DLTensor *global_out, const DLTensor *lens_out, const dsv4kv_options *opt);

/* combine_topk_swa_indices (SPEC §5.2).
 *
 *   topk_indices     int32 [T, W], W >= topk (else DSV4KV_ERR_VALUE)
 *   query_start_loc  int32 [R + 1] (rebased on its first entry)
 *   seq_lens         int32 [R]
 *   gather_lens      int32 [R]
 *   window_size      > 0;  compress_ratio >= 0 (0 = SWA-only layer);  topk >= 0
 *   M                per-request row stride of the gathered workspace
 *   N                row of a request's first SWA key in its workspace slice
 *   combined         int32 [T, C], C >= topk + window_size (the reference
 *                    allocates C = round_up(topk + window_size, 128))
 *   lens             int32 [T]
 *
 * Writes, for each token of each request, the first topk_len + swa_len
 * columns of its row and its length; nothing else.  A token index outside
 * [0, T) (from a malformed query_start_loc) is skipped and counted.  Lengths
 * stay inside the row (0 <= len <= topk + window_size <= C): a part that
 * would be negative (a position before 0, or gather_lens shorter than the
 * query) is clamped to 0 and counted as a skip. */
DSV4KV_API dsv4kv_status dsv4kv_combine_topk_swa_indices(const DLTensor *topk_indices,
                                              const DLTensor *query_start_loc,
                                              const DLTensor *seq_lens,
                                              const DLTensor *gather_lens, int32_t window_size,
                                              int32_t compress_ratio, int32_t topk, int32_t M,
                                              int32_t N, const DLTensor *combined,
                                              const DLTensor *lens, const dsv4kv_options *opt);

/* Arguments of build_flashinfer_mixed_sparse_indices (SPEC §5.3).  D decode
 * tokens come first, then P prefill tokens; D = decode_swa_indices.shape[0],
 * P = prefill_topk_indices.shape[0]. */
typedef struct {
  const DLTensor *decode_swa_indices;          /* int32 [D, S], S >= window_size    */
  const DLTensor *decode_compressed_indices;   /* int32 [D, Dk] or NULL              */
  const DLTensor *decode_compressed_topk_lens; /* int32 [>= D] or NULL (global mode) */
  const DLTensor *decode_is_valid_token;       /* bool [>= D]; NULL = all valid    */
  int decode_compressed_indices_are_local;     /* 1: local positions, map them       */
  const DLTensor *prefill_topk_indices;        /* int32 [P, Wp]                      */
  const DLTensor *query_start_loc;             /* int32 [R + 1] (not rebased)        */
  const DLTensor *seq_lens;                    /* int32 [R]                          */
  const DLTensor *replay_start;                /* int32 [R]                          */
  const DLTensor *token_to_req_indices;        /* int32 [>= D + P]                   */
  const DLTensor *swa_block_table;             /* int32 [R_s, P_s]                   */
  const DLTensor *compressed_block_table;      /* int32 [R_c, P_c]; NULL = swa's     */
  int32_t swa_block_size;                      /* > 0                                */
  int32_t swa_block_span;                      /* physical tokens per page; 0 = bs   */
  int32_t compressed_block_size;               /* > 0                                */
  int32_t compressed_block_span;               /* 0 = compressed_block_size          */
  int32_t window_size;                         /* > 0, <= S                          */
  int32_t compress_ratio;                      /* >= 0 (0 = SWA-only)                */
  int32_t topk;                                /* >= 0                               */
} dsv4kv_flashinfer_args;

/* build_flashinfer_mixed_sparse_indices (SPEC §5.3).
 *
 *   sparse_indices  int32 [D + P, S + K4], K4 = round_up(max(topk, Dk), 4)
 *   sparse_lens     int32 [D + P]
 *
 * Every element of both outputs is written.  Skipped and counted, written as
 * -1: a lookup whose request id or page number (position / block size) is
 * outside its block table (not counted for a decode token whose
 * decode_is_valid_token is false: padding).  A skipped local decode lookup
 * does not count toward that token's length; a prefill token whose request
 * id is outside [0, R) gets a row of -1 and length 0.  Lengths stay inside
 * the row, 0 <= len <= S + K4: a decode_compressed_topk_lens entry outside
 * [0, Dk] is clamped to it, a prefill top-k length below 0 (a position before
 * 0) or past prefill_topk_indices' width Wp is clamped to [0, Wp]; each clamp
 * counts as a skip.  A block span below its block size is DSV4KV_ERR_VALUE
 * (two slots would alias one physical token).
 * Alignment: a row is S + K4 entries; K4 is a multiple of 4, so with a
 * compact, 16-byte aligned sparse_indices every row starts 16-byte aligned
 * exactly when S is a multiple of 4 (the window widths of DeepSeek-V4 are);
 * the SWA part is not padded, as the reference's layout has it. */
DSV4KV_API dsv4kv_status dsv4kv_build_flashinfer_mixed_sparse_indices(const dsv4kv_flashinfer_args *args,
                                                           const DLTensor *sparse_indices,
                                                           const DLTensor *sparse_lens,
                                                           const dsv4kv_options *opt);

/* ------------------------------------------------------------------------ */
/* Indexer K store (SPEC §6)                                                  */
/* ------------------------------------------------------------------------ */

/* indexer_k_norm_rope_store (SPEC §6; reference: vLLM indexer_k_store
 * _indexer_k_norm_rope_quant_store_kernel): RMSNorm -> GPT-J RoPE on dims
 * 64..127 -> quantize into an INDEXER_FP8 or INDEXER_MXFP4 cache.
 *
 *   k_pre            bf16 [T_k, 128], last-dim stride 1
 *   positions        int64 [>= T]
 *   cos_sin_cache    fp32 or bf16 [max_pos, 64] (cos in 0..31, sin in 32..63)
 *   rms_norm_weight  fp32 or bf16 [128]
 *   eps              RMSNorm epsilon, finite and >= 0.  0 is accepted because
 *                    the reference accepts it (its golden scale-boundary
 *                    files use it); an all-zero row then stores 0 / 0, which
 *                    the non-finite check reports
 *   k_cache, cache   INDEXER_FP8 (flags MX_SCALE, TILED allowed) or
 *                    INDEXER_MXFP4 (no flags) cache
 *   kv_slot_mapping  int64 [T], T <= T_k
 *   compress_ratio   >= 1: token t writes only when (positions[t] + 1) % ratio == 0
 *
 * rstd is the correctly rounded 1/sqrt (NUMERICS §10), so about 2 rows in
 * 100,000 may differ from the GPU reference by one code step.  Skipped and
 * counted: a slot < -1 or past the cache; a negative position or a RoPE row
 * past cos_sin_cache.  Rows naming one slot: the later writing row wins (on
 * CUDA with the insert's alignment condition for calls past 1024 rows), unless
 * options.distinct_slots promises there are none (as for the insert).
 * k_cache's pages must not overlap the inputs (DSV4KV_ERR_STRIDE). */
DSV4KV_API dsv4kv_status dsv4kv_indexer_k_norm_rope_store(const DLTensor *k_pre, const DLTensor *positions,
                                               const DLTensor *cos_sin_cache,
                                               const DLTensor *rms_norm_weight, float eps,
                                               const DLTensor *k_cache,
                                               const dsv4kv_cache_desc *cache,
                                               const DLTensor *kv_slot_mapping,
                                               int32_t compress_ratio,
                                               const dsv4kv_options *opt);

/* ------------------------------------------------------------------------ */
/* Warm-up                                                                    */
/* ------------------------------------------------------------------------ */
/* What a model's attention layers launch: the C form of the reference's
 * per-layer-type warm-up rows.  SWA-only layers (compress_ratio 0) build
 * their index lists with top-k 0; every compressed layer shares index_topk. */
typedef struct {
  int32_t num_layers;              /* 1 .. 4096                                  */
  const int32_t *compress_ratios;  /* [num_layers]: 0 = SWA only, else >= 1     */
  int32_t index_topk;              /* top-k width of the compressed layers, >= 0 */
  int32_t window_size;             /* sliding-window tokens, > 0                 */
  dsv4kv_cache_desc k_cache;       /* the main K cache (V4, MXFP8 or NVFP4)      */
  dsv4kv_cache_desc indexer_cache; /* the indexer's cache (INDEXER_FP8 or
                                      INDEXER_MXFP4); read only when a layer has
                                      compress_ratio > 0                         */
} dsv4kv_model_desc;

/* Loads every kernel the model's layers will launch on `device` (kDLCUDA:
 * module loading, which CUDA otherwise does lazily at a kernel's first
 * launch, so that the first serving step is fast and a CUDA-graph capture
 * never loads a module).  The kernels take record formats, top-k and window
 * as run-time arguments, so one kernel per op serves every layer type; the
 * description decides whether the indexer's kernel is needed (a layer with
 * compress_ratio > 0) and is checked as the ops will check it.  Nothing is
 * compiled: the library carries sm_90 machine code and compute_90 PTX (which
 * the driver compiles once, here, on newer GPUs; GPUs before compute
 * capability 9.0 are refused).  Allocates nothing.  *kernels_loaded (optional) gets the number of
 * kernels loaded; a CPU device loads none and returns DSV4KV_OK.
 * DSV4KV_ERR_NULL / _VALUE / _FORMAT for a bad description,
 * DSV4KV_ERR_BACKEND_NOT_BUILT for kDLCUDA where the CUDA backend cannot run
 * (dsv4kv_backend_unavailable_reason says why),
 * DSV4KV_ERR_DEVICE for another device type or a negative device id,
 * DSV4KV_ERR_BACKEND when CUDA fails.  Call it once per device, before
 * serving or capturing. */
DSV4KV_API dsv4kv_status dsv4kv_warmup(const dsv4kv_model_desc *model, DLDevice device, int32_t *kernels_loaded);

/* ======================================================================== */
/* ADVANCED.  Below this line: helpers for tests, tools and bindings.  They   */
/* follow the same rules but may change between minor versions.             */
/* ======================================================================== */

/* ------------------------------------------------------------------------ */
/* Number formats (SPEC §1): scalar, exact, one value at a time.             */
/* ------------------------------------------------------------------------ */
DSV4KV_API float dsv4kv_bf16_to_f32(uint16_t bits);
/* Round to nearest even; every NaN -> 0x7FFF. */
DSV4KV_API uint16_t dsv4kv_f32_to_bf16(float x);
/* e4m3 (OCP): RNE, saturating to +-448, sign kept on zero, NaN -> 0x7F. */
DSV4KV_API uint8_t dsv4kv_e4m3_encode(float x);
DSV4KV_API float dsv4kv_e4m3_decode(uint8_t code);           /* 0x7F / 0xFF -> NaN       */
/* e4m3fnuz: RNE, saturating to +-240, zero -> 0x00 (either sign), NaN -> 0x80. */
DSV4KV_API uint8_t dsv4kv_e4m3fnuz_encode(float x);
DSV4KV_API float dsv4kv_e4m3fnuz_decode(uint8_t code);       /* 0x80 -> NaN              */
/* e2m1 (4-bit code, sign in bit 3): RNE ties-to-even-code, saturating to +-6,
 * sign kept on zero, NaN -> 0x7 (+6), as NUMERICS §1.1. */
DSV4KV_API uint8_t dsv4kv_e2m1_encode(float x);
DSV4KV_API float dsv4kv_e2m1_decode(uint8_t code);           /* low 4 bits used          */
/* UE8M0: byte e -> 2^(e-127) exactly (0 -> 2^-127, 255 -> +Inf).  Note the
 * gathers flush byte 0 to 0.0 as the reference does (NUMERICS §3). */
DSV4KV_API float dsv4kv_ue8m0_decode(uint8_t e);

/* ------------------------------------------------------------------------ */
/* Library-allocated outputs                                                  */
/* ------------------------------------------------------------------------ */
/* The reference's out=None path: the library allocates `combined` int32
 * [T, round_up(topk + window_size, 128)] filled with -1 and `lens` int32 [T]
 * filled with 0 (CPU memory), then runs dsv4kv_combine_topk_swa_indices.  The
 * caller owns *combined_out and *lens_out and releases each with its deleter
 * (dsv4kv_managed_free does that).  On an error both are left NULL. */
DSV4KV_API dsv4kv_status dsv4kv_combine_topk_swa_indices_alloc(
    const DLTensor *topk_indices, const DLTensor *query_start_loc, const DLTensor *seq_lens,
    const DLTensor *gather_lens, int32_t window_size, int32_t compress_ratio, int32_t topk,
    int32_t M, int32_t N, DLManagedTensor **combined_out, DLManagedTensor **lens_out,
    const dsv4kv_options *opt);

/* Calls t->deleter(t) when t and its deleter are non-NULL. */
DSV4KV_API void dsv4kv_managed_free(DLManagedTensor *t);

/* ------------------------------------------------------------------------ */
/* CPU kernel paths                                                           */
/* ------------------------------------------------------------------------ */
/* The CPU backend has a scalar path (the reference every other path is
 * tested against) and may have SIMD paths, chosen once per process from what
 * the processor supports.  The environment variable DSV4KV_CPU_PATH (a path's
 * name) forces one at load time; dsv4kv_cpu_path_select forces one later.
 * Tests and benchmarks use these to run every path on the machine they are on. */

/* Number of CPU paths this build and processor can run (>= 1; 0 is "scalar"). */
DSV4KV_API int dsv4kv_cpu_path_count(void);
/* Name of path i in [0, count), or NULL. */
DSV4KV_API const char *dsv4kv_cpu_path_name(int i);
/* Name of the path calls use now. */
DSV4KV_API const char *dsv4kv_cpu_path_current(void);
/* Use path `name` for every later call of the process (NULL: the automatic
 * choice).  Not thread-safe against calls running at the same time.
 * DSV4KV_ERR_VALUE for a name this build or processor cannot run. */
DSV4KV_API dsv4kv_status dsv4kv_cpu_path_select(const char *name);

/* ------------------------------------------------------------------------ */
/* Layouts a binding mirrors, checked at compile time (64-bit targets).        */
/* ------------------------------------------------------------------------ */
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
#ifdef __cplusplus
#define DSV4KV_LAYOUT_ASSERT(c, m) static_assert(c, m)
#else
#define DSV4KV_LAYOUT_ASSERT(c, m) _Static_assert(c, m)
#endif
DSV4KV_LAYOUT_ASSERT(sizeof(dsv4kv_cache_desc) == 32 && offsetof(dsv4kv_cache_desc, page_stride) == 16 &&
                         offsetof(dsv4kv_cache_desc, flags) == 24,
                     "dsv4kv_cache_desc: record, fp8, block_size @0/4/8, page_stride @16, flags @24");
DSV4KV_LAYOUT_ASSERT(sizeof(dsv4kv_report) == 80 && offsetof(dsv4kv_report, reason) == 24 &&
                         offsetof(dsv4kv_report, values) == 32,
                     "dsv4kv_report: 3 x int64, 2 x int32, 6 x int64");
DSV4KV_LAYOUT_ASSERT(sizeof(dsv4kv_options) == 48 && offsetof(dsv4kv_options, check_nonfinite) == 16 &&
                         offsetof(dsv4kv_options, stream) == 24 && offsetof(dsv4kv_options, report) == 32 &&
                         offsetof(dsv4kv_options, distinct_slots) == 40,
                     "dsv4kv_options: 2 pointers, 2 ints, 2 pointers, an int (padded to 8)");
DSV4KV_LAYOUT_ASSERT(sizeof(dsv4kv_flashinfer_args) == 128 &&
                         offsetof(dsv4kv_flashinfer_args, swa_block_size) == 96,
                     "dsv4kv_flashinfer_args: 12 pointer-sized slots, then 7 int32");
DSV4KV_LAYOUT_ASSERT(sizeof(dsv4kv_model_desc) == 88 && offsetof(dsv4kv_model_desc, compress_ratios) == 8 &&
                         offsetof(dsv4kv_model_desc, k_cache) == 24 && offsetof(dsv4kv_model_desc, indexer_cache) == 56,
                     "dsv4kv_model_desc: int32 + pad, pointer, 2 x int32, 2 cache descriptions");
#undef DSV4KV_LAYOUT_ASSERT
#endif

#ifdef __cplusplus
}
#endif
#endif /* DSV4KV_H */
