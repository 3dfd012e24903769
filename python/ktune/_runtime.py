"""One ktune runtime per process and device (or per arch, for GPU-less queries), created lazily."""

import atexit
import os
import sys
import threading

from . import _ktune

_DTYPES = {
    "f32": "f32", "float32": "f32", "float": "f32", "fp32": "f32",
    "bf16": "bf16", "bfloat16": "bf16",
    "f16": "f16", "float16": "f16", "half": "f16", "fp16": "f16",
}

_lock = threading.Lock()
_options = {"db": None, "tables": (), "tf32x3": False, "measure_untuned": True, "shipped_tables": True,
            "cubin_cache": _ktune.DEFAULT_CUBIN_CACHE, "cubin_cache_max_mb": None, "neighbours": True}
_runtimes = {}
# Runtimes replaced by configure(): kept alive, since another thread may still be launching on
# one (the C++ Runtime must not be destroyed while calls are in flight).
_retired = []
# Prepared calls (Runtime.gemm_call / rows_call handles) of the fast paths in _gemm.py and _rows.py,
# keyed by everything that fixes a problem (op, dtype, shape, strides, device, scalars). Each holds
# the runtime it was made by, so it is emptied whenever the runtimes are replaced.
calls = {}
_MAX_CALLS = 4096


_torch_fast = None


def torch_fast():
    """(torch, torch.Tensor, torch.contiguous_format, current raw stream getter, current device
    getter, torch.empty_like) for the fast paths of _gemm.py and _rows.py, or () where they cannot run: torch not
    imported yet (not kept: it may be later), or without those private entry points."""
    global _torch_fast
    if _torch_fast is not None:
        return _torch_fast
    torch = sys.modules.get("torch")
    if torch is None:
        return ()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    get_device = getattr(torch._C, "_cuda_getDevice", None)
    _torch_fast = (torch, torch.Tensor, torch.contiguous_format, raw, get_device, torch.empty_like) if raw and get_device else ()
    return _torch_fast


# The C++ fast path (python/torch_ext.cpp, ktune._torch_ext): None until looked for, then the module
# or False; _torch_ext_why says why it is not used.
_ext = None
_torch_ext_why = "PyTorch not imported yet"


def torch_ext():
    """ktune._torch_ext where it was built against the PyTorch imported in this process and not
    turned off (KTUNE_TORCH_EXT=0); False otherwise. Looked for once torch is imported."""
    global _ext, _torch_ext_why
    if _ext is not None:
        return _ext
    torch = sys.modules.get("torch")
    if torch is None:
        return False  # not kept: torch may be imported later
    with _lock:
        if _ext is None:
            _ext, _torch_ext_why = _load_torch_ext(torch)
    return _ext


def _load_torch_ext(torch):
    if os.environ.get("KTUNE_TORCH_EXT", "1") == "0":
        return False, "turned off by KTUNE_TORCH_EXT=0"
    module, why = _import_torch_ext(torch.__version__)
    if module is None:
        return False, why
    # At exit, before the interpreter tears down: the C++ table's entries hold the runtimes, whose
    # destructors stamp the cubin cache's use marks.
    atexit.register(module.clear)
    return module, ""


def _import_torch_ext(torch_version):
    """(ktune._torch_ext built against torch_version, "") from the package, else from the per-user
    cache that `python -m ktune.build_torch_ext` fills where the package is not writable (a module
    in the package built for another PyTorch does not hide a rebuilt one there); (None, why not)."""
    import importlib.util
    import sysconfig

    from .build_torch_ext import cache_dir
    why = ("ktune._torch_ext is not built: `python -m ktune.build_torch_ext` builds it against this PyTorch "
           "(README, 'Python')")
    cached = os.path.join(cache_dir(torch_version), "_torch_ext" + sysconfig.get_config_var("EXT_SUFFIX"))
    for where in ("package", "cache"):
        try:
            if where == "package":
                if importlib.util.find_spec("ktune._torch_ext") is None:
                    continue
                from . import _torch_ext as module
            else:
                if not os.path.isfile(cached):
                    continue
                spec = importlib.util.spec_from_file_location("ktune._torch_ext", cached)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
        except ImportError as e:
            why = "ktune._torch_ext in the %s does not load (%s): rebuild it (python -m ktune.build_torch_ext)" % (where, e)
            continue
        if module.TORCH_VERSION == torch_version:
            sys.modules["ktune._torch_ext"] = module
            return module, ""
        why = ("ktune._torch_ext in the %s was built against PyTorch %s and this process runs %s: rebuild it "
               "(python -m ktune.build_torch_ext)" % (where, module.TORCH_VERSION, torch_version))
    return None, why


def torch_fast_path():
    """Which path serves ktune.gemm and the row ops on PyTorch tensors for problems seen before:
    'C++ (ktune._torch_ext)' or 'Python (<why not C++>)'."""
    ext = torch_ext()
    return "C++ (ktune._torch_ext)" if ext else "Python (%s)" % _torch_ext_why


def set_torch_ext(enabled):
    """Use the C++ fast path where it loads (True) or the Python one (False); for benchmarks and
    tests that compare the two. Returns torch_fast_path()."""
    global _ext, _torch_ext_why
    with _lock:
        _forget_calls()
        _ext, _torch_ext_why = (None, "PyTorch not imported yet") if enabled else (False, "turned off by set_torch_ext(False)")
    return torch_fast_path()


def _forget_calls():
    calls.clear()
    if _ext:
        _ext.clear()


def remember_call(key, value):
    """Keeps a prepared call for key (at most _MAX_CALLS: a process cycling through shapes does
    not grow without bound)."""
    with _lock:
        if len(calls) >= _MAX_CALLS:
            calls.clear()
        calls[key] = value


def dtype_name(dtype):
    """'f32', 'bf16' or 'f16' for a name ('float32', 'bfloat16', 'half', ...) or a torch dtype."""
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    key = name.lower()
    if key not in _DTYPES:
        raise _ktune.UsageError(
            "unknown dtype %r: ktune serves f32 (float32), bf16 (bfloat16) and f16 (float16)" % (dtype,))
    return _DTYPES[key]


def default_db_path():
    """The database ktune reads by default: $KTUNE_DB, else ~/.cache/ktune/ktune.db (XDG)."""
    return _ktune.default_db_path()


def devices():
    """The GPUs the driver sees, as dicts (ordinal, name, arch, sm_count, total_memory); [] without one
    (no driver, or a driver without a device). Raises KtuneError where a driver is installed but broken."""
    return list(_ktune.devices()[0])


def configure(db=None, tables=None, tf32x3=None, measure_untuned=None, cubin_cache=None, cubin_cache_max_mb=None,
              shipped_tables=None, neighbours=None):
    """Options of the runtimes created from now on (the ones made so far are replaced).

    db: a ktune database to read (default: default_db_path(); a missing file means none);
    tables: extra tuning tables (ktune.table/1 files); tf32x3: also the shipped gemm_tf32x3 table
    (FP32 on the TF32 tensor cores, runtime.h); measure_untuned: time candidates against cuBLAS on
    the first gemm() of a problem nobody tuned (default True); cubin_cache: the database file that
    keeps compiled kernels for later processes ('' for none; ktune.DEFAULT_CUBIN_CACHE, the
    default, for $KTUNE_CUBIN_CACHE or the per-user cache); cubin_cache_max_mb: the most MB of
    cubins it holds before the least recently used go (0: no limit; default
    $KTUNE_CUBIN_CACHE_MAX_MB, else 512); shipped_tables: read the tables shipped with ktune (default
    True; False serves only the database, the user's tables and first-use timing, as a GPU nobody
    tuned for would be); neighbours: with measure_untuned, also time the configs one choice away from
    each family's default and lender (default True; False compiles and times fewer kernels the first
    time a shape comes). An option left None keeps its value. Returns the options in force.
    """
    if cubin_cache_max_mb is not None and (isinstance(cubin_cache_max_mb, bool) or not isinstance(cubin_cache_max_mb, int)
                                           or cubin_cache_max_mb < 0):
        raise _ktune.UsageError("configure: cubin_cache_max_mb must be an integer >= 0 (0: no limit), not %r"
                                % (cubin_cache_max_mb,))
    with _lock:
        if db is not None:
            _options["db"] = str(db)
        if tables is not None:
            _options["tables"] = tuple(str(t) for t in tables)
        if tf32x3 is not None:
            _options["tf32x3"] = bool(tf32x3)
        if measure_untuned is not None:
            _options["measure_untuned"] = bool(measure_untuned)
        if cubin_cache is not None:
            _options["cubin_cache"] = str(cubin_cache)
        if cubin_cache_max_mb is not None:
            _options["cubin_cache_max_mb"] = int(cubin_cache_max_mb)
        if shipped_tables is not None:
            _options["shipped_tables"] = bool(shipped_tables)
        if neighbours is not None:
            _options["neighbours"] = bool(neighbours)
        _retired.extend(_runtimes.values())
        _runtimes.clear()
        _forget_calls()
        return dict(_options)


def reload():
    """Re-read the database and tables (after a tune(), say): later calls use fresh runtimes."""
    with _lock:
        _retired.extend(_runtimes.values())
        _runtimes.clear()
        _forget_calls()


def runtime(device=None, arch=None):
    """The process's ktune runtime (ktune._ktune.Runtime) for a CUDA device ordinal (default 0),
    or for an arch such as 'sm_90' without a GPU (queries only)."""
    key = ("arch", str(arch)) if arch else ("device", int(device or 0))
    with _lock:
        rt = _runtimes.get(key)
        if rt is not None:
            return rt
        opts = dict(_options)
    if not arch:
        gpus, why = _ktune.devices()
        if not gpus:
            raise _ktune.KtuneError("no GPU available (%s): best_config() needs arch=, e.g. arch='sm_90'" % why)
    db = opts["db"] if opts["db"] is not None else _ktune.default_db_path()
    made = _ktune.Runtime(db_path=db, tables=list(opts["tables"]), arch=str(arch or ""),
                          device=0 if arch else int(device or 0), tf32x3=opts["tf32x3"],
                          measure_untuned=opts["measure_untuned"], shipped_tables=opts["shipped_tables"],
                          cubin_cache=opts["cubin_cache"],
                          cubin_cache_max_mb=-1 if opts["cubin_cache_max_mb"] is None else opts["cubin_cache_max_mb"],
                          time_neighbours=opts["neighbours"])
    with _lock:
        # Another thread may have made one meanwhile: keep the first, so every caller shares it.
        return _runtimes.setdefault(key, made)


_ROW_OPS = ("softmax", "layernorm", "rmsnorm")
_OP_TABLE = {}  # name -> the op's description (_ktune.ops()), read once


def op_table(refresh=False):
    """The registered ops by name (their _ktune.ops() descriptions), read on first use (and again
    with refresh, after a user kernel's spec was loaded)."""
    if refresh:
        _OP_TABLE.clear()
    if not _OP_TABLE:
        _OP_TABLE.update({o["name"]: o for o in _ktune.ops()})
    return _OP_TABLE


def best_config(m, n=None, k=None, dtype="f32", layout="NN", arch=None, device=None, op="gemm"):
    """What ktune runs for C (m x n) = A (m x k) B (k x n), or with op='softmax', 'layernorm' or
    'rmsnorm' for a row op over m rows of n columns (no k, no layout), or for any other op
    (ktune.ops()) with its dimensions in its order (scale_add: best_config(n, op='scale_add')): a dict with provenance
    (exact, nearest, default_config, cublas), family, config (parameter -> value), source,
    tuned_problem, why, candidates, recorded times, ... (include/ktune/runtime.h, Selection;
    `ktune query --json`).

    arch ('sm_90', ...) answers for that arch from the shipped tables and your database without a
    GPU; otherwise the GPU `device` (default 0) is asked. layout: 'NN', 'NT', 'TN' or 'TT' (A, B
    row-major N or column-major T).
    """
    known = op_table()
    if op not in known:
        raise _ktune.UsageError("best_config: unknown op %r (known: %s)" % (op, ", ".join(known)))
    if op == "gemm":
        dims = (("m", m), ("n", n), ("k", k))
    elif op in _ROW_OPS:
        if k is not None:
            raise _ktune.UsageError("best_config: %s has rows and columns only (m, n); k must be left out" % op)
        dims = (("m (rows)", m), ("n (columns)", n))
    else:  # any other op: its dimensions in its order, as many as it has
        names = known[op]["dims"]
        given = [v for v in (m, n, k) if v is not None]
        if len(given) != len(names):
            raise _ktune.UsageError("best_config: %s has dimensions %s; got %d" % (op, ", ".join(names), len(given)))
        dims = tuple(zip(names, given))
    for name, v in dims:
        if isinstance(v, bool) or not isinstance(v, int) and not hasattr(v, "__index__"):
            raise _ktune.UsageError("best_config: %s must be an integer (got %r)" % (name, v))
    rt = runtime(device=device, arch=arch)
    if op == "gemm":
        return rt.best_config(int(m), int(n), int(k), dtype_name(dtype), str(layout))
    return rt.best_config_op(op, [int(v) for _, v in dims], dtype_name(dtype))
