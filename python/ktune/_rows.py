"""Row ops on PyTorch CUDA tensors: softmax, LayerNorm and RMSNorm over the last dimension."""

import math

from . import _runtime
from ._gemm import _err
from ._runtime import runtime

_DTYPE_CODES = {}  # torch dtype -> "f32" / "bf16" / "f16", filled on first use (torch is imported lazily)


def _dtype_codes():
    if not _DTYPE_CODES:
        import torch

        _DTYPE_CODES.update({torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"})
    return _DTYPE_CODES


def _rows_of(x, name):
    """x as (rows, cols, row stride): the last dimension contiguous, the others flattened."""
    import torch

    if not isinstance(x, torch.Tensor):
        raise _err("%s is a %s: the row ops take PyTorch tensors" % (name, type(x).__name__))
    if x.dtype not in _dtype_codes():
        raise _err("%s has dtype %s; ktune serves float32, bfloat16 and float16" % (name, x.dtype))
    if not x.is_cuda:
        raise _err("%s is on %s; ktune runs on CUDA tensors (move it with .cuda())" % (name, x.device))
    if x.dim() == 0:
        raise _err("%s is a scalar; the row ops need at least one dimension" % name)
    cols = x.shape[-1]
    x2 = x if x.dim() == 2 else x.reshape(math.prod(x.shape[:-1]), cols)  # no -1: 0 columns would make it ambiguous
    if (x2.shape[0] > 1 and x2.stride(0) < cols) or (cols > 1 and x2.stride(1) != 1):
        x2 = x2.contiguous()
    return x2


def _vector(v, name, cols, like):
    if v is None:
        return None
    if v.shape != (cols,) or v.dtype != like.dtype or v.device != like.device:
        raise _err("%s must be a %s vector of %d elements on %s (got %s %s on %s)"
                   % (name, like.dtype, cols, like.device, v.dtype, tuple(v.shape), v.device))
    return v.contiguous()


def _current_stream(index):
    """The current CUDA stream of a device as an integer, without building a torch.cuda.Stream
    (which costs several microseconds a call)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream


def _vector_fits(v, cols, x, index):
    return v.shape == (cols,) and v.dtype is x.dtype and v.get_device() == index and v.stride() == (1,)


_calls_get = _runtime.calls.get  # the dict is emptied, never replaced


def _run(op, x, out, weight, bias, scalar):
    # The fast path: a problem seen before (the same op, dtype, shape, strides, device and scalar,
    # weight and bias present or not) is called through its prepared handle with pointers and the
    # stream only, after the checks that can change from call to call. Python's host cost a call
    # is what decides eager speed at small rows (bench/rows_call_overhead.py): every attribute
    # read and call here is one that the measurements showed to matter.
    fast = _runtime._torch_fast or _runtime.torch_fast()
    if fast and out is None and type(x) is fast[1]:
        # get_device(): the index as an int (-1 on the CPU), cheaper than building a torch.device.
        key = (op, x.dtype, x.shape, x.stride(), x.get_device(), scalar, weight is None, bias is None)
        hit = _calls_get(key)
        if (hit is not None and fast[4]() == hit[2] and (weight is None or _vector_fits(weight, hit[1], x, hit[2]))
                and (bias is None or _vector_fits(bias, hit[1], x, hit[2]))):
            # A contiguous x (known from the key's strides) gives a contiguous y without the
            # memory_format keyword, which costs a microsecond to parse.
            y = fast[5](x) if hit[3] else fast[5](x, memory_format=fast[2])
            hit[0](x.data_ptr(), y.data_ptr(), 0 if weight is None else weight.data_ptr(),
                   0 if bias is None else bias.data_ptr(), fast[3](hit[2]))
            if _runtime._ext:  # the C++ path missed it (its table was emptied): serve it there again
                _runtime._ext.remember_rows(op, x, scalar, weight is not None, bias is not None, hit[0], hit[2])
            return y
        return _run_checked(op, x, out, weight, bias, scalar, key)
    return _run_checked(op, x, out, weight, bias, scalar, None)


def _run_checked(op, x, out, weight, bias, scalar, key):
    import torch

    x2 = _rows_of(x, "x")
    rows, cols = x2.shape
    w = _vector(weight, "weight", cols, x2)
    b = _vector(bias, "bias", cols, x2)
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    elif out.shape != x.shape or out.dtype != x.dtype or out.device != x.device or not out.is_contiguous():
        raise _err("out must be a contiguous tensor of x's shape, dtype and device")
    if rows == 0 or cols == 0:
        return out
    current = torch.cuda.current_device()
    index = x2.device.index if x2.device.index is not None else current
    ldx = x2.stride(0) if rows > 1 else cols
    args = (op, _DTYPE_CODES[x2.dtype], rows, cols, x2.data_ptr(), ldx,
            out.data_ptr(), cols, 0 if w is None else w.data_ptr(), 0 if b is None else b.data_ptr(), float(scalar))
    # The launch goes to the current CUDA context: x's device must be the current one. Switching
    # costs a few microseconds a call, so only when it is not.
    if index == current:
        rt = runtime(device=index)
        # Served from a prepared call next time when x needed no copy (x2 is a view of it) and the
        # weight and bias no copy either.
        if (key is not None and x2.data_ptr() == x.data_ptr() and (w is None or w is weight)
                and (b is None or b is bias)):
            call = rt.rows_call(op, _DTYPE_CODES[x2.dtype], rows, cols, ldx, cols, float(scalar))
            _runtime.remember_call(key, (call, cols, index, x.is_contiguous()))
            if _runtime._ext:
                _runtime._ext.remember_rows(op, x, scalar, weight is not None, bias is not None, call, index)
            call(x2.data_ptr(), out.data_ptr(), args[8], args[9], _current_stream(index))
        else:
            rt.rows(*args, _current_stream(index))
    else:
        with torch.cuda.device(index):
            runtime(device=index).rows(*args, _current_stream(index))
    return out


# Each op first asks the C++ fast path (ktune._torch_ext, where built: python/torch_ext.cpp) for a
# problem seen before; None from it, or no such module, and the Python path runs.

def softmax(x, scale=1.0, out=None):
    """softmax(scale * x) along the last dimension (torch.softmax(x * scale, -1)), FP32 math."""
    ext = _runtime._ext
    if ext is None:
        ext = _runtime.torch_ext()
    if out is None and ext:
        y = ext.softmax(x, scale)
        if y is not None:
            return y
    return _run("softmax", x, out, None, None, scale)


def layer_norm(x, weight=None, bias=None, eps=1e-5, out=None):
    """F.layer_norm(x, (x.shape[-1],), weight, bias, eps), FP32 math, weight and bias in x's dtype."""
    ext = _runtime._ext
    if ext is None:
        ext = _runtime.torch_ext()
    if out is None and ext:
        y = ext.layer_norm(x, weight, bias, eps)
        if y is not None:
            return y
    return _run("layernorm", x, out, weight, bias, eps)


def rms_norm(x, weight=None, eps=1e-6, out=None):
    """F.rms_norm(x, (x.shape[-1],), weight, eps), FP32 math, weight in x's dtype."""
    ext = _runtime._ext
    if ext is None:
        ext = _runtime.torch_ext()
    if out is None and ext:
        y = ext.rms_norm(x, weight, eps)
        if y is not None:
            return y
    return _run("rmsnorm", x, out, weight, None, eps)
