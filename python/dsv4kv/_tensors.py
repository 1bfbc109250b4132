"""Tensors into the library without copies (DLPack), outputs allocated with
the caller's framework, and one call with its options and report.

torch tensors (CPU and CUDA) and numpy arrays cross through ``__dlpack__``:
the DLTensor the library gets points at the caller's memory.  numpy has no
bf16: ml_dtypes' ``bfloat16`` arrays are passed as their uint16 bits with the
dtype marked bf16, and, as a documented fallback, plain uint16 arrays are
taken as bf16 bits where the library expects bf16.
"""

import ctypes
import functools
import math
import operator
import struct

from . import _lib
from ._lib import DLTensor, Options, Report, lib

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
ctypes.pythonapi.PyCapsule_IsValid.restype = ctypes.c_int
ctypes.pythonapi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY


def _export(src, name):
    """src's DLPack capsule and DLTensor address, and whether it is read-only.
    numpy is asked for a versioned capsule (DLPack >= 1.0), which can carry
    read-only arrays; the legacy capsule otherwise."""
    try:
        capsule = src.__dlpack__(max_version=(1, 0))
    except (TypeError, BufferError):
        capsule = None
    try:
        if capsule is not None and ctypes.pythonapi.PyCapsule_IsValid(ctypes.py_object(capsule),
                                                                      b"dltensor_versioned"):
            m = _DLManagedTensorVersioned.from_address(_get_pointer(capsule, b"dltensor_versioned"))
            return capsule, ctypes.addressof(m.dl_tensor), bool(m.flags & _READ_ONLY)
        capsule = capsule if capsule is not None else src.__dlpack__()
        return capsule, _get_pointer(capsule, b"dltensor"), False
    except (BufferError, TypeError, ValueError) as e:  # a dtype DLPack cannot carry, or no capsule at all
        raise _lib.DSV4KVTypeError("%s (dtype %s) cannot cross through DLPack: %s" % (
            name, getattr(src, "dtype", "?"), e), 2) from None


class Tensor:
    """One argument as the library sees it: its DLTensor, and what keeps the
    memory (and the DLPack capsule) alive during the call."""

    __slots__ = ("dl", "keep", "obj")

    def __init__(self, obj, name, bf16=False, out=False):
        self.obj = obj
        if obj is None:
            raise _lib.DSV4KVValueError("%s is None" % name, 1)
        src, mark_bf16 = obj, False
        if _is_torch(obj):
            import torch

            if obj.is_cuda:
                # DLPack names the legacy default stream 1 (0 is not allowed);
                # torch reports it as handle 0.
                stream = torch.cuda.current_stream(obj.device).cuda_stream
                capsule = obj.__dlpack__(stream=stream if stream != 0 else 1)
            else:
                capsule = obj.__dlpack__()
        else:
            dt = getattr(obj, "dtype", None)
            if dt is None or not hasattr(obj, "__dlpack__"):
                raise _lib.DSV4KVTypeError(
                    "%s is of type %s; dsv4kv takes torch tensors and numpy arrays (DLPack)" % (name, type(obj).__name__), 2
                )
            if dt.name == "bfloat16":  # ml_dtypes
                src, mark_bf16 = obj.view("uint16"), True
            elif bf16 and dt.name == "uint16":  # the documented fallback: bf16 bits
                mark_bf16 = True
            if out and hasattr(obj, "flags") and not obj.flags.writeable:
                raise _lib.DSV4KVValueError("%s is read-only; the call writes it" % name, 6)
        if _is_torch(obj):
            address = _get_pointer(capsule, b"dltensor")
        else:
            capsule, address, read_only = _export(src, name)
            if out and read_only:  # (any DLPack producer: the flags test above is numpy's alone)
                raise _lib.DSV4KVValueError("%s is read-only (DLPack); the call writes it" % name, 6)
        self.dl = DLTensor()
        ctypes.memmove(ctypes.byref(self.dl), address, ctypes.sizeof(DLTensor))
        if mark_bf16:
            self.dl.dtype.code, self.dl.dtype.bits = _lib.kDLBfloat, 16
        self.keep = (capsule, src)

    def ref(self):
        return ctypes.byref(self.dl)


def api(fn):
    """A public op: a call that raises leaves no report behind (last_report),
    and its errors start with the op's name, as the library's own do (the
    binding's checks of its arguments raise without it)."""
    prefix = fn.__name__ + ": "

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        _lib._state.last = None
        try:
            return fn(*args, **kwargs)
        except _lib.DSV4KVError as e:
            if str(e).startswith(prefix):
                raise
            raise type(e)(prefix + str(e), e.status) from None

    return entry


def _int(x, name, bits):
    """A Python integer for an int32 / int64 parameter, range-checked (ctypes
    would wrap it silently); ints and numpy integers, not floats, strings or
    booleans (True is an int to Python; as a size it is a mistake)."""
    if isinstance(x, bool) or getattr(getattr(x, "dtype", None), "kind", None) == "b":
        raise _lib.DSV4KVTypeError("%s = %s is a boolean, not an integer" % (name, x), 2)
    try:
        v = operator.index(x)
    except TypeError:
        raise _lib.DSV4KVTypeError("%s = %r is not an integer" % (name, x), 2) from None
    if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
        raise _lib.DSV4KVValueError("%s = %r does not fit in int%d" % (name, x, bits), 6)
    return v


def i32(x, name):
    return _int(x, name, 32)


def i64(x, name):
    return _int(x, name, 64)


def f32(x, name):
    """A real number for a float parameter (not None, not a string)."""
    if isinstance(x, (str, bytes)) or x is None:
        raise _lib.DSV4KVTypeError("%s = %r is not a number" % (name, x), 2)
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise _lib.DSV4KVTypeError("%s = %r is not a number" % (name, x), 2) from None
    except OverflowError:  # an int past any float
        raise _lib.DSV4KVValueError("%s = %r does not fit in float32" % (name, x), 6) from None
    # the parameter is a C float: a finite value past its range would arrive as inf
    if math.isfinite(v):
        try:
            past = math.isinf(struct.unpack("f", struct.pack("f", v))[0])
        except OverflowError:  # (some Pythons raise instead of rounding to inf)
            past = True
        if past:
            raise _lib.DSV4KVValueError("%s = %r does not fit in float32" % (name, x), 6)
    return v


def flag(x, name):
    """A boolean parameter: True / False (or 0 / 1, numpy booleans)."""
    if isinstance(x, bool):
        return x
    try:  # a 0-d boolean array or tensor (numpy's dtype has kind "b", torch's is torch.bool)
        zero_d = tuple(getattr(x, "shape", (None,))) == ()
        if zero_d and (getattr(x.dtype, "kind", None) == "b" or str(x.dtype) == "torch.bool"):
            return bool(x)
    except Exception:  # an object that only looks like one
        pass
    if isinstance(x, int) and x in (0, 1):
        return bool(x)
    raise _lib.DSV4KVTypeError("%s = %r: pass True or False" % (name, x), 2)


# Outputs the binding allocates stay under this many entries (the library's
# own allocating combine has the same cap): a typo in topk or window_size
# must not ask for tens of gigabytes.
MAX_ALLOC_ENTRIES = 1 << 28


def check_alloc(entries, what):
    if entries > MAX_ALLOC_ENTRIES:
        raise _lib.DSV4KVValueError("%s would have %d entries, over the %d this binding allocates (check topk and "
                                    "window_size, or pass the output yourself)" % (what, entries, MAX_ALLOC_ENTRIES), 6)


def arg(obj, name, bf16=False, out=False, optional=False):
    """A library argument; None is a NULL pointer where the argument is
    optional, an error otherwise."""
    if obj is None and optional:
        return None
    if obj is None:
        raise _lib.DSV4KVValueError("%s is None; it is required" % name, 1)
    return Tensor(obj, name, bf16, out)


def ptr(t):
    return t.ref() if t is not None else None


def device_of(*tensors):
    for t in tensors:
        if t is not None and t.dl.device.device_type != _lib.kDLCPU:
            return t
    return None


# ---- outputs the reference allocates -----------------------------------------


def new_output(like, shape, dtype, fill=None):
    """An int32 / bool array of `shape` from like's framework, on like's device."""
    if _is_torch(like):
        import torch

        tdt = {"int32": torch.int32, "bool": torch.bool}[dtype]
        if fill is None:
            return torch.empty(shape, dtype=tdt, device=like.device)
        return torch.full(shape, fill, dtype=tdt, device=like.device)
    import numpy as np

    if fill is None:
        return np.empty(shape, dtype=dtype)
    return np.full(shape, fill, dtype=dtype)


# ---- settings and the last call's report ---------------------------------------

_settings = {"raise_on_skip": False, "check_nonfinite": False, "num_threads": 0}


def configure(raise_on_skip=None, check_nonfinite=None, num_threads=None):
    """Process-wide call options: raise SkippedEntriesError when a call skipped
    entries (every in-range entry is written before it raises; on CUDA this
    synchronizes the stream after each call); count
    NaN / Inf in the inputs of inserts and the indexer store; CPU threads per
    call (0 = the processors; small calls stay on one thread).  Arguments left None are unchanged; returns
    the settings."""
    if num_threads is not None and not 0 <= i32(num_threads, "num_threads") <= 4096:
        raise _lib.DSV4KVValueError("num_threads = %r; must be in [0, 4096]" % (num_threads,), 6)
    for k, v in (("raise_on_skip", raise_on_skip), ("check_nonfinite", check_nonfinite)):
        if v is not None and not isinstance(v, bool) and v not in (0, 1):
            raise _lib.DSV4KVTypeError("%s = %r: pass True or False" % (k, v), 2)
    for k, v in (("raise_on_skip", raise_on_skip), ("check_nonfinite", check_nonfinite), ("num_threads", num_threads)):
        if v is not None:
            _settings[k] = type(_settings[k])(v)
    return dict(_settings)


def last_report():
    """The report of this thread's last call (None before the first and after
    one that raised): a dict with skipped, nonfinite,
    status (0 OK, 11 skipped, 12 non-finite) and message (the first skipped
    entry, named as the library names it).  For a CUDA call this reads the
    report from device memory, which waits for the call to finish."""
    last = getattr(_lib._state, "last", None)
    if last is None:
        return None
    rep = last["report"]
    if last["device"] is not None:  # a torch CUDA uint8 tensor holding the report
        host = last["device"].cpu().numpy().tobytes()
        rep = Report.from_buffer_copy(host)
    return {
        "skipped": rep.skipped,
        "nonfinite": rep.nonfinite,
        "status": lib.dsv4kv_report_status(ctypes.byref(rep)),
        "message": _lib.report_message(rep),
    }


def call(what, fn, tensors, *args_after, distinct_slots=False):
    """Runs library function `fn` with `args_after` (already built from
    `tensors`), with the options of the tensors' device (and the caller's
    promise of distinct slots, inserts and indexer store); raises on errors
    and, when configured, on skipped entries."""
    dev = device_of(*tensors)
    opt = Options()
    opt.distinct_slots = int(distinct_slots)
    opt.check_nonfinite = int(_settings["check_nonfinite"])
    opt.num_threads = int(_settings["num_threads"])
    rep = Report()
    dev_rep = None
    if dev is None:
        skipped, nonfinite = ctypes.c_int64(0), ctypes.c_int64(0)
        opt.skipped, opt.nonfinite = ctypes.pointer(skipped), ctypes.pointer(nonfinite)
        opt.report = ctypes.cast(ctypes.byref(rep), ctypes.c_void_p)
    else:
        if not _is_torch(dev.obj):
            raise _lib.DSV4KVTypeError("%s: device tensors must be torch tensors" % what, 2)
        import torch

        dev_rep = torch.empty(ctypes.sizeof(Report), dtype=torch.uint8, device=dev.obj.device)
        opt.report = dev_rep.data_ptr()
        opt.stream = torch.cuda.current_stream(dev.obj.device).cuda_stream
    st = fn(*args_after, ctypes.byref(opt))
    if st not in (_lib.OK, _lib.WARN_SKIPPED, _lib.WARN_NONFINITE):
        raise_for(st, what)
    _lib._state.last = {"report": rep, "device": dev_rep}
    if _settings["raise_on_skip"]:
        r = last_report()
        if r["skipped"]:
            raise _lib.SkippedEntriesError("%s: %s" % (what, r["message"]), _lib.WARN_SKIPPED)
    return st


raise_for = _lib.raise_for
