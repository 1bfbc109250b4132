"""The reference's indexer_k_store module: RMSNorm -> RoPE -> FP8 / MXFP4 ->
paged store of the indexer's keys, on libdsv4kv (see cache_utils for what
differs from the reference: bounds checks and skipped entries)."""

import ctypes

from . import _lib
from ._lib import CacheDesc, lib
from ._tensors import arg, call, i32


def indexer_k_norm_rope_store(k_pre, positions, cos_sin_cache, rms_norm_weight, rms_norm_eps, k_cache,
                              kv_slot_mapping, compress_ratio, use_fp4_cache, *, mx_scale=False, shuffle=False,
                              use_fnuz=False, block_size=None):
    """Stores one indexer key per group of compress_ratio tokens (SPEC §6).

    k_pre            bf16 [T_k, 128]; only rows with (positions + 1) % compress_ratio == 0 write
    positions        int64 [T]
    cos_sin_cache    fp32 or bf16 [rows, 64] (cos 0..31, sin 32..63), RoPE row pos // ratio * ratio
    rms_norm_weight  fp32 or bf16 [128]
    rms_norm_eps     float >= 0
    k_cache          uint8 [num_blocks, block_size, 132 or 68], or 2-D [num_blocks, page bytes]
                     with block_size given
    kv_slot_mapping  int64 [T]
    use_fp4_cache    MXFP4 records (68 B) instead of FP8 (132 B)
    mx_scale, shuffle, use_fnuz  FP8 only: four UE8M0 scale bytes instead of an fp32
                     2^e; the 16x16-tiled value layout; e4m3fnuz codes
    Returns None.  The RMSNorm uses a correctly rounded 1/sqrt (the reference's
    rsqrt.approx can differ by one code step in ~2 rows in 100,000).
    """
    shape = tuple(k_cache.shape)
    if len(shape) == 3:
        block_size = shape[1]
    if block_size is None:
        raise _lib.DSV4KVValueError("k_cache is 2-D: pass block_size (tokens per block)", 6)
    record = _lib.RECORD_INDEXER_MXFP4 if use_fp4_cache else _lib.RECORD_INDEXER_FP8
    flags = (_lib.CACHE_MX_SCALE if mx_scale else 0) | (_lib.CACHE_TILED if shuffle else 0)
    desc = CacheDesc(record, _lib.FP8_FNUZ if use_fnuz else _lib.FP8_OCP, i32(block_size, "block_size"), 0, flags)
    t = [arg(x, n, bf16=True) for x, n in ((k_pre, "k_pre"), (positions, "positions"),
                                           (cos_sin_cache, "cos_sin_cache"), (rms_norm_weight, "rms_norm_weight"),
                                           (k_cache, "k_cache"), (kv_slot_mapping, "kv_slot_mapping"))]
    call("indexer_k_norm_rope_store", lib.dsv4kv_indexer_k_norm_rope_store, t, t[0].ref(), t[1].ref(), t[2].ref(),
         t[3].ref(), float(rms_norm_eps), t[4].ref(), ctypes.byref(desc), t[5].ref(), i32(compress_ratio, "compress_ratio"))
