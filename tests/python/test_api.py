"""The Python API on the CPU: zero copies, argument errors, skipped entries,
bf16 from numpy, and a golden check that can fail."""
import glob
import os

import ml_dtypes
import numpy as np
import pytest

import dsv4kv
import golden

rng = np.random.default_rng(7)


def keys(n):
    return rng.standard_normal((n, 512)).astype(ml_dtypes.bfloat16)


def v4_cache(pages=4, bs=64):
    return np.full((pages, bs, dsv4kv.V4_BYTES_PER_TOKEN), 0xCD, dtype=np.uint8)


def test_zero_copy_insert_and_gather():
    cache = v4_cache()
    before = cache.__array_interface__["data"][0]
    k = keys(8)
    slots = np.arange(8, dtype=np.int64) + 64
    dsv4kv.quantize_and_insert_k_cache(k, cache, slots)
    assert cache.__array_interface__["data"][0] == before
    assert (cache[1, :8] != 0xCD).any() and (cache[0] == 0xCD).all()  # written in place, only the named slots
    out = np.zeros((1, 8, 512), dtype=ml_dtypes.bfloat16)
    dsv4kv.dequantize_and_gather_k_cache(out, cache, np.array([8], np.int32), None,
                                         np.array([[1, 0]], np.int32), 64, 0)
    err = np.abs(out[0].astype(np.float32) - k.astype(np.float32))
    assert (err <= np.abs(k.astype(np.float32)) / 16 + 1e-2).all()  # dequantized in place, close to the keys


def test_strided_views_are_not_copied():
    cache = v4_cache()
    big = keys(16)
    k = big[::2]  # a strided view: the library reads it through its strides
    dsv4kv.quantize_and_insert_k_cache(k, cache, np.arange(8, dtype=np.int64))
    ref = v4_cache()
    dsv4kv.quantize_and_insert_k_cache(np.ascontiguousarray(k), ref, np.arange(8, dtype=np.int64))
    assert np.array_equal(cache, ref)


def test_uint16_bits_equal_ml_dtypes_bf16():
    k = keys(4)
    a, b = v4_cache(), v4_cache()
    dsv4kv.quantize_and_insert_k_cache(k, a, np.arange(4, dtype=np.int64))
    dsv4kv.quantize_and_insert_k_cache(k.view(np.uint16), b, np.arange(4, dtype=np.int64))
    assert np.array_equal(a, b)


def test_records_from_the_cache_width():
    for width in (dsv4kv.V4_BYTES_PER_TOKEN, dsv4kv.MXFP8_BYTES_PER_TOKEN, dsv4kv.NVFP4_BYTES_PER_TOKEN):
        cache = np.zeros((2, 64, width), np.uint8)
        dsv4kv.quantize_and_insert_k_cache(keys(3), cache, np.arange(3, dtype=np.int64))
        assert cache[0, :3].any()


def test_skipped_entries_are_reported_not_raised():
    cache = v4_cache(pages=1)
    slots = np.array([0, -1, 999, 3], dtype=np.int64)  # -1 silent, 999 past the cache
    dsv4kv.quantize_and_insert_k_cache(keys(4), cache, slots)
    r = dsv4kv.last_report()
    assert r["skipped"] == 1 and r["status"] == 11 and "999" in r["message"]
    dsv4kv.configure(raise_on_skip=True)
    try:
        with pytest.raises(dsv4kv.SkippedEntriesError, match="999"):
            dsv4kv.quantize_and_insert_k_cache(keys(4), cache, slots)
    finally:
        dsv4kv.configure(raise_on_skip=False)
    dsv4kv.quantize_and_insert_k_cache(keys(1), cache, np.array([2], np.int64))
    assert dsv4kv.last_report()["skipped"] == 0


def test_argument_errors():
    cache = v4_cache()
    with pytest.raises(TypeError, match="slot_mapping"):
        dsv4kv.quantize_and_insert_k_cache(keys(2), cache, np.arange(2, dtype=np.int32))
    with pytest.raises(ValueError, match="k"):
        dsv4kv.quantize_and_insert_k_cache(keys(2)[:, :256], cache, np.arange(2, dtype=np.int64))
    with pytest.raises(ValueError, match="record width"):
        dsv4kv.quantize_and_insert_k_cache(keys(2), np.zeros((2, 64, 100), np.uint8), np.arange(2, dtype=np.int64))
    with pytest.raises(TypeError, match="k_cache has dtype float32 \\(4 bytes an element\\)"):  # a view of the cache
        dsv4kv.quantize_and_insert_k_cache(keys(2), cache.view(np.float32), np.arange(2, dtype=np.int64))
    with pytest.raises(TypeError, match="k_cache has dtype float32"):
        dsv4kv.dequantize_and_gather_k_cache(np.zeros((1, 4, 512), ml_dtypes.bfloat16), cache.view(np.float32),
                                             np.full(1, 4, np.int32), None, np.zeros((1, 4), np.int32), 64, 0)
    with pytest.raises(ValueError, match="UE8M0"):
        dsv4kv.quantize_and_insert_k_cache(keys(2), cache, np.arange(2, dtype=np.int64), is_ue8m0=False)
    with pytest.raises(TypeError):
        dsv4kv.quantize_and_insert_k_cache([[0.0] * 512], cache, np.arange(1, dtype=np.int64))
    with pytest.raises(ValueError, match="block_size"):
        dsv4kv.indexer_k_norm_rope_store(np.zeros((1, 128), ml_dtypes.bfloat16), np.zeros(1, np.int64),
                                         np.zeros((4, 64), np.float32), np.ones(128, np.float32), 1e-6,
                                         np.zeros((1, 64 * 132), np.uint8), np.zeros(1, np.int64), 1, False)
    with pytest.raises(ValueError, match="eps"):
        dsv4kv.indexer_k_norm_rope_store(np.zeros((1, 128), ml_dtypes.bfloat16), np.zeros(1, np.int64),
                                         np.zeros((4, 64), np.float32), np.ones(128, np.float32), -1.0,
                                         np.zeros((1, 64, 132), np.uint8), np.zeros(1, np.int64), 1, False)


def test_integers_are_range_checked_not_wrapped():
    cache = v4_cache()
    with pytest.raises(ValueError, match="block_size"):  # ctypes would have passed 64
        dsv4kv.quantize_and_insert_k_cache(keys(1), np.zeros((4, 64 * 584), np.uint8), np.zeros(1, np.int64),
                                           block_size=2**32 + 64)
    with pytest.raises(ValueError, match="offset"):
        dsv4kv.dequantize_and_gather_k_cache(np.zeros((1, 4, 512), ml_dtypes.bfloat16), cache,
                                             np.ones(1, np.int32), None, np.zeros((1, 1), np.int32), 64, 2**64)
    with pytest.raises(TypeError, match="window_size"):
        dsv4kv.combine_topk_swa_indices(np.zeros((1, 8), np.int32), np.array([0, 1], np.int32), np.ones(1, np.int32),
                                        np.ones(1, np.int32), "128", 4, 8, 64, 8)
    with pytest.raises(ValueError, match="num_threads"):
        dsv4kv.configure(num_threads=-1)
    # the binding's own checks name the op as the library's errors do; other dtypes by their names
    with pytest.raises(ValueError, match="^quantize_and_insert_k_cache: k_cache: record width 500 is none"):
        dsv4kv.quantize_and_insert_k_cache(keys(1), np.zeros((16, 64, 500), np.uint8), np.zeros(1, np.int64))
    with pytest.raises(TypeError, match="^quantize_and_insert_k_cache: k has dtype float16; expected bfloat16"):
        dsv4kv.quantize_and_insert_k_cache(np.zeros((1, 512), np.float16), np.zeros((16, 64, 584), np.uint8),
                                           np.zeros(1, np.int64))
    for b in (True, np.bool_(True)):  # a boolean is an int to Python; as a size it is a mistake
        with pytest.raises(TypeError, match="block_size = True is a boolean"):
            dsv4kv.quantize_and_insert_k_cache(keys(1), np.zeros((4, 64 * 584), np.uint8), np.zeros(1, np.int64),
                                               block_size=b)


def test_cache_rank_and_float_range_named():
    """a k_cache of the wrong rank is a rank error, whatever else is missing;
    a float parameter past float32's range is refused, not passed as inf."""
    for bad in (np.zeros((), np.uint8), np.zeros(64, np.uint8), np.zeros((1, 1, 64, 584), np.uint8)):
        with pytest.raises(ValueError, match="k_cache must be 2-D .* or 3-D"):
            dsv4kv.dequantize_and_gather_k_cache(np.zeros((1, 4, 512), ml_dtypes.bfloat16), bad, np.ones(1, np.int32),
                                                 None, np.zeros((1, 1), np.int32), 64, 0)
        with pytest.raises(ValueError, match="k_cache must be 2-D .* or 3-D"):
            dsv4kv.indexer_k_norm_rope_store(np.zeros((1, 128), ml_dtypes.bfloat16), np.zeros(1, np.int64),
                                             np.zeros((4, 64), np.float32), np.ones(128, np.float32), 1e-6, bad,
                                             np.zeros(1, np.int64), 1, False)
    with pytest.raises(ValueError, match="rms_norm_eps = 1" + "0" * 400 + " does not fit in float32"):
        dsv4kv.indexer_k_norm_rope_store(np.zeros((1, 128), ml_dtypes.bfloat16), np.zeros(1, np.int64),
                                         np.zeros((4, 64), np.float32), np.ones(128, np.float32), 10 ** 400,
                                         np.zeros((1, 64, 132), np.uint8), np.zeros(1, np.int64), 1, False)
    with pytest.raises(ValueError, match="rms_norm_eps = 1e\\+39 does not fit in float32"):
        dsv4kv.indexer_k_norm_rope_store(np.zeros((1, 128), ml_dtypes.bfloat16), np.zeros(1, np.int64),
                                         np.zeros((4, 64), np.float32), np.ones(128, np.float32), 1e39,
                                         np.zeros((1, 64, 132), np.uint8), np.zeros(1, np.int64), 1, False)


def test_inputs_inside_the_cache_refused():
    """k, the slots or an indexer input viewed out of the cache's own bytes:
    refused (ERR_STRIDE, a ValueError naming both) and nothing written."""
    cache = v4_cache()
    before = cache.copy()
    k = cache.reshape(-1)[:2 * 1024].view(ml_dtypes.bfloat16).reshape(2, 512)
    with pytest.raises(ValueError, match="k_cache overlaps k"):
        dsv4kv.quantize_and_insert_k_cache(k, cache, np.arange(2, dtype=np.int64))
    slots = cache[3].reshape(-1)[:16].view(np.int64)
    with pytest.raises(ValueError, match="k_cache overlaps slot_mapping"):
        dsv4kv.quantize_and_insert_k_cache(keys(2), cache, slots)
    assert np.array_equal(cache, before)
    icache = np.zeros((2, 64, 132), np.uint8)
    cos_sin = icache[1].reshape(-1)[:4 * 64 * 4].view(np.float32).reshape(4, 64)
    with pytest.raises(ValueError, match="k_cache overlaps cos_sin_cache"):
        dsv4kv.indexer_k_norm_rope_store(np.zeros((1, 128), ml_dtypes.bfloat16), np.zeros(1, np.int64), cos_sin,
                                         np.ones(128, np.float32), 1e-6, icache, np.zeros(1, np.int64), 1, False)


def test_read_only_inputs_none_and_failed_calls():
    cache = v4_cache()
    k, slots = keys(2), np.arange(2, dtype=np.int64)
    k.setflags(write=False)
    slots.setflags(write=False)
    dsv4kv.quantize_and_insert_k_cache(k, cache, slots)  # read-only inputs are fine (DLPack 1.0 export)
    assert dsv4kv.last_report()["skipped"] == 0
    ro = v4_cache()
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="k_cache is read-only"):
        dsv4kv.quantize_and_insert_k_cache(k, ro, slots)
    assert dsv4kv.last_report() is None  # the failed call left no report

    class Producer:  # a DLPack producer without numpy's .flags: the capsule's read-only flag decides
        def __init__(self, a):
            self.a, self.dtype, self.shape = a, a.dtype, a.shape

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    before = ro.copy()
    with pytest.raises(ValueError, match="k_cache is read-only"):
        dsv4kv.quantize_and_insert_k_cache(k, Producer(ro), slots)
    assert np.array_equal(ro, before)
    dsv4kv.quantize_and_insert_k_cache(k, Producer(cache), slots)  # a writable one through the same producer
    with pytest.raises(ValueError, match="slot_mapping is None"):
        dsv4kv.quantize_and_insert_k_cache(k, cache, None)
    with pytest.raises(ValueError, match="topk_indices must be a 2-D"):
        dsv4kv.compute_global_topk_indices_and_lens(np.zeros(4, np.int32), np.zeros(4, np.int32),
                                                    np.zeros((1, 1), np.int32), 64, np.ones(4, bool))
    with pytest.raises(ValueError, match="bytes_per_token"):
        dsv4kv.dequantize_and_gather_k_cache(np.zeros((1, 4, 512), ml_dtypes.bfloat16), np.zeros((2, 64 * 584), np.uint8),
                                             np.ones(1, np.int32), None, np.zeros((1, 1), np.int32), 32, 0)
    # a non-positive block size is named as such, not as a missing bytes_per_token
    for bs in (0, -64):
        with pytest.raises(ValueError, match="block_size = %d; must be > 0" % bs):
            dsv4kv.dequantize_and_gather_k_cache(np.zeros((1, 4, 512), ml_dtypes.bfloat16),
                                                 np.zeros((2, 64 * 584), np.uint8), np.ones(1, np.int32), None,
                                                 np.zeros((1, 1), np.int32), bs, 0)


def test_gather_refuses_out_over_its_lengths():
    """seq_lens living in rows the gather writes: refused (ERR_STRIDE, a
    ValueError naming both), since the bytes would depend on the order of the
    writes; out and the lengths in separate memory gather as usual."""
    cache = v4_cache(pages=1)
    dsv4kv.quantize_and_insert_k_cache((-np.ones((8, 512))).astype(ml_dtypes.bfloat16), cache,
                                       np.arange(8, dtype=np.int64))
    out = np.zeros((2, 4, 512), ml_dtypes.bfloat16)
    seq_lens = out.view(np.int32)[0, 1:3, 0]  # in request 0's rows 1 and 2
    seq_lens[:] = 4
    gl, bt = np.array([2, 2], np.int32), np.zeros((2, 1), np.int32)
    before = out.view(np.uint16).copy()
    with pytest.raises(ValueError, match="out overlaps seq_lens"):
        dsv4kv.dequantize_and_gather_k_cache(out, cache, seq_lens, gl, bt, 64, 1)
    assert np.array_equal(out.view(np.uint16), before)  # nothing written
    ref = np.zeros((2, 4, 512), ml_dtypes.bfloat16)
    dsv4kv.dequantize_and_gather_k_cache(ref, cache, np.array([4, 4], np.int32), gl, bt, 64, 1)
    assert dsv4kv.last_report()["skipped"] == 0


def test_dtypes_dlpack_cannot_carry_and_huge_outputs():
    cache = v4_cache()
    with pytest.raises(TypeError, match="k .*DLPack"):
        dsv4kv.quantize_and_insert_k_cache(np.zeros((1, 512), object), cache, np.zeros(1, np.int64))
    with pytest.raises(TypeError, match="positions"):  # uint16 is bf16 only where bf16 is expected
        dsv4kv.indexer_k_norm_rope_store(np.zeros((1, 128), ml_dtypes.bfloat16), np.zeros(1, np.uint16),
                                         np.zeros((4, 64), np.float32), np.ones(128, np.float32), 1e-6,
                                         np.zeros((1, 64, 132), np.uint8), np.zeros(1, np.int64), 1, False)
    with pytest.raises(TypeError, match="rms_norm_eps"):
        dsv4kv.indexer_k_norm_rope_store(np.zeros((1, 128), ml_dtypes.bfloat16), np.zeros(1, np.int64),
                                         np.zeros((4, 64), np.float32), np.ones(128, np.float32), None,
                                         np.zeros((1, 64, 132), np.uint8), np.zeros(1, np.int64), 1, False)
    with pytest.raises(ValueError, match="entries"):  # not 32 GiB of -1 first
        dsv4kv.combine_topk_swa_indices(np.zeros((4, 8), np.int32), np.array([0, 4], np.int32), np.ones(1, np.int32),
                                        np.ones(1, np.int32), 2**31 - 1, 4, 8, 64, 8)
    with pytest.raises(ValueError, match="window_size"):
        dsv4kv.combine_topk_swa_indices(np.zeros((4, 8), np.int32), np.array([0, 4], np.int32), np.ones(1, np.int32),
                                        np.ones(1, np.int32), -200, 4, 8, 64, 8)
    with pytest.raises(ValueError, match="shape"):  # a 3-D cache whose block dim contradicts block_size
        dsv4kv.quantize_and_insert_k_cache(keys(1), cache, np.zeros(1, np.int64), block_size=32)
    before = cache.copy()  # an empty batch is fine, whatever strides numpy exports for it, and writes nothing
    dsv4kv.quantize_and_insert_k_cache(np.zeros((0, 512), ml_dtypes.bfloat16), cache, np.zeros(0, np.int64))
    assert dsv4kv.last_report()["skipped"] == 0 and np.array_equal(cache, before)


def test_outputs_allocated_like_the_inputs():
    topk = np.array([[0, 5, -1, 70]], np.int32)
    g, lens = dsv4kv.compute_global_topk_indices_and_lens(topk, np.zeros(1, np.int32), np.array([[3, 4]], np.int32),
                                                          64, np.ones(1, bool))
    assert isinstance(g, np.ndarray) and g.dtype == np.int32 and g.tolist() == [[192, 197, -1, 262]]
    assert lens.tolist() == [3]
    comb, clens = dsv4kv.combine_topk_swa_indices(np.zeros((4, 8), np.int32), np.array([0, 4], np.int32),
                                                  np.array([4], np.int32), np.array([4], np.int32), 128, 4, 8, 64, 8)
    assert comb.shape == (4, 256) and clens.tolist() == [1, 2, 3, 5]


def test_version_and_library():
    assert dsv4kv.version == dsv4kv.__version__ and os.path.exists(dsv4kv.library_path)
    assert dsv4kv.gather_num_workers(None) == 128
    assert dsv4kv.cuda_available() or dsv4kv.cuda_unavailable_reason()
    if os.environ.get("DSV4KV_EXPECT_INSTALLED"):  # the test command's run: the pip-installed package
        import importlib.metadata

        assert "site-packages" in dsv4kv.__file__ and "site-packages" in dsv4kv.library_path
        assert importlib.metadata.version("dsv4kv") == dsv4kv.version  # pyproject.toml = project() in CMake


@pytest.mark.skipif(not golden.golden_files(), reason="no golden files")
def test_golden_check_can_fail(monkeypatch):
    path = [p for p in golden.golden_files() if "insert_v4" in p][0]
    real = golden.load

    def corrupted(p):
        meta, t = real(p)
        t["expected.k_cache"] = t["expected.k_cache"].copy()
        t["expected.k_cache"].ravel()[100] ^= 1
        return meta, t

    monkeypatch.setattr(golden, "load", corrupted)
    with pytest.raises(AssertionError, match="k_cache"):
        golden.run(path)


def test_distinct_slots_promise_is_accepted_and_changes_nothing_on_cpu():
    k, slots = keys(8), np.arange(8, dtype=np.int64)[::-1] + 64
    a, b = v4_cache(), v4_cache()
    dsv4kv.quantize_and_insert_k_cache(k, a, slots)
    dsv4kv.quantize_and_insert_k_cache(k, b, slots, distinct_slots=True)
    assert (a == b).all() and (a[1, :8] != 0xCD).any()
    with pytest.raises(dsv4kv.DSV4KVTypeError):
        dsv4kv.quantize_and_insert_k_cache(k, a, slots, distinct_slots="yes")


def test_distinct_slots_promise_on_the_indexer_store_cpu():
    t = 40
    kpre = rng.standard_normal((t, 128)).astype(ml_dtypes.bfloat16)
    pos, slots = np.arange(t, dtype=np.int64), np.arange(t, dtype=np.int64)[::-1].copy()
    slots[3] = -1
    cos_sin = rng.uniform(-1, 1, (t + 4, 64)).astype(np.float32)
    weight = rng.uniform(0.5, 1.5, 128).astype(np.float32)
    for fp4 in (False, True):
        a, b = (np.full((2, 64, 68 if fp4 else 132), 0x5A, dtype=np.uint8) for _ in range(2))
        dsv4kv.indexer_k_norm_rope_store(kpre, pos, cos_sin, weight, 1e-6, a, slots, 4, fp4)
        dsv4kv.indexer_k_norm_rope_store(kpre, pos, cos_sin, weight, 1e-6, b, slots, 4, fp4,
                                         distinct_slots=np.bool_(True))
        assert (a == b).all() and (a != 0x5A).any()
