"""ktune.Kernel: a user's CUDA kernel from a spec (docs/KERNEL_SPEC.md), tuned and launched from
Python, and specs written inline as dicts (Kernel Tuner's tune_params and restrictions work)."""

import hashlib
import json
import os

from . import _ktune
from ._runtime import default_db_path, op_table, runtime

# Kernel Tuner's argument names for the spec's fields.
_ALIASES = {"tune_params": "params", "kernel_name": "kernel", "problem_dims": "dims"}
_TORCH_DTYPES = None


def _err(msg):
    return _ktune.UsageError("ktune.Kernel: " + msg)


def _spec_file(spec, base_dir):
    """An inline spec written where every process can load it: its relative paths made absolute
    (from base_dir, default the current directory) and a "source_text" written beside it, under
    ktune's cache folder, named by a hash of what it holds."""
    spec = dict(spec)
    for k, v in _ALIASES.items():
        if k in spec:
            if v in spec:
                raise _err("give %s or %s, not both" % (k, v))
            spec[v] = spec.pop(k)
    base = os.path.abspath(base_dir or os.getcwd())
    folder = os.path.join(os.path.dirname(default_db_path()), "specs")
    os.makedirs(folder, exist_ok=True)
    text = spec.pop("source_text", None)
    if text is not None:
        if "sources" in spec:
            raise _err("give sources or source_text, not both")
        src = os.path.join(folder, "%s-%s.cu" % (spec.get("name", "kernel"), hashlib.sha256(text.encode()).hexdigest()[:12]))
        with open(src + ".tmp", "w") as f:
            f.write(text)
        os.replace(src + ".tmp", src)
        spec["sources"] = [src]
    sources = spec.get("sources")
    if isinstance(sources, str):
        sources = [sources]
    if isinstance(sources, list):
        spec["sources"] = [s if not isinstance(s, str) or os.path.isabs(s) else os.path.join(base, s) for s in sources]
    if isinstance(spec.get("include_dirs"), list):
        spec["include_dirs"] = [d if not isinstance(d, str) or os.path.isabs(d) else os.path.join(base, d)
                                for d in spec["include_dirs"]]
    body = json.dumps(spec, indent=1)
    path = os.path.join(folder, "%s-%s.json" % (spec.get("name", "kernel"), hashlib.sha256(body.encode()).hexdigest()[:12]))
    with open(path + ".tmp", "w") as f:
        f.write(body)
    os.replace(path + ".tmp", path)
    return path


def _pointer(x, name):
    """(data pointer, dtype name or None, CUDA device index or None) of a torch tensor or an
    object with __cuda_array_interface__ (CuPy, Numba)."""
    global _TORCH_DTYPES
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(x, torch.Tensor):
        if _TORCH_DTYPES is None:
            _TORCH_DTYPES = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
                             torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8"}
        if not x.is_cuda:
            raise _err("%s is not on a CUDA device" % name)
        if not x.is_contiguous():
            raise _err("%s must be contiguous" % name)
        return x.data_ptr(), _TORCH_DTYPES.get(x.dtype), x.device.index
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None:
        raise _err("%s is a %s: pass a torch tensor or an object with __cuda_array_interface__" % (name, type(x).__name__))
    if cai.get("strides") not in (None, ()):
        import numpy
        item = numpy.dtype(cai["typestr"]).itemsize
        want, s = [], item
        for d in reversed(cai["shape"]):
            want.insert(0, s)
            s *= d
        if list(cai["strides"]) != want:
            raise _err("%s must be C-contiguous" % name)
    typestr = {"<f8": "f64", "<f4": "f32", "<f2": "f16", "<i8": "i64", "<i4": "i32", "<i2": "i16", "|i1": "i8",
               "|u1": "u8", "<u4": "u32", "<u8": "u64", "<u2": "u16"}.get(cai["typestr"])
    return int(cai["data"][0]), typestr, None


class Kernel:
    """A user's kernel: Kernel("path/spec.json"), or Kernel({...}) with the spec inline (Kernel
    Tuner's names tune_params and restrictions are taken; "source_text" may hold the code).

        k = ktune.Kernel("examples/kernels/transpose/transpose.json")
        k.tune([(4096, 4096)], budget_seconds=30)     # on the GPU, into ktune's database
        k.best_config(4096, 4096)                     # what a call runs, and why
        k(x, out, rows=4096, cols=4096)               # launch on the current stream

    Calls take the arguments the caller passes, in the spec's order: tensors for buffers, numbers
    for scalars without a "value" (or as keywords); the dimensions by name as keywords.
    """

    def __init__(self, spec, base_dir=None):
        if isinstance(spec, dict):
            spec = _spec_file(spec, base_dir)
        elif not isinstance(spec, (str, os.PathLike)):
            raise _err("a spec is a path or a dict (got %s)" % type(spec).__name__)
        self.path = os.path.abspath(os.fspath(spec))
        self.op = _ktune.load_kernel_spec(self.path)
        self.info = op_table(refresh=True)[self.op]

    def __repr__(self):
        return "ktune.Kernel(%r: %s)" % (self.op, self.path)

    @property
    def dims(self):
        return list(self.info["dims"])

    def _dims(self, dims, named):
        names = self.info["dims"]
        if dims and named:
            raise _err("give the dimensions by position or by name, not both")
        if named:
            missing = [d for d in names if d not in named]
            if missing:
                raise _err("%s: dimension %s not given (it takes %s)" % (self.op, ", ".join(missing), ", ".join(names)))
            dims = [named.pop(d) for d in names]
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = list(dims[0])
        if len(dims) != len(names):
            raise _err("%s takes %d dimensions (%s), got %d" % (self.op, len(names), ", ".join(names), len(dims)))
        return [int(d) for d in dims]

    def best_config(self, *dims, dtype=None, **named):
        """What a call with these dimensions runs (exact, lent or the default), as ktune.best_config."""
        d = self._dims(list(dims), dict(named))
        return runtime().best_config_op(self.op, d, dtype or self.info["dtypes"][0])

    def tune(self, problems, budget_seconds=30.0, strategy="model", dtype=None, **kwargs):
        """Tunes the kernel for problems (tuples or 'AxB' strings of its dimensions in order) with
        ktune.tune's options; returns its summary."""
        from ._tune import tune

        if isinstance(problems, (str, tuple)):
            problems = [problems]
        shapes = []
        for p in problems:
            if isinstance(p, str):
                p = [int(v) for v in p.lower().split("x")]
            shapes.append("x".join(str(v) for v in self._dims(list(p), {})))
        return tune(shapes, budget_seconds=budget_seconds, strategy=strategy, dtype=dtype or self.info["dtypes"][0],
                    kernel=self.path, kernel_op=self.op, **kwargs)

    def __call__(self, *args, dtype=None, stream=None, **named):
        import torch

        spec_args = self.info["args"]
        dims = self._dims([], {d: named.pop(d) for d in self.info["dims"] if d in named})
        given = list(args)
        for a in spec_args[len(given):]:
            if a["name"] in named:
                given.append(named.pop(a["name"]))
            elif a["kind"] == "scalar":
                given.append(None)  # the spec's default
        if named:
            raise _err("%s has no argument or dimension %s" % (self.op, ", ".join(sorted(named))))
        if len(given) != len(spec_args):
            raise _err("%s takes %d arguments (%s), got %d" % (self.op, len(spec_args), ", ".join(a["name"] for a in spec_args),
                                                               len(given)))
        ptrs, scalars, device = [], {}, None
        problem_dtype = dtype
        for a, x in zip(spec_args, given):
            if a["kind"] == "scalar":
                if x is not None:
                    scalars[a["name"]] = float(x)
                continue
            ptr, dt, dev = _pointer(x, a["name"])
            if a["dtype"] == "dtype":
                if problem_dtype is None:
                    problem_dtype = dt
                if dt != problem_dtype:
                    raise _err("%s is %s, the problem's dtype is %s" % (a["name"], dt, problem_dtype))
            elif dt is not None and dt != a["dtype"]:
                raise _err("%s must hold %s elements, got %s" % (a["name"], a["dtype"], dt))
            device = dev if device is None else device
            ptrs.append(ptr)
        problem_dtype = problem_dtype or self.info["dtypes"][0]
        if problem_dtype not in self.info["dtypes"]:
            raise _err("%s takes dtypes %s, not %s" % (self.op, ", ".join(self.info["dtypes"]), problem_dtype))
        index = device if device is not None else torch.cuda.current_device()
        with torch.cuda.device(index):
            s = stream if stream is not None else torch.cuda.current_stream(index).cuda_stream
            runtime(device=index).run(self.op, problem_dtype, dims, ptrs, scalars, int(s), [])
