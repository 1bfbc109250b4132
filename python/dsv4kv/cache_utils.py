"""The reference's cache_utils module: inserts, the gather and the
sparse-attention index builders, with the reference's names, parameters,
defaults and return values, running libdsv4kv (CPU, or CUDA for torch CUDA
tensors, on torch's current stream).

What differs from the reference: every index read from a tensor is
bounds-checked; an entry that would touch memory outside its tensor is
skipped and counted instead (no exception by default: ``dsv4kv.last_report()``
gives the count and names the first entry, ``dsv4kv.configure(raise_on_skip=
True)`` raises ``SkippedEntriesError`` instead).  Bad arguments raise
ValueError, wrong dtypes TypeError, backend failures RuntimeError.
"""

import ctypes

from . import _lib
from ._lib import CacheDesc, FlashinferArgs, lib
from ._tensors import api, arg, call, check_alloc, flag, i32, i64, new_output, ptr

V4_BYTES_PER_TOKEN = 584
MXFP8_BYTES_PER_TOKEN = 528
NVFP4_BYTES_PER_TOKEN = 288
INDEXER_FP8_BYTES_PER_TOKEN = 132
INDEXER_MXFP4_BYTES_PER_TOKEN = 68
SPARSE_PREFILL_TOPK_ALIGNMENT = 128

_MAIN_WIDTHS = {V4_BYTES_PER_TOKEN: _lib.RECORD_V4, MXFP8_BYTES_PER_TOKEN: _lib.RECORD_MXFP8,
                NVFP4_BYTES_PER_TOKEN: _lib.RECORD_NVFP4}


def _shape(x, name, ndim):
    """x's shape, checked to have ndim dimensions (before it is unpacked)."""
    shape = tuple(getattr(x, "shape", ()) or ()) if x is not None else None
    if shape is None or len(shape) != ndim:
        raise _lib.DSV4KVValueError("%s must be a %d-D tensor, got %s" % (
            name, ndim, "None" if x is None else "shape %s" % (shape,)), 3)
    return shape


def _cache_shape(k_cache):
    """k_cache's shape, 2-D [num_blocks, page bytes] or 3-D [num_blocks,
    block_size, record bytes] (a rank error otherwise, before the shape is
    read for a record width or a block size)."""
    shape = tuple(k_cache.shape)
    if len(shape) not in (2, 3):
        raise _lib.DSV4KVValueError("k_cache must be 2-D [num_blocks, page bytes] or 3-D [num_blocks, block_size, "
                                    "record bytes], got shape %s" % (shape,), 3)
    return shape


def _main_desc(k_cache, block_size, use_fnuz, bytes_per_token):
    """The cache description as the reference reads it: the record from
    k_cache.shape[-1] (3-D caches) or bytes_per_token; the block size from
    block_size (a 3-D cache whose shape[1] differs is refused by the library)."""
    block_size = i32(block_size, "block_size")
    if k_cache is None or not hasattr(k_cache, "shape"):
        raise _lib.DSV4KVTypeError("k_cache is %s; pass a uint8 tensor" % type(k_cache).__name__, 2)
    shape = _cache_shape(k_cache)
    # a view of wider elements would read as a wrong record width: name its dtype instead
    size = getattr(getattr(k_cache, "dtype", None), "itemsize", None)
    if not isinstance(size, int) and callable(getattr(k_cache, "element_size", None)):
        size = k_cache.element_size()  # torch before dtype.itemsize
    if isinstance(size, int) and size != 1:
        raise _lib.DSV4KVTypeError("k_cache has dtype %s (%d bytes an element); pass the cache as uint8 bytes"
                                   % (k_cache.dtype, size), 2)
    width = shape[-1] if len(shape) == 3 else bytes_per_token
    if width is None and block_size <= 0:  # no page width to read a record off: name the real culprit
        raise _lib.DSV4KVValueError("block_size = %d; must be > 0" % block_size, 6)
    if width is None:
        raise _lib.DSV4KVValueError(
            "k_cache is 2-D %s and %d-token pages of no record fill it exactly: pass "
            "bytes_per_token (584 V4, 528 MXFP8, 288 NVFP4)" % (shape, block_size), 10)
    if width not in _MAIN_WIDTHS:
        raise _lib.DSV4KVValueError(
            "k_cache: record width %r is none of V4 (584), MXFP8 (528), NVFP4 (288) bytes per token" % (width,), 10)
    return CacheDesc(_MAIN_WIDTHS[width], _lib.FP8_FNUZ if flag(use_fnuz, "use_fnuz") else _lib.FP8_OCP, block_size,
                     0, 0)


@api
def quantize_and_insert_k_cache(k, k_cache, slot_mapping, block_size=64, is_ue8m0=True, use_fnuz=False,
                                bytes_per_token=V4_BYTES_PER_TOKEN, *, distinct_slots=False):
    """Quantizes bf16 keys into their slots of a paged K cache (SPEC §3).

    k             bf16 [T_k, 512] (numpy: ml_dtypes.bfloat16, or uint16 bits)
    k_cache       uint8 [num_blocks, block_size, record bytes] or [num_blocks, page bytes]
    slot_mapping  int64 [T], T <= T_k; -1 skips a row, other out-of-range slots are
                  skipped and counted
    block_size    tokens per block (a 3-D cache's shape[1] must agree)
    is_ue8m0      UE8M0 block scales: the only scale format dsv4kv stores (False raises)
    use_fnuz      e4m3fnuz codes (ROCm) instead of OCP e4m3fn
    bytes_per_token  584 (V4), 528 (MXFP8) or 288 (NVFP4) for a 2-D cache (a 3-D cache's
                  shape[-1] is the record width, as the reference reads it)
    distinct_slots  the caller's promise that no two rows name one slot (-1 padding may
                  repeat), as an engine's slot mapping never does: CUDA skips finding
                  duplicates; broken, a slot named more than once holds undefined
                  bytes.  The CPU ignores it.
    Returns None; when two rows name one slot, the later row wins (unless
    distinct_slots promised there are none).
    """
    if not flag(is_ue8m0, "is_ue8m0"):
        raise _lib.DSV4KVValueError("is_ue8m0=False: dsv4kv stores UE8M0 block scales only", 6)
    tk, tc = arg(k, "k", bf16=True), arg(k_cache, "k_cache", out=True)  # (in argument order)
    ts = arg(slot_mapping, "slot_mapping")
    desc = _main_desc(k_cache, block_size, use_fnuz, bytes_per_token)
    call("quantize_and_insert_k_cache", lib.dsv4kv_quantize_and_insert_k_cache, (tk, tc, ts),
         tk.ref(), tc.ref(), ctypes.byref(desc), ts.ref(), distinct_slots=flag(distinct_slots, "distinct_slots"))


@api
def dequantize_and_gather_k_cache(out, k_cache, seq_lens, gather_lens, block_table, block_size, offset,
                                  use_fnuz=False, max_gather_len=None, *, bytes_per_token=None):
    """Dequantizes each request's last tokens into out (SPEC §4): request r's last
    L = gather_lens[r] (else seq_lens[r]) tokens go to out[r, offset : offset + L].

    out          bf16 [R_out >= R, max_tokens, 512]
    k_cache      uint8 cache as for the insert (2-D: the record from bytes_per_token,
                 else from the page width block_size x record)
    seq_lens     int32 [R]; gather_lens int32 [R] or None (whole sequences)
    block_table  int32 [R_bt >= R, max_pages]
    block_size   tokens per page; use_fnuz: the cache holds e4m3fnuz codes
    max_gather_len  the reference's launch width: accepted, not needed
    Returns None.  Lengths past out's rows or the sequence, and page ids past the
    cache, are skipped and counted.
    """
    if bytes_per_token is None and len(tuple(getattr(k_cache, "shape", ()))) == 2:
        per_page = tuple(k_cache.shape)[1]
        fits = [w for w in _MAIN_WIDTHS if per_page == i32(block_size, "block_size") * w]
        bytes_per_token = fits[0] if fits else None
    desc = _main_desc(k_cache, block_size, use_fnuz, bytes_per_token)
    to, tc = arg(out, "out", bf16=True, out=True), arg(k_cache, "k_cache")
    tsl, tbt = arg(seq_lens, "seq_lens"), arg(block_table, "block_table")
    tgl = arg(gather_lens, "gather_lens", optional=True)
    call("dequantize_and_gather_k_cache", lib.dsv4kv_dequantize_and_gather_k_cache, (to, tc, tsl, tgl, tbt),
         to.ref(), tc.ref(), ctypes.byref(desc), tsl.ref(), ptr(tgl), tbt.ref(), i64(offset, "offset"))


def gather_num_workers(max_gather_len):
    """The reference's gather launch width for max_gather_len (None: 128)."""
    return int(lib.dsv4kv_gather_num_workers(-1 if max_gather_len is None else i64(max_gather_len, "max_gather_len")))


@api
def compute_global_topk_indices_and_lens(topk_indices, token_to_req_indices, block_table, block_size,
                                         is_valid_token):
    """Maps request-local top-k positions to cache slots (SPEC §5.1).

    topk_indices int32 [T, K]; token_to_req_indices int32 [T]; block_table int32
    [R, P]; is_valid_token bool [T] (invalid rows are padding: 0 lens, no skips).
    Returns (global_topk_indices int32 [T, K], topk_lens int32 [T]), allocated
    like topk_indices.
    """
    T, K = _shape(topk_indices, "topk_indices", 2)
    glob = new_output(topk_indices, (T, K), "int32")
    lens = new_output(topk_indices, (T,), "int32")
    t = [arg(x, n) for x, n in ((topk_indices, "topk_indices"), (token_to_req_indices, "token_to_req_indices"),
                                 (block_table, "block_table"), (is_valid_token, "is_valid_token"),
                                 (glob, "global_topk_indices"), (lens, "topk_lens"))]
    call("compute_global_topk_indices_and_lens", lib.dsv4kv_compute_global_topk_indices_and_lens, t,
         t[0].ref(), t[1].ref(), t[2].ref(), i32(block_size, "block_size"), t[3].ref(), t[4].ref(), t[5].ref())
    return glob, lens


@api
def combine_topk_swa_indices(topk_indices, query_start_loc, seq_lens, gather_lens, window_size, compress_ratio,
                             topk, M, N, out=None):
    """One row per prefill token of top-k then sliding-window indices into the
    gathered workspace (SPEC §5.2).

    topk_indices int32 [T, W >= topk], one row per query token of the R requests
    (request r's tokens are rows query_start_loc[r] - query_start_loc[0] ..);
    query_start_loc int32 [R + 1]; seq_lens, gather_lens int32 [R];
    window_size sliding-window tokens; compress_ratio tokens per compressed
    entry (0 = SWA-only layer); topk the top-k width; M, N the workspace's
    row stride per request and the row of its first SWA key.
    out: (combined, lens) to write into, else they are allocated like
    topk_indices: combined int32 [T, round_up(topk + window_size, 128)] filled
    with -1, lens int32 [T] filled with 0 (the reference leaves lens of tokens
    outside every request uninitialized).
    Returns (combined_indices, combined_lens).
    """
    T = _shape(topk_indices, "topk_indices", 2)[0]
    topk, window_size = i32(topk, "topk"), i32(window_size, "window_size")
    if out is None:
        if topk < 0 or window_size <= 0:
            raise _lib.DSV4KVValueError("topk = %d, window_size = %d: need topk >= 0, window_size > 0" % (
                topk, window_size), 6)
        width = (topk + window_size + SPARSE_PREFILL_TOPK_ALIGNMENT - 1) // SPARSE_PREFILL_TOPK_ALIGNMENT * \
            SPARSE_PREFILL_TOPK_ALIGNMENT
        check_alloc(T * width, "combined_indices")
        out = (new_output(topk_indices, (T, width), "int32", -1), new_output(topk_indices, (T,), "int32", 0))
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise _lib.DSV4KVValueError("out must be a (combined_indices, combined_lens) pair", 6)
    combined, lens = out
    t = [arg(x, n) for x, n in ((topk_indices, "topk_indices"), (query_start_loc, "query_start_loc"),
                                 (seq_lens, "seq_lens"), (gather_lens, "gather_lens"))]
    t += [arg(combined, "combined_indices", out=True), arg(lens, "combined_lens", out=True)]
    call("combine_topk_swa_indices", lib.dsv4kv_combine_topk_swa_indices, t, t[0].ref(), t[1].ref(), t[2].ref(),
         t[3].ref(), i32(window_size, "window_size"), i32(compress_ratio, "compress_ratio"), i32(topk, "topk"),
         i32(M, "M"), i32(N, "N"), t[4].ref(), t[5].ref())
    return combined, lens


@api
def build_flashinfer_mixed_sparse_indices(decode_swa_indices, decode_compressed_indices,
                                          decode_compressed_topk_lens, prefill_topk_indices, query_start_loc,
                                          seq_lens, token_to_req_indices, swa_block_table, swa_block_size,
                                          compressed_block_table, compressed_block_size, window_size,
                                          compress_ratio, topk, decode_compressed_indices_are_local=False,
                                          decode_is_valid_token=None, swa_block_span=None,
                                          compressed_block_span=None, *, replay_start):
    """The FlashInfer sparse-index matrix of a decode-first mixed batch (SPEC §5.3).

    D decode rows (decode_swa_indices int32 [D, S]) then P prefill rows
    (prefill_topk_indices int32 [P, Wp]); replay_start int32 [R].
    Returns (sparse_indices int32 [D + P, S + K4], sparse_topk_lens int32
    [D + P]) with K4 = round_up(max(topk, Dk), 4), allocated like
    decode_swa_indices.  Lookups outside a block table write -1 and are
    counted (not for rows decode_is_valid_token marks as padding).
    """
    D, S = _shape(decode_swa_indices, "decode_swa_indices", 2)
    P = _shape(prefill_topk_indices, "prefill_topk_indices", 2)[0]
    Dk = _shape(decode_compressed_indices, "decode_compressed_indices", 2)[1] if decode_compressed_indices is not None \
        else 0
    if i32(topk, "topk") < 0:
        raise _lib.DSV4KVValueError("topk = %d is negative" % topk, 6)
    K4 = (max(topk, Dk) + 3) // 4 * 4
    check_alloc((D + P) * (S + K4), "sparse_indices")
    sparse = new_output(decode_swa_indices, (D + P, S + K4), "int32")
    lens = new_output(decode_swa_indices, (D + P,), "int32")
    named = (("decode_swa_indices", decode_swa_indices), ("decode_compressed_indices", decode_compressed_indices),
             ("decode_compressed_topk_lens", decode_compressed_topk_lens),
             ("decode_is_valid_token", decode_is_valid_token), ("prefill_topk_indices", prefill_topk_indices),
             ("query_start_loc", query_start_loc), ("seq_lens", seq_lens), ("replay_start", replay_start),
             ("token_to_req_indices", token_to_req_indices), ("swa_block_table", swa_block_table),
             ("compressed_block_table", compressed_block_table))
    optional = ("decode_compressed_indices", "decode_compressed_topk_lens", "decode_is_valid_token",
                "compressed_block_table")
    t = {n: arg(x, n, optional=n in optional) for n, x in named}
    a = FlashinferArgs()
    for n, _ in named:
        if t[n] is not None:
            setattr(a, n, ctypes.pointer(t[n].dl))
    a.decode_compressed_indices_are_local = int(flag(decode_compressed_indices_are_local,
                                                     "decode_compressed_indices_are_local"))
    a.swa_block_size = i32(swa_block_size, "swa_block_size")
    a.compressed_block_size = i32(compressed_block_size, "compressed_block_size")
    a.swa_block_span = i32(swa_block_span or 0, "swa_block_span")
    a.compressed_block_span = i32(compressed_block_span or 0, "compressed_block_span")
    a.window_size, a.compress_ratio = i32(window_size, "window_size"), i32(compress_ratio, "compress_ratio")
    a.topk = i32(topk, "topk")
    ts, tl = arg(sparse, "sparse_indices"), arg(lens, "sparse_topk_lens")
    call("build_flashinfer_mixed_sparse_indices", lib.dsv4kv_build_flashinfer_mixed_sparse_indices,
         list(t.values()) + [ts, tl], ctypes.byref(a), ts.ref(), tl.ref())
    return sparse, lens
