"""dsv4kv: the DeepSeek-V4 / V4.1 sparse-attention key cache, byte-compatible
with the reference kernels, on the CPU and on CUDA GPUs.

A drop-in for the reference's modules: ``dsv4kv.cache_utils`` and
``dsv4kv.indexer_k_store`` hold the same functions with the same names,
parameters, defaults and return values, and this module re-exports both.
Tensors (torch CPU / CUDA, numpy) cross through DLPack without copies; CUDA
calls run on torch's current stream and can be captured in a CUDA graph.
``last_report()`` tells what the last call skipped; ``configure()`` sets
raise-on-skip, the non-finite count and CPU threads.  ``DSV4KV_LIBRARY``
points the package at another libdsv4kv.so.
"""

from ._lib import (DSV4KVError, DSV4KVRuntimeError, DSV4KVTypeError, DSV4KVValueError, SkippedEntriesError,
                   library_path, version)
from ._lib import lib as _clib
from ._tensors import configure, last_report
from .cache_utils import (INDEXER_FP8_BYTES_PER_TOKEN, INDEXER_MXFP4_BYTES_PER_TOKEN, MXFP8_BYTES_PER_TOKEN,
                          NVFP4_BYTES_PER_TOKEN, SPARSE_PREFILL_TOPK_ALIGNMENT, V4_BYTES_PER_TOKEN,
                          build_flashinfer_mixed_sparse_indices, combine_topk_swa_indices,
                          compute_global_topk_indices_and_lens, dequantize_and_gather_k_cache, gather_num_workers,
                          quantize_and_insert_k_cache)
from .indexer_k_store import indexer_k_norm_rope_store
from . import cache_utils, indexer_k_store  # noqa: F401

__version__ = version


def cuda_available():
    """Whether this libdsv4kv runs CUDA tensors here; see cuda_unavailable_reason()."""
    return bool(_clib.dsv4kv_backend_available(2))


def cuda_unavailable_reason():
    """Why CUDA tensors cannot run here, or None."""
    r = _clib.dsv4kv_backend_unavailable_reason(2)
    return r.decode() if r else None


__all__ = [
    "quantize_and_insert_k_cache", "dequantize_and_gather_k_cache", "gather_num_workers",
    "compute_global_topk_indices_and_lens", "combine_topk_swa_indices", "build_flashinfer_mixed_sparse_indices",
    "indexer_k_norm_rope_store", "V4_BYTES_PER_TOKEN", "MXFP8_BYTES_PER_TOKEN", "NVFP4_BYTES_PER_TOKEN",
    "INDEXER_FP8_BYTES_PER_TOKEN", "INDEXER_MXFP4_BYTES_PER_TOKEN", "SPARSE_PREFILL_TOPK_ALIGNMENT",
    "last_report", "configure", "cuda_available", "cuda_unavailable_reason", "DSV4KVError", "DSV4KVValueError",
    "DSV4KVTypeError", "DSV4KVRuntimeError", "SkippedEntriesError", "cache_utils", "indexer_k_store",
    "library_path", "version",
]
