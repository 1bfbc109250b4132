"""The golden files (tests/golden, MANIFEST.md) run through the Python API:
each file's inputs as numpy arrays (or moved to a torch device), the op
called as the reference is called, every expected.* tensor compared byte for
byte.  Shared by test_golden.py (numpy, CPU) and test_torch_cuda.py."""

import glob
import os
import pathlib

import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy for safetensors)
import numpy as np
from safetensors import safe_open

import dsv4kv

ROOT = pathlib.Path(__file__).resolve().parents[2]


def golden_dir():
    for d in (os.environ.get("DSV4KV_GOLDEN"), ROOT / "tests" / "golden", ROOT.parent / "shared" / "golden"):
        if d and pathlib.Path(d).is_dir() and glob.glob(str(pathlib.Path(d) / "*.safetensors")):
            return pathlib.Path(d)
    return None


def golden_files():
    d = golden_dir()
    return sorted(glob.glob(str(d / "*.safetensors"))) if d else []


def load(path):
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata() or {}
        tensors = {k: np.array(f.get_tensor(k)) for k in f.keys()}
    return meta, tensors


def _bool(meta, key, default=False):
    v = meta.get(key)
    return default if v is None else v == "1"


def _int_or_none(meta, key):
    v = meta.get(key)
    return None if v in (None, "none") else int(v)


class Case:
    """One file's tensors on the chosen side: numpy arrays, or torch tensors
    on `device` (bf16 as torch.bfloat16, via its bits)."""

    def __init__(self, path, device=None):
        self.meta, self.t = load(path)
        self.device = device
        self.sparse = {}

    def inp(self, name, array=None):
        a = self.t.get(name) if array is None else array
        if a is None:
            return None
        if self.device is None:
            return a.copy()
        import torch

        if a.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16).to(self.device)
        return torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

    @staticmethod
    def host(x):
        if isinstance(x, np.ndarray):
            return x
        import torch

        if x.dtype == torch.bfloat16:
            return x.view(torch.int16).cpu().numpy().view(np.uint16).view(ml_dtypes.bfloat16)
        return x.cpu().numpy()

    def cache(self, name):
        """The cache input: dense, or a sparse one rebuilt from its listed blocks."""
        if self.meta.get("k_cache_layout") != "sparse":
            return self.inp(name)
        nb, stride = int(self.meta["num_blocks"]), int(self.meta["block_stride"])
        ids = self.t[name + ".block_ids"]
        if self.device is None:
            full = np.zeros((nb, stride), dtype=np.uint8)  # calloc: only touched pages become resident
            full[ids] = self.t[name + ".blocks"]
        else:
            import torch

            full = torch.zeros((nb, stride), dtype=torch.uint8, device=self.device)
            full[torch.from_numpy(ids).to(self.device)] = torch.from_numpy(self.t[name + ".blocks"]).to(self.device)
        self.sparse[name] = ids
        return full


def _same(got, want, label):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (label, got.shape, want.shape)
    g, w = got.view(np.uint8).ravel(), want.view(np.uint8).ravel()
    if not np.array_equal(g, w):
        i = int(np.flatnonzero(g != w)[0])
        raise AssertionError("%s: first differing byte %d of %d (got 0x%02x, expected 0x%02x)" % (label, i, g.size,
                                                                                                 g[i], w[i]))


def check_cache(case, name, got):
    got = Case.host(got)
    if name in case.sparse:
        ids = case.sparse[name]
        want = case.t.get("expected.%s.blocks" % name, case.t[name + ".blocks"])
        _same(got[ids], want, name + " (listed blocks)")
        rest = np.count_nonzero(got) - np.count_nonzero(got[ids])
        assert rest == 0, "%s: %d bytes written outside the listed blocks" % (name, rest)
    elif "expected." + name in case.t:
        _same(got, case.t["expected." + name], name)
    else:
        _same(got, case.t[name], name + " (unchanged)")


def run(path, device=None):
    """Runs one golden file; raises AssertionError on a difference."""
    c = Case(path, device)
    m, op = c.meta, c.meta["op"]
    if op == "quantize_and_insert_k_cache":
        cache = c.cache("k_cache")
        width = int(m.get("record_bytes", 0)) or {"v4": 584, "mxfp8": 528, "nvfp4": 288}[m["record"]]
        dsv4kv.quantize_and_insert_k_cache(c.inp("k"), cache, c.inp("slot_mapping"), block_size=int(m["block_size"]),
                                           use_fnuz=_bool(m, "use_fnuz"), bytes_per_token=width)
        check_cache(c, "k_cache", cache)
    elif op == "dequantize_and_gather_k_cache":
        cache, out = c.cache("k_cache"), c.inp("out")
        width = int(m.get("record_bytes", 0)) or {"v4": 584, "mxfp8": 528, "nvfp4": 288}[m["record"]]
        dsv4kv.dequantize_and_gather_k_cache(out, cache, c.inp("seq_lens"), c.inp("gather_lens"), c.inp("block_table"),
                                             int(m["block_size"]), int(m.get("offset", 0)),
                                             use_fnuz=_bool(m, "use_fnuz"),
                                             max_gather_len=_int_or_none(m, "max_gather_len"), bytes_per_token=width)
        _same(Case.host(out), c.t["expected.out"], "out")
        check_cache(c, "k_cache", cache)
    elif op == "compute_global_topk_indices_and_lens":
        g, lens = dsv4kv.compute_global_topk_indices_and_lens(c.inp("topk_indices"), c.inp("token_to_req_indices"),
                                                              c.inp("block_table"), int(m["block_size"]),
                                                              c.inp("is_valid_token"))
        _same(Case.host(g), c.t["expected.global_topk_indices"], "global_topk_indices")
        _same(Case.host(lens), c.t["expected.topk_lens"], "topk_lens")
    elif op == "combine_topk_swa_indices":
        out = (c.inp("combined_indices"), c.inp("combined_lens"))
        comb, lens = dsv4kv.combine_topk_swa_indices(c.inp("topk_indices"), c.inp("query_start_loc"),
                                                     c.inp("seq_lens"), c.inp("gather_lens"), int(m["window_size"]),
                                                     int(m["compress_ratio"]), int(m["topk"]), int(m["M"]),
                                                     int(m["N"]), out=out)
        _same(Case.host(comb), c.t["expected.combined_indices"], "combined_indices")
        _same(Case.host(lens), c.t["expected.combined_lens"], "combined_lens")
        if m.get("out_prefill", "").startswith("-1"):  # the reference's out=None path
            comb2, _ = dsv4kv.combine_topk_swa_indices(c.inp("topk_indices"), c.inp("query_start_loc"),
                                                       c.inp("seq_lens"), c.inp("gather_lens"),
                                                       int(m["window_size"]), int(m["compress_ratio"]),
                                                       int(m["topk"]), int(m["M"]), int(m["N"]))
            _same(Case.host(comb2), c.t["expected.combined_indices"], "combined_indices (out=None)")
    elif op == "build_flashinfer_mixed_sparse_indices":
        sparse, lens = dsv4kv.build_flashinfer_mixed_sparse_indices(
            c.inp("decode_swa_indices"), c.inp("decode_compressed_indices"), c.inp("decode_compressed_topk_lens"),
            c.inp("prefill_topk_indices"), c.inp("query_start_loc"), c.inp("seq_lens"), c.inp("token_to_req_indices"),
            c.inp("swa_block_table"), int(m["swa_block_size"]), c.inp("compressed_block_table"),
            int(m["compressed_block_size"]), int(m["window_size"]), int(m["compress_ratio"]), int(m["topk"]),
            decode_compressed_indices_are_local=_bool(m, "decode_compressed_indices_are_local"),
            decode_is_valid_token=c.inp("decode_is_valid_token"), swa_block_span=_int_or_none(m, "swa_block_span"),
            compressed_block_span=_int_or_none(m, "compressed_block_span"), replay_start=c.inp("replay_start"))
        want = c.t["expected.sparse_indices"]
        _same(Case.host(sparse), want, "sparse_indices")
        _same(Case.host(lens), c.t["expected.sparse_topk_lens"], "sparse_topk_lens")
    elif op == "indexer_k_norm_rope_store":
        cache = c.cache("k_cache")
        dsv4kv.indexer_k_norm_rope_store(c.inp("k_pre"), c.inp("positions"), c.inp("cos_sin_cache"),
                                         c.inp("rms_norm_weight"), float(m["rms_norm_eps"]), cache,
                                         c.inp("kv_slot_mapping"), int(m["compress_ratio"]),
                                         _bool(m, "use_fp4_cache"), mx_scale=_bool(m, "mx_scale"),
                                         shuffle=_bool(m, "shuffle"), block_size=int(m["block_size"]))
        check_cache(c, "k_cache", cache)
    else:
        raise AssertionError("unknown op %r" % op)
