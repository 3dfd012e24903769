"""ktune.gemm on PyTorch tensors and on anything with __cuda_array_interface__ or __dlpack__."""

import sys

from . import _ktune
from . import _runtime
from ._runtime import runtime

_TORCH_DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
_CAI_DTYPES = {"f4": "f32", "f2": "f16"}  # the array interface has no standard bfloat16 typestr
_ITEMSIZE = {"f32": 4, "bf16": 2, "f16": 2}
_calls_get = _runtime.calls.get  # the dict is emptied, never replaced


def _err(msg):
    return _ktune.UsageError("ktune.gemm: " + msg)


def _layout(rows, cols, s0, s1):
    """('N', ld) for a row-major matrix, ('T', ld) for a column-major one (strides in elements),
    None for any other strides (broadcast, negative, non-unit inner stride)."""
    if (s1 == 1 or cols <= 1) and (rows <= 1 or s0 >= max(cols, 1)):
        return "N", (s0 if rows > 1 else max(cols, 1))
    if (s0 == 1 or rows <= 1) and (cols <= 1 or s1 >= max(rows, 1)):
        return "T", (s1 if cols > 1 else max(rows, 1))
    return None


def _out_ld(m, n, s0, s1):
    """ldc of a row-major C, or None (C must be row-major with unit column stride)."""
    if (s1 == 1 or n <= 1) and (m <= 1 or s0 >= max(n, 1)):
        return s0 if m > 1 else max(n, 1)
    return None


def _check_shapes(ashape, bshape, oshape):
    if len(ashape) != 2:
        raise _err("a must be 2-D (got shape %s)" % (tuple(ashape),))
    if len(bshape) != 2:
        raise _err("b must be 2-D (got shape %s)" % (tuple(bshape),))
    m, k = ashape
    k2, n = bshape
    if k != k2:
        raise _err("shape mismatch: a is %dx%d and b is %dx%d (a's columns must equal b's rows)" % (m, k, k2, n))
    if oshape is not None and tuple(oshape) != (m, n):
        raise _err("out has shape %s; a @ b is %dx%d" % (tuple(oshape), m, n))
    return m, n, k


def _is_torch(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _as_torch(x, name):
    if _is_torch(x):
        return x
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and hasattr(x, "__dlpack__"):
        return torch.from_dlpack(x)
    if torch is not None and hasattr(x, "__cuda_array_interface__"):
        return torch.as_tensor(x, device="cuda")
    raise _err("%s is a %s: ktune takes PyTorch tensors and objects with __cuda_array_interface__ (CuPy, Numba); "
               "objects with only __dlpack__ need PyTorch installed" % (name, type(x).__name__))


def _torch_gemm(a, b, out, alpha, beta, key=None):
    import torch

    a_given, b_given = a, b
    m, n, k = _check_shapes(a.shape, b.shape, None if out is None else out.shape)
    for name, x in (("a", a), ("b", b), ("out", out)):
        if x is not None and x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise _err("%s has dtype %s; ktune serves float32, bfloat16 and float16" % (name, x.dtype))
    if a.dtype != b.dtype or (out is not None and out.dtype != a.dtype):
        raise _err("a, b and out must have one dtype (got %s, %s%s)"
                   % (a.dtype, b.dtype, "" if out is None else ", " + str(out.dtype)))
    for name, x in (("a", a), ("b", b), ("out", out)):
        if x is not None and x.device.type != "cuda":
            raise _err("%s is on %s; ktune runs on CUDA tensors (move it with .cuda())" % (name, x.device))
    devs = {x.device for x in (a, b, out) if x is not None}
    if len(devs) > 1:
        raise _err("a, b and out are on different devices (%s)" % ", ".join(sorted(str(d) for d in devs)))
    device = a.device
    dtype = _TORCH_DTYPES[str(a.dtype)[len("torch."):]]
    if out is None:
        if beta != 0:
            raise _err("beta = %g reads C: pass out=" % beta)
        out = torch.empty((m, n), dtype=a.dtype, device=device)
    ldc = _out_ld(m, n, *out.stride())
    if ldc is None:
        raise _err("out must be row-major with unit column stride (got strides %s); pass a contiguous tensor"
                   % (tuple(out.stride()),))
    if m == 0 or n == 0:
        return out
    # Operands whose strides are neither row- nor column-major are copied to contiguous first.
    la = _layout(m, k, *a.stride())
    if la is None:
        a = a.contiguous()
        la = ("N", max(k, 1))
    lb = _layout(k, n, *b.stride())
    if lb is None:
        b = b.contiguous()
        lb = ("N", max(n, 1))
    current = torch.cuda.current_device()
    index = device.index if device.index is not None else current
    fast = _runtime.torch_fast()
    if index == current and key is not None and a_given is a and b_given is b and fast:
        # Called through a prepared handle from now on (gemm's fast path): a and b needed no copy.
        call = runtime(device=index).gemm_call(m, n, k, dtype, la[0] + lb[0], la[1], lb[1], ldc)
        _runtime.remember_call(key, (call, (m, n), index))
        if _runtime._ext:
            _runtime._ext.remember_gemm(a, b, call, m, n, index)
        call(a.data_ptr(), b.data_ptr(), out.data_ptr(), float(alpha), float(beta), fast[3](index))
        return out
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device).cuda_stream
        runtime(device=index).gemm(
            m, n, k, dtype, la[0] + lb[0], a.data_ptr(), la[1], b.data_ptr(), lb[1], out.data_ptr(), ldc,
            float(alpha), float(beta), stream)
    return out


class _CaiView:
    """A 2-D matrix described by __cuda_array_interface__ (strides in elements)."""

    def __init__(self, x, name):
        d = x.__cuda_array_interface__
        self.obj = x
        self.shape = tuple(int(s) for s in d["shape"])
        typestr = d["typestr"]
        if typestr[1:] not in _CAI_DTYPES or typestr[0] not in "<|=":
            raise _err("%s has typestr %r; ktune serves float32 ('<f4') and float16 ('<f2') through "
                       "__cuda_array_interface__ (bfloat16 through PyTorch tensors)" % (name, typestr))
        self.dtype = _CAI_DTYPES[typestr[1:]]
        item = _ITEMSIZE[self.dtype]
        self.ptr = int(d["data"][0])
        if len(self.shape) != 2:
            raise _err("%s must be 2-D (got shape %s)" % (name, self.shape))
        strides = d.get("strides")
        if strides is None:
            self.strides = (self.shape[1], 1)
        else:
            if any(s % item for s in strides):
                raise _err("%s has strides %s bytes, not whole elements" % (name, tuple(strides)))
            self.strides = tuple(int(s) // item for s in strides)
        self.stream = d.get("stream")
        dev = getattr(x, "device", None)
        self.device = int(getattr(dev, "id", 0) or 0)
        self.readonly = bool(d["data"][1])


def _cai_gemm(a, b, out, alpha, beta):
    va, vb = _CaiView(a, "a"), _CaiView(b, "b")
    vo = None if out is None else _CaiView(out, "out")
    m, n, k = _check_shapes(va.shape, vb.shape, None if vo is None else vo.shape)
    if va.dtype != vb.dtype or (vo is not None and vo.dtype != va.dtype):
        raise _err("a, b and out must have one dtype (got %s, %s%s)"
                   % (va.dtype, vb.dtype, "" if vo is None else ", " + vo.dtype))
    if len({v.device for v in (va, vb, vo) if v is not None}) > 1:
        raise _err("a, b and out are on different devices")
    if vo is None:
        if beta != 0:
            raise _err("beta = %g reads C: pass out=" % beta)
        mod = type(a).__module__.split(".")[0]
        if mod != "cupy":
            raise _err("out=None allocates C only for PyTorch tensors and CuPy arrays; pass out=")
        import cupy
        with cupy.cuda.Device(va.device):
            out = cupy.empty((m, n), dtype=a.dtype)
        vo = _CaiView(out, "out")
    if vo.readonly:
        raise _err("out is read-only")
    ldc = _out_ld(m, n, *vo.strides)
    if ldc is None:
        raise _err("out must be row-major with unit column stride (got strides %s elements)" % (vo.strides,))
    if m == 0 or n == 0:
        return out
    la, lb = _layout(m, k, *va.strides), _layout(k, n, *vb.strides)
    if la is None or lb is None:
        raise _err("%s is neither row- nor column-major (strides %s elements); pass a contiguous array"
                   % (("a", va.strides) if la is None else ("b", vb.strides)))
    # The stream the producer named (v3 of the interface; 1 is the legacy default stream, 2 the
    # per-thread one); none named: the legacy default stream.
    streams = {int(v.stream) for v in (va, vb, vo) if v.stream is not None}
    stream = streams.pop() if len(streams) == 1 else (0 if not streams else None)
    if stream is None:
        raise _err("a, b and out name different CUDA streams in __cuda_array_interface__")
    runtime(device=va.device).gemm(m, n, k, va.dtype, la[0] + lb[0], va.ptr, la[1], vb.ptr, lb[1], vo.ptr, ldc,
                                   float(alpha), float(beta), stream)
    return out


def gemm(a, b, out=None, alpha=1.0, beta=0.0):
    """out = alpha * a @ b + beta * out with ktune's tuned kernel for the problem (or cuBLAS where it
    was faster), on the tensors' current CUDA stream; returns out (a new tensor when out is None).

    a (M x K) and b (K x N): 2-D CUDA tensors of one dtype, float32, bfloat16 or float16 (FP32
    accumulation; half results rounded to nearest). Row-major tensors and transposed views of
    row-major ones (column-major) run as they are, as ktune's N and T layouts, with their leading
    dimensions; operands of any other strides are copied to contiguous first (PyTorch) or refused
    (__cuda_array_interface__). out must be row-major (unit column stride) and is written in place;
    beta != 0 needs it. Arguments ktune cannot take raise ktune.UsageError (a ValueError).

    PyTorch tensors run on torch.cuda.current_stream(); CuPy arrays (anything with
    __cuda_array_interface__: f32, f16) on the stream their interface names (CuPy's current one);
    objects with only __dlpack__ go through torch.from_dlpack. Not differentiable: use
    torch.ops.ktune.gemm for autograd and torch.compile.
    """
    # The fast paths: a problem seen before (dtypes, shapes, strides and device of a and b; a new
    # out; beta 0) is called through its prepared handle with pointers and the stream only, from C++
    # (ktune._torch_ext, where built) or from here. The checks of the full path below hold for it:
    # all of that is in the key.
    ext = _runtime._ext
    if ext is None:
        ext = _runtime.torch_ext()
    if out is None and beta == 0 and ext:
        c = ext.gemm(a, b, alpha)
        if c is not None:
            return c
    fast = _runtime._torch_fast or _runtime.torch_fast()
    if fast and out is None and beta == 0 and type(a) is fast[1] and type(b) is fast[1] and alpha.__class__ in (float, int):
        # get_device(): the index as an int (-1 on the CPU), cheaper than building a torch.device.
        key = ("gemm", a.dtype, b.dtype, a.shape, b.shape, a.stride(), b.stride(), a.get_device(), b.get_device())
        hit = _calls_get(key)
        if hit is not None and fast[4]() == hit[2]:
            c = a.new_empty(hit[1])  # a's dtype and device; cheaper than torch.empty's keywords
            hit[0](a.data_ptr(), b.data_ptr(), c.data_ptr(), alpha, 0.0, fast[3](hit[2]))
            if _runtime._ext:  # the C++ path missed it (its table was emptied): serve it there again
                _runtime._ext.remember_gemm(a, b, hit[0], hit[1][0], hit[1][1], hit[2])
            return c
        return _torch_gemm(a, b, None, alpha, beta, key)
    if isinstance(alpha, complex) or isinstance(beta, complex):
        raise _err("alpha and beta must be real")
    args = (a, b) if out is None else (a, b, out)
    if any(_is_torch(x) for x in args) or not all(hasattr(x, "__cuda_array_interface__") for x in args):
        a, b = _as_torch(a, "a"), _as_torch(b, "b")
        if out is not None and not _is_torch(out):
            out = _as_torch(out, "out")
        return _torch_gemm(a, b, out, alpha, beta)
    return _cai_gemm(a, b, out, alpha, beta)
