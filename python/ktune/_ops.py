"""Any registered op by name on PyTorch CUDA tensors (Runtime::run): the ops of plain buffers
such as scale_add, which have no typed wrapper, and the others through the same generic path."""

from . import _ktune
from ._rows import _current_stream, _dtype_codes
from ._runtime import op_table, runtime


def _err(msg):
    return _ktune.UsageError("ktune.run: " + msg)


def ops():
    """The registered ops: a list of dicts with name, about, dims, layouts, runner, scalars
    ((name, default) pairs), operands ((name, is_output) pairs), shapes (an N-dimensional
    operand's dimension names, outermost first) and strides (their names, as ktune passes them),
    in the order ktune lists them."""
    return _ktune.ops()


def _op(name):
    table = op_table()
    if name not in table:
        raise _err("unknown op %r (known: %s)" % (name, ", ".join(table)))
    return table[name]


def run(op, *buffers, dims=None, **scalars):
    """Runs op on CUDA tensors given in the op's operand order (scale_add: x, y, out; GEMM: A, B, C
    row-major; row ops: x, y, weight, bias with None where none), each contiguous and of one dtype
    (float32, bfloat16 or float16) on one device. An N-dimensional operand (ops()' "shapes") may
    be any view whose last dimension is contiguous (a transpose of the outer ones included); its
    strides go to the kernels. dims: the op's dimensions in its order (default: read off the
    N-dimensional operands, else the first tensor's shape when the op has as many dimensions, else
    its element count for an op of one dimension). scalars: by the op's names (scale_add: alpha, beta); the rest
    take the op's defaults. Outputs are written in place; returns None."""
    import torch

    info = _op(op)
    shapes = info.get("shapes", {})
    names = [n for n, _ in info["operands"]] or {"gemm": ["A", "B", "C"], "rows": ["x", "y", "weight", "bias"]}.get(
        info["runner"], [])
    if len(buffers) != len(names):
        raise _err("%s takes %d tensors (%s), got %d" % (op, len(names), ", ".join(names), len(buffers)))
    first = next((b for b in buffers if b is not None), None)
    if first is None:
        raise _err("%s: every tensor is None" % op)
    codes = _dtype_codes()
    for name, b in zip(names, buffers):
        if b is None:
            continue
        if not isinstance(b, torch.Tensor):
            raise _err("%s is a %s: ktune.run takes PyTorch tensors" % (name, type(b).__name__))
        if b.dtype not in codes:
            raise _err("%s has dtype %s; ktune serves float32, bfloat16 and float16" % (name, b.dtype))
        if b.dtype != first.dtype or b.device != first.device or not b.is_cuda:
            raise _err("%s must be a CUDA tensor of the first's dtype and device, %s on %s (got %s on %s)"
                       % (name, first.dtype, first.device, b.dtype, b.device))
        if name in shapes:
            if b.dim() != len(shapes[name]) or (b.numel() > 0 and b.stride(-1) != 1):
                raise _err("%s must be a %d-d tensor (%s) with a contiguous last dimension (got shape %s, strides %s)"
                           % (name, len(shapes[name]), ", ".join(shapes[name]), tuple(b.shape), b.stride()))
        elif not b.is_contiguous():
            raise _err("%s must be contiguous" % name)
    unknown = set(scalars) - {n for n, _ in info["scalars"]}
    if unknown:
        raise _err("%s has no scalar %s (its scalars: %s)"
                   % (op, ", ".join(sorted(unknown)), ", ".join(n for n, _ in info["scalars"]) or "none"))
    if dims is None and shapes:
        found = {}
        for name, b in zip(names, buffers):
            for d, size in zip(shapes.get(name, ()), () if b is None else b.shape):
                if found.setdefault(d, int(size)) != int(size):
                    raise _err("%s is %d along %s, another operand %d" % (name, int(size), d, found[d]))
        missing = [d for d in info["dims"] if d not in found]
        if missing:
            raise _err("%s: no tensor gives dimension %s: pass dims=" % (op, ", ".join(missing)))
        dims = tuple(found[d] for d in info["dims"])
    if dims is None:
        if first.dim() == len(info["dims"]):
            dims = tuple(first.shape)
        elif len(info["dims"]) == 1:
            dims = (first.numel(),)
        else:
            raise _err("%s has dimensions %s: pass dims=" % (op, ", ".join(info["dims"])))
    dims = [int(d) for d in dims]
    strides = []
    for name, b in zip(names, buffers):
        if name in shapes:
            want = [dims[info["dims"].index(d)] for d in shapes[name]]
            if b is None or list(b.shape) != want:
                raise _err("%s must have shape %s (%s), got %s"
                           % (name, tuple(want), ", ".join(shapes[name]), None if b is None else tuple(b.shape)))
            strides += [int(s) for s in b.stride()[:-1]]
    index = first.device.index if first.device.index is not None else torch.cuda.current_device()
    ptrs = [0 if b is None else b.data_ptr() for b in buffers]
    with torch.cuda.device(index):
        runtime(device=index).run(op, codes[first.dtype], dims, ptrs, {k: float(v) for k, v in scalars.items()},
                                  _current_stream(index), strides)


def op(name):
    """run with the op fixed: ktune.op("scale_add")(x, y, out, alpha=2.0)."""
    _op(name)  # an unknown name fails here, not at the first call

    def call(*buffers, dims=None, **scalars):
        return run(name, *buffers, dims=dims, **scalars)

    call.__name__ = name
    call.__doc__ = "%s: %s (ktune.run)" % (name, _op(name)["about"])
    return call
