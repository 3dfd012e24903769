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


_NUMPY_TYPES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "float32", "i64": "int64", "i32": "int32",
                "i16": "int16", "i8": "int8", "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8"}


def _as_elem(a, dtype):
    """a (float64 values) as the kernel reads them: rounded to dtype (bf16 kept in float32, its
    values rounded to nearest even on the 16 bits bfloat16 drops), integers floored and saturated."""
    import numpy

    if dtype[0] in "iu":
        info = numpy.iinfo(_NUMPY_TYPES[dtype])
        # Saturated as the C++ side stores (store_elem): NaN to 0, and at the 64-bit ends, where
        # float64 holds 2^63 / 2^64 but not the maxima, compared before converting.
        r = numpy.nan_to_num(numpy.rint(numpy.asarray(a, dtype=numpy.float64)), nan=0.0)
        out = numpy.clip(r, info.min, info.max).astype(_NUMPY_TYPES[dtype])
        out[r >= float(info.max)] = info.max
        out[r <= float(info.min)] = info.min
        return out
    x = numpy.asarray(a).astype(_NUMPY_TYPES[dtype])
    if dtype == "bf16":
        u = x.view(numpy.uint32).astype(numpy.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        x = u.astype(numpy.uint32).view(numpy.float32)
    return x


def _identity(fn, depth=0):
    """What a reference is, as far as Python shows it: its name, code, constants, defaults, the
    values it closes over and, for functools.partial, its function and arguments. Functions it
    calls are not followed: Kernel's reference_version names a change there."""
    import functools

    if depth > 4:
        return ""
    if isinstance(fn, functools.partial):
        return "partial(%s, %r, %r)" % (_identity(fn.func, depth + 1), fn.args, sorted(fn.keywords.items()))
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)
    what = getattr(fn, "__qualname__", type(fn).__qualname__)
    if code is not None:
        what += repr(code.co_code) + repr(code.co_consts) + repr(code.co_names)
    what += repr(getattr(fn, "__defaults__", None)) + repr(getattr(fn, "__kwdefaults__", None))
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        what += _identity(v, depth + 1) if callable(v) else repr(v)
    return what


def _answered_spec(spec, base_dir, reference):
    """The spec with a Python reference: every input filled at random gets a file a problem (the
    inputs the reference is given) and the check reads each output's answer from a file a problem
    (docs/KERNEL_SPEC.md, "check": "answer"); Kernel.tune writes both before tuning. Returns the
    derived spec (a dict, for _spec_file), the folder its relative paths start from, where the
    files go, and the random fills replaced (argument -> (lo, hi))."""
    if not isinstance(spec, dict):
        path = os.path.abspath(os.fspath(spec))
        with open(path) as f:
            spec = json.load(f)
        base_dir = base_dir or os.path.dirname(path)
    spec = dict(spec)
    for k, v in _ALIASES.items():
        if k in spec and v not in spec:
            spec[v] = spec.pop(k)
    if "setup" in spec:
        # Its kernels rewrite the inputs on the GPU after they are filled: the reference would be
        # given the inputs before them.
        raise _err("the spec has setup kernels, which make its inputs on the GPU: check it with its own "
                   "reference kernel (check.reference), not a Python one")
    # The derived spec's folder, hence its version, follows the spec and the reference: a changed
    # reference is another op, whose results are not the old one's.
    who = reference if isinstance(reference, str) else _identity(reference)
    key = hashlib.sha256((json.dumps(spec, sort_keys=True) + who).encode()).hexdigest()[:12]
    folder = os.path.join(os.path.dirname(default_db_path()), "specs", "answers", "%s-%s" % (spec.get("name", "kernel"), key))
    os.makedirs(folder, exist_ok=True)
    shape = "x".join("{%s}" % d for d in spec.get("dims", []))
    args, randoms, answers = [], {}, {}
    for a in spec.get("args", []):
        a = dict(a)
        intent = a.get("intent", "in")
        if a.get("kind", "buffer") == "buffer" and intent in ("in", "inout"):
            fill = a.get("fill", "random")
            if fill in ("random", "permutation") or (isinstance(fill, dict) and ("random" in fill or "permutation" in fill)):
                # Drawn in Python (the reference is given them), from the range the problem gives
                # (kernel_problem_args evaluates it): a file a problem.
                randoms[a["name"]] = True
                a["fill"] = {"file": os.path.join(folder, "%s_%s_{dtype}.npy" % (a["name"], shape))}
        if a.get("kind", "buffer") == "buffer" and intent in ("out", "inout"):
            answers[a["name"]] = os.path.join(folder, "%s_%s_{dtype}.answer.npy" % (a["name"], shape))
        args.append(a)
    if not answers:
        raise _err("the spec has no output (intent out or inout) to check")
    # Tolerances stay, and post steps (outputs in no fixed order: the answers are fn's, in one form;
    # the kernel's outputs are brought to it before the compare).
    check = {k: v for k, v in dict(spec.get("check", {})).items() if k in ("atol", "rtol", "post")}
    check["answer"] = answers
    spec["args"], spec["check"] = args, check
    return spec, base_dir, folder, randoms


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

    reference=fn checks the kernel against Python instead of the spec's check (as Kernel Tuner's
    `answer`): fn gets the spec's arguments in order (inputs as numpy arrays of the values the
    kernel reads, outputs as zeroed arrays, scalars as numbers, None for one that follows the
    config) and returns the outputs; tune() writes each problem's inputs and fn's outputs as
    files that a derived spec reads (its
    "check": {"answer": ...}), so results are stored under that spec's version: tune and call
    through the same Kernel(spec, reference=fn). The version follows fn's code, constants,
    defaults and closure; reference_version="..." marks a change Python cannot see (a function fn
    calls).
    """

    def __init__(self, spec, base_dir=None, reference=None, reference_version=None):
        self.reference, self._randoms = reference, {}
        if reference is not None:
            # A Python reference: answers written a problem at a time by tune() (_write_answers).
            if not callable(reference):
                raise _err("reference must be callable (got %s)" % type(reference).__name__)
            # The spec as written, loaded too: its fills at each problem (a range of the dimensions,
            # a permutation's range) are what the random inputs are drawn from. Its own check (one
            # a Python reference replaces, and may lack) is not this op's concern.
            if isinstance(spec, dict):
                written, where = dict(spec), base_dir
            else:
                with open(os.fspath(spec)) as f:
                    written, where = json.load(f), base_dir or os.path.dirname(os.path.abspath(os.fspath(spec)))
            written["check"] = {"none": "the fills of a spec a Python reference checks"}
            self._fills_op = _ktune.load_kernel_spec(_spec_file(written, where))
            spec, base_dir, self._answers_dir, self._randoms = _answered_spec(
                spec, base_dir, reference if reference_version is None else "%s@%s" % (_identity(reference), reference_version))
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

    def _write_answers(self, dims, dtype):
        """The inputs of one problem and the reference's outputs for them, as the files the
        derived spec names: each input as the kernel reads it, the reference called with every
        argument in the spec's order (inputs as numpy arrays, outputs as zeroed arrays, scalars
        as numbers), returning the outputs (one array; a tuple or list in order; a dict by name;
        or None when it wrote the arrays it was given)."""
        import numpy

        rng = numpy.random.default_rng(list(dims) + [len(dtype)])
        tag = "x".join(str(d) for d in dims) + "_" + dtype
        call, outputs = [], []
        fills = {f["name"]: f for f in _ktune.kernel_problem_args(self._fills_op, list(dims), dtype)}
        for a in _ktune.kernel_problem_args(self.op, list(dims), dtype):
            if a["kind"] in ("struct", "texture", "surface", "address table", "tensor map"):  # ktune builds it from the problem: the reference gets None
                call.append(None)
                continue
            if a["kind"] == "scalar":  # integer scalars as ints (sizes, for reshape); None: follows the config
                v = a["value"]
                call.append(v if v is None else int(v) if a["dtype"][0] in "iu" else v)
                continue
            if a["intent"] == "temp":
                continue
            n, t = a["count"], a["dtype"]
            if a["name"] in self._randoms:
                f = fills[a["name"]]
                if f["fill"] == "permutation":  # distinct values in [0, range)
                    if (f["range"] or n) < n:
                        raise _err("%s: a permutation of [0, %d) has no %d distinct elements" % (a["name"], f["range"], n))
                    x = _as_elem(rng.choice(f["range"] or n, size=n, replace=False).astype(numpy.float64), t)
                else:
                    lo, hi = f["lo"], f["hi"]
                    u = lo + (hi - lo) * rng.random(n)
                    x = _as_elem(numpy.floor(u) if t[0] in "iu" or f["integers"] else u, t)
                numpy.save(os.path.join(self._answers_dir, "%s_%s.npy" % (a["name"], tag)), x)
            elif a["intent"] == "out":
                x = numpy.zeros(n, dtype=_NUMPY_TYPES[t])
            elif a["fill"] == "file":
                f = a["file"]
                for d, v in zip(self.info["dims"], dims):
                    f = f.replace("{%s}" % d, str(v))
                f = f.replace("{dtype}", dtype)
                if "raw_dtype" not in a:
                    data = numpy.load(f)
                elif a["raw_dtype"] == "bf16":  # 16-bit words: the high half of a float32
                    data = (numpy.fromfile(f, dtype=numpy.uint16).astype(numpy.uint32) << 16).view(numpy.float32)
                else:
                    data = numpy.fromfile(f, dtype=_NUMPY_TYPES[a["raw_dtype"]])
                data = numpy.asarray(data, dtype=numpy.float64).ravel()
                if data.size < n:
                    raise _err("fill file '%s' holds %d elements, %d are needed" % (f, data.size, n))
                x = _as_elem(data[:n], t)
            else:
                base = {"zeros": 0.0, "ones": 1.0, "constant": a["value"]}
                if a["fill"] == "ramp":  # start + step * (i % mod)
                    i = numpy.arange(n, dtype=numpy.int64)
                    x = _as_elem(a["start"] + a["step"] * (i % a["mod"] if a["mod"] else i).astype(numpy.float64), t)
                else:
                    x = _as_elem(numpy.full(n, base[a["fill"]]), t)
            call.append(x)
            if a["intent"] in ("out", "inout"):
                outputs.append((a["name"], x, t))
        got = self.reference(*call)
        if got is None:
            got = [x for _, x, _ in outputs]
        elif isinstance(got, dict):
            missing = [name for name, _, _ in outputs if name not in got]
            if missing:
                raise _err("the reference returned no %s" % ", ".join(missing))
            got = [got[name] for name, _, _ in outputs]
        elif not isinstance(got, (tuple, list)):
            got = [got]
        if len(got) != len(outputs):
            raise _err("the reference returned %d outputs, the spec has %d (%s)" % (len(got), len(outputs),
                                                                                  ", ".join(n for n, _, _ in outputs)))
        for (name, x, t), y in zip(outputs, got):
            y = numpy.asarray(y, dtype=numpy.float64).ravel()
            if y.size != x.size:
                raise _err("the reference's %s holds %d elements, the problem's %d" % (name, y.size, x.size))
            numpy.save(os.path.join(self._answers_dir, "%s_%s.answer.npy" % (name, tag)), _as_elem(y, t))

    def tune(self, problems, budget_seconds=30.0, strategy="model", dtype=None, **kwargs):
        """Tunes the kernel for problems (tuples or 'AxB' strings of its dimensions in order) with
        ktune.tune's options; returns its summary. With a Python reference, its answers for each
        problem are written first."""
        from ._tune import tune

        if isinstance(problems, (str, tuple)):
            problems = [problems]
        shapes = []
        for p in problems:
            if isinstance(p, str):
                p = [int(v) for v in p.lower().split("x")]
            shapes.append("x".join(str(v) for v in self._dims(list(p), {})))
            if self.reference is not None:
                self._write_answers(self._dims(list(p), {}), dtype or self.info["dtypes"][0])
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
