"""libdsv4kv through ctypes: finding the library, the C structs, statuses.

The library is looked up in this order: the path in ``DSV4KV_LIBRARY``; the
copy installed inside this package (``pip install .``); a ``build/`` tree of
the checkout this file sits in (development).
"""

import ctypes
import os
import pathlib
import threading

# ---- the C structs (include/dsv4kv.h; sizes checked against the library) ---


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class CacheDesc(ctypes.Structure):
    _fields_ = [
        ("record", ctypes.c_int32),
        ("fp8", ctypes.c_int32),
        ("block_size", ctypes.c_int32),
        ("page_stride", ctypes.c_int64),
        ("flags", ctypes.c_uint32),
    ]


class Report(ctypes.Structure):
    _fields_ = [
        ("skipped", ctypes.c_int64),
        ("nonfinite", ctypes.c_int64),
        ("first_key", ctypes.c_int64),
        ("reason", ctypes.c_int32),
        ("op", ctypes.c_int32),
        ("values", ctypes.c_int64 * 6),
    ]


class Options(ctypes.Structure):
    _fields_ = [
        ("skipped", ctypes.POINTER(ctypes.c_int64)),
        ("nonfinite", ctypes.POINTER(ctypes.c_int64)),
        ("check_nonfinite", ctypes.c_int),
        ("num_threads", ctypes.c_int),
        ("stream", ctypes.c_void_p),
        ("report", ctypes.c_void_p),
        ("distinct_slots", ctypes.c_int),
    ]


_P = ctypes.POINTER(DLTensor)


class FlashinferArgs(ctypes.Structure):
    _fields_ = [
        ("decode_swa_indices", _P),
        ("decode_compressed_indices", _P),
        ("decode_compressed_topk_lens", _P),
        ("decode_is_valid_token", _P),
        ("decode_compressed_indices_are_local", ctypes.c_int),
        ("prefill_topk_indices", _P),
        ("query_start_loc", _P),
        ("seq_lens", _P),
        ("replay_start", _P),
        ("token_to_req_indices", _P),
        ("swa_block_table", _P),
        ("compressed_block_table", _P),
        ("swa_block_size", ctypes.c_int32),
        ("swa_block_span", ctypes.c_int32),
        ("compressed_block_size", ctypes.c_int32),
        ("compressed_block_span", ctypes.c_int32),
        ("window_size", ctypes.c_int32),
        ("compress_ratio", ctypes.c_int32),
        ("topk", ctypes.c_int32),
    ]


# ---- constants of the header --------------------------------------------------

OK, WARN_SKIPPED, WARN_NONFINITE = 0, 11, 12
ERR_DTYPE = 2
ERR_BACKEND_NOT_BUILT, ERR_ALLOC, ERR_BACKEND = 8, 9, 13
RECORD_V4, RECORD_MXFP8, RECORD_NVFP4, RECORD_INDEXER_FP8, RECORD_INDEXER_MXFP4 = range(5)
FP8_OCP, FP8_FNUZ = 0, 1
CACHE_MX_SCALE, CACHE_TILED = 0x1, 0x2
kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool = 0, 1, 2, 4, 6

# ---- loading ---------------------------------------------------------------------


def _candidates():
    env = os.environ.get("DSV4KV_LIBRARY")
    if env:
        yield pathlib.Path(env).resolve()  # a bare name would make the loader search its own paths
        return
    here = pathlib.Path(__file__).resolve().parent
    for name in ("libdsv4kv.so", "libdsv4kv.so.0.2"):  # the soname carries the minor version before 1.0
        yield here / name
    yield here.parent.parent / "build" / "libdsv4kv.so"


def _load():
    tried = []
    env = os.environ.get("DSV4KV_LIBRARY")
    for path in _candidates():
        if path.is_file():
            try:
                found = ctypes.CDLL(str(path))
                found.dsv4kv_version  # noqa: B018  (a symbol only libdsv4kv has)
            except (OSError, AttributeError) as e:
                raise ImportError("dsv4kv: %s%s is not a loadable libdsv4kv: %s" % (
                    path, " (DSV4KV_LIBRARY)" if env else "", e)) from None
            return found, str(path)
        tried.append(str(path))
    if env:
        raise ImportError("dsv4kv: DSV4KV_LIBRARY=%s is not a file (while it is set, nothing else is tried)" % env)
    raise ImportError(
        "dsv4kv: libdsv4kv.so not found (tried %s); build it (scripts/build.sh), install the package "
        "(pip install .), or set DSV4KV_LIBRARY to its path" % ", ".join(tried)
    )


lib, library_path = _load()

_sig = {
    "dsv4kv_version": (ctypes.c_char_p, []),
    "dsv4kv_last_error": (ctypes.c_char_p, []),
    "dsv4kv_status_string": (ctypes.c_char_p, [ctypes.c_int]),
    "dsv4kv_backend_available": (ctypes.c_int, [ctypes.c_int]),
    "dsv4kv_backend_unavailable_reason": (ctypes.c_char_p, [ctypes.c_int]),
    "dsv4kv_struct_size": (ctypes.c_size_t, [ctypes.c_char_p]),
    "dsv4kv_report_status": (ctypes.c_int, [ctypes.POINTER(Report)]),
    "dsv4kv_report_message": (ctypes.c_size_t, [ctypes.POINTER(Report), ctypes.c_char_p, ctypes.c_size_t]),
    "dsv4kv_record_from_width": (ctypes.c_int, [ctypes.c_int64, ctypes.POINTER(ctypes.c_int32)]),
    "dsv4kv_gather_num_workers": (ctypes.c_int32, [ctypes.c_int64]),
    "dsv4kv_quantize_and_insert_k_cache": (ctypes.c_int, [_P, _P, ctypes.POINTER(CacheDesc), _P, ctypes.POINTER(Options)]),
    "dsv4kv_dequantize_and_gather_k_cache": (
        ctypes.c_int,
        [_P, _P, ctypes.POINTER(CacheDesc), _P, _P, _P, ctypes.c_int64, ctypes.POINTER(Options)],
    ),
    "dsv4kv_compute_global_topk_indices_and_lens": (
        ctypes.c_int,
        [_P, _P, _P, ctypes.c_int32, _P, _P, _P, ctypes.POINTER(Options)],
    ),
    "dsv4kv_combine_topk_swa_indices": (
        ctypes.c_int,
        [_P, _P, _P, _P] + [ctypes.c_int32] * 5 + [_P, _P, ctypes.POINTER(Options)],
    ),
    "dsv4kv_build_flashinfer_mixed_sparse_indices": (
        ctypes.c_int,
        [ctypes.POINTER(FlashinferArgs), _P, _P, ctypes.POINTER(Options)],
    ),
    "dsv4kv_indexer_k_norm_rope_store": (
        ctypes.c_int,
        [_P, _P, _P, _P, ctypes.c_float, _P, ctypes.POINTER(CacheDesc), _P, ctypes.c_int32, ctypes.POINTER(Options)],
    ),
}
for _name, (_res, _args) in _sig.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args

for _struct, _cname in (
    (Options, b"dsv4kv_options"),
    (CacheDesc, b"dsv4kv_cache_desc"),
    (Report, b"dsv4kv_report"),
    (FlashinferArgs, b"dsv4kv_flashinfer_args"),
):
    if lib.dsv4kv_struct_size(_cname) != ctypes.sizeof(_struct):
        raise ImportError(
            "dsv4kv: %s is %d bytes in %s but %d here: library and package do not match"
            % (_cname.decode(), lib.dsv4kv_struct_size(_cname), library_path, ctypes.sizeof(_struct))
        )

version = lib.dsv4kv_version().decode()

# ---- errors and the last call's report -------------------------------------------


class DSV4KVError(Exception):
    """Base of the errors a call raises; .status is the library's status code."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class DSV4KVValueError(DSV4KVError, ValueError):
    pass


class DSV4KVTypeError(DSV4KVError, TypeError):
    pass


class DSV4KVRuntimeError(DSV4KVError, RuntimeError):
    pass


class SkippedEntriesError(DSV4KVValueError):
    """Raised after a call that skipped entries when configure(raise_on_skip=True);
    every in-range entry has been written."""


def raise_for(status, what):
    msg = "%s: %s" % (what, lib.dsv4kv_last_error().decode(errors="replace"))
    if status == ERR_DTYPE:
        raise DSV4KVTypeError(msg, status)
    if status in (ERR_BACKEND_NOT_BUILT, ERR_ALLOC, ERR_BACKEND):
        raise DSV4KVRuntimeError(msg, status)
    raise DSV4KVValueError(msg, status)


_state = threading.local()


def report_message(rep):
    buf = ctypes.create_string_buffer(1024)
    lib.dsv4kv_report_message(ctypes.byref(rep), buf, len(buf))
    return buf.value.decode(errors="replace")
