"""The reference's indexer_k_store module: RMSNorm -> RoPE -> FP8 / MXFP4 ->
paged store of the indexer's keys, on libdsv4kv (see cache_utils for what
differs from the reference: bounds checks and skipped entries)."""

import ctypes

from . import _lib
from ._lib import CacheDesc, lib
from ._tensors import api, arg, call, f32, flag, i32
from .cache_utils import _cache_shape


@api
def indexer_k_norm_rope_store(k_pre, positions, cos_sin_cache, rms_norm_weight, rms_norm_eps, k_cache,
                              kv_slot_mapping, compress_ratio, use_fp4_cache, *, mx_scale=False, shuffle=False,
                              use_fnuz=False, block_size=None, distinct_slots=False):
    """Stores one indexer key per group of compress_ratio tokens (SPEC §6).

    k_pre            bf16 [T_k, 128], T_k >= T; only rows with (positions + 1) % compress_ratio == 0 write
    positions        int64 [>= T] (rows past T are not read); compress_ratio >= 1
    cos_sin_cache    fp32 or bf16 [rows, 64] (cos 0..31, sin 32..63), RoPE row pos // ratio * ratio
    rms_norm_weight  fp32 or bf16 [128]
    rms_norm_eps     float >= 0
    k_cache          uint8 [num_blocks, block_size, 132 or 68], or 2-D [num_blocks, page bytes]
                     with block_size given; a page holds every token's values, then every
                     token's 4 scale bytes (SPEC §6), whatever the 3-D view suggests
    kv_slot_mapping  int64 [T]
    use_fp4_cache    MXFP4 records (68 B) instead of FP8 (132 B)
    mx_scale, shuffle, use_fnuz  FP8 only: four UE8M0 scale bytes instead of an fp32
                     2^e; the 16x16-tiled value layout; e4m3fnuz codes
    distinct_slots   the caller's promise that no two rows that store a key name one slot
                     (-1 padding may repeat; as for the insert: CUDA skips finding
                     duplicates, a slot named more than once then holds undefined
                     bytes; the CPU ignores it)
    Returns None.  The RMSNorm uses a correctly rounded 1/sqrt (the reference's
    rsqrt.approx can differ by one code step in ~2 rows in 100,000).
    """
    if k_cache is None or not hasattr(k_cache, "shape"):
        raise _lib.DSV4KVTypeError("k_cache is %s; pass a uint8 tensor" % type(k_cache).__name__, 2)
    shape = _cache_shape(k_cache)
    if len(shape) == 3 and block_size is None:
        block_size = shape[1]  # the library checks a given one against it
    if block_size is None:
        raise _lib.DSV4KVValueError("k_cache is 2-D: pass block_size (tokens per block)", 6)
    record = _lib.RECORD_INDEXER_MXFP4 if flag(use_fp4_cache, "use_fp4_cache") else _lib.RECORD_INDEXER_FP8
    flags = (_lib.CACHE_MX_SCALE if flag(mx_scale, "mx_scale") else 0) | (_lib.CACHE_TILED if flag(shuffle, "shuffle") else 0)
    desc = CacheDesc(record, _lib.FP8_FNUZ if flag(use_fnuz, "use_fnuz") else _lib.FP8_OCP, i32(block_size, "block_size"),
                     0, flags)
    t = [arg(x, n, bf16=n in ("k_pre", "cos_sin_cache", "rms_norm_weight"), out=n == "k_cache") for x, n in (
        (k_pre, "k_pre"), (positions, "positions"), (cos_sin_cache, "cos_sin_cache"),
        (rms_norm_weight, "rms_norm_weight"), (k_cache, "k_cache"), (kv_slot_mapping, "kv_slot_mapping"))]
    call("indexer_k_norm_rope_store", lib.dsv4kv_indexer_k_norm_rope_store, t, t[0].ref(), t[1].ref(), t[2].ref(),
         t[3].ref(), f32(rms_norm_eps, "rms_norm_eps"), t[4].ref(), ctypes.byref(desc), t[5].ref(), i32(compress_ratio, "compress_ratio"),
         distinct_slots=flag(distinct_slots, "distinct_slots"))
