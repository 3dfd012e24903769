"""Tests that need no GPU: import, version, best_config against the shipped tables, argument errors."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import ktune
from conftest import REPO, requires_no_gpu


def project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(ktune VERSION ([0-9.]+)", f.read()).group(1)


def test_version():
    assert ktune.__version__ == project_version() == "0.1.0"


def test_imports_without_torch():
    code = "import sys; sys.modules['torch'] = None; import ktune; print(ktune.__version__); print(hasattr(ktune, '_torch_ops'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [ktune.__version__, "False"]


def test_exceptions_are_python_ones():
    assert issubclass(ktune.UsageError, ValueError)
    assert issubclass(ktune.KtuneError, RuntimeError)


def table(name):
    with open(os.path.join(REPO, "configs", "tables", name)) as f:
        return json.load(f)["entries"]


# The tables the runtime loads by default for each dtype: where two hold the same problem, the entry
# with the faster record is the exact choice (db/lending.cpp).
SHIPPED = {"f32": ("sm_90.json",), "bf16": ("sm_90-half.json", "sm_90-half-wgmma.json"),
           "f16": ("sm_90-half.json", "sm_90-half-wgmma.json")}


def shipped_entries(dtype):
    best = {}
    for name in SHIPPED[dtype]:
        for e in table(name):
            key = (e["layout"], e["m"], e["n"], e["k"])
            if e["dtype"] == dtype and (key not in best or e["time_ms"] < best[key]["time_ms"]):
                best[key] = e
    return list(best.values())


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_best_config_shipped_table(dtype):
    entries = shipped_entries(dtype)
    assert entries, "no %s entries in %s" % (dtype, SHIPPED[dtype])
    exact = 0
    for e in entries:
        s = ktune.best_config(e["m"], e["n"], e["k"], dtype=dtype, layout=e["layout"], arch="sm_90")
        key = ktune._ktune.problem_key(e["m"], e["n"], e["k"], dtype, e["layout"])
        assert s["problem"] == key and s["arch"] == "sm_90"
        for field in ("provenance", "family", "config", "why", "source", "tuned_problem", "candidates"):
            assert field in s
        assert s["provenance"] in ("exact", "cublas"), s
        assert s["tuned_problem"] == key
        assert "shipped table" in s["source"], s["source"]
        if s["provenance"] == "exact":
            exact += 1
            assert s["family"] == e["family"]
            # The runtime's canonical form may add parameters at their defaults (e.g. PACK 0).
            assert {k: s["config"].get(k) for k in e["config"]} == e["config"], (s["config"], e["config"])
        if e["cublas_ms"] / e["time_ms"] > 1.1:  # clearly faster than cuBLAS when tuned
            assert s["provenance"] == "exact", s
    assert exact > 0


def test_best_config_dtype_names():
    e = [e for e in table("sm_90-half.json") if e["dtype"] == "bf16"][0]
    a = ktune.best_config(e["m"], e["n"], e["k"], dtype="bf16", arch="sm_90")
    b = ktune.best_config(e["m"], e["n"], e["k"], dtype="bfloat16", arch="sm_90")
    assert a["problem"] == b["problem"]
    assert "/bf16/" in a["problem"]


def test_best_config_untuned_shape():
    s = ktune.best_config(1000, 777, 333, dtype="f32", arch="sm_90")
    assert s["provenance"] in ("nearest", "default_config", "cublas")
    assert s["why"]
    assert isinstance(s["candidates"], list)


@pytest.mark.parametrize("kwargs,pattern", [
    (dict(dtype="f64"), "dtype"),
    (dict(dtype="tf32"), "tf32"),
    (dict(layout="XY"), "layout"),
    (dict(arch="sm_12"), "sm_12"),
])
def test_best_config_errors(kwargs, pattern):
    args = dict(arch="sm_90")
    args.update(kwargs)
    with pytest.raises(ktune.UsageError, match=pattern):
        ktune.best_config(256, 256, 256, **args)


def test_best_config_bad_sizes():
    with pytest.raises(ValueError):
        ktune.best_config(0, 256, 256, arch="sm_90")
    with pytest.raises(ValueError):
        ktune.best_config("256", 256, 256, arch="sm_90")


@requires_no_gpu
def test_best_config_without_gpu_needs_arch():
    with pytest.raises(ktune.KtuneError, match="arch"):
        ktune.best_config(256, 256, 256)


class FakeCuda:
    """An object with __cuda_array_interface__ at a made-up address: argument checks come first,
    so the errors below are raised before anything touches a GPU."""

    def __init__(self, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0x10000, False),
                                         "strides": strides, "version": 3, "stream": None}


def test_gemm_shape_mismatch():
    with pytest.raises(ktune.UsageError, match="shape mismatch"):
        ktune.gemm(FakeCuda((4, 5)), FakeCuda((6, 7)), out=FakeCuda((4, 7)))


def test_gemm_not_2d():
    with pytest.raises(ktune.UsageError, match="2-D"):
        ktune.gemm(FakeCuda((4, 5, 2)), FakeCuda((5, 7)), out=FakeCuda((4, 7)))


def test_gemm_bad_dtype():
    with pytest.raises(ktune.UsageError, match="typestr"):
        ktune.gemm(FakeCuda((4, 5), "<f8"), FakeCuda((5, 7), "<f8"), out=FakeCuda((4, 7), "<f8"))


def test_gemm_mixed_dtypes():
    with pytest.raises(ktune.UsageError, match="one dtype"):
        ktune.gemm(FakeCuda((4, 5), "<f4"), FakeCuda((5, 7), "<f2"), out=FakeCuda((4, 7)))


def test_gemm_out_shape():
    with pytest.raises(ktune.UsageError, match="out has shape"):
        ktune.gemm(FakeCuda((4, 5)), FakeCuda((5, 7)), out=FakeCuda((7, 4)))


def test_gemm_out_not_row_major():
    with pytest.raises(ktune.UsageError, match="row-major"):
        ktune.gemm(FakeCuda((4, 5)), FakeCuda((5, 7)), out=FakeCuda((4, 7), strides=(4, 16)))


def test_gemm_odd_strides_refused_without_torch():
    with pytest.raises(ktune.UsageError, match="neither row- nor column-major"):
        ktune.gemm(FakeCuda((4, 5), strides=(40, 8)), FakeCuda((5, 7)), out=FakeCuda((4, 7)))


def test_gemm_beta_needs_out():
    with pytest.raises(ktune.UsageError, match="out="):
        ktune.gemm(FakeCuda((4, 5)), FakeCuda((5, 7)), beta=1.0)


def test_gemm_host_arrays_refused():
    np = pytest.importorskip("numpy")
    a, b = np.ones((4, 5), np.float32), np.ones((5, 7), np.float32)
    # With PyTorch: a CPU tensor ("on cpu"); without: not a CUDA array.
    with pytest.raises(ktune.UsageError, match="cpu|CUDA|cuda_array_interface"):
        ktune.gemm(a, b)


def test_gemm_plain_objects_refused():
    with pytest.raises(ktune.UsageError):
        ktune.gemm([[1.0]], [[1.0]])


def test_tune_problem_parsing_errors():
    with pytest.raises(ktune.UsageError, match="MxNxK"):
        ktune.tune(["4096x4096"], progress=False)
    with pytest.raises(ktune.UsageError, match="dtype"):
        ktune.tune([(64, 64, 64, "f64")], progress=False)


@requires_no_gpu
def test_tune_without_gpu_fails_clearly(tmp_path):
    with pytest.raises(ktune.KtuneError, match="no GPU"):
        ktune.tune(["64x64x64"], budget_seconds=1, db=str(tmp_path / "t.db"), progress=False)


FAKE_CLI = textwrap.dedent("""\
    #!{python}
    # Stands in for `ktune tune`: appends two trials per problem to --trials-out, prints a summary.
    import json, sys
    args = sys.argv[1:]
    assert args[0] == "tune", args
    log = args[args.index("--trials-out") + 1]
    dtype = args[args.index("--dtype") + 1]
    probs = [args[i + 1] for i, a in enumerate(args) if a == "--problem"]
    with open(log, "a") as f:
        for p in probs:
            for t in (1.0, 2.0):
                f.write(json.dumps({{"problem": "gemm/%s/NN/%s/a16" % (dtype, p), "status": "ok", "tflops": t}}) + "\\n")
    print(json.dumps({{"device": {{"name": "fake"}}, "wall_s": 0.5, "argv": args,
                      "problems": [{{"problem": "gemm/%s/NN/%s/a16" % (dtype, p), "tflops": 2.0}} for p in probs]}}))
    """)


def test_tune_drives_the_program(tmp_path, monkeypatch, capsys):
    cli = tmp_path / "ktune"
    cli.write_text(FAKE_CLI.format(python=sys.executable))
    cli.chmod(0o755)
    monkeypatch.setenv("KTUNE_CLI", str(cli))
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the plain text bar
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    trials = tmp_path / "trials.jsonl"
    r = ktune.tune(["64x64x64", (128, 64, 32), {"m": 32, "n": 32, "k": 32, "dtype": "bf16"}], budget_seconds=2,
                   families=["gemm_simt"], db=str(tmp_path / "x.db"), trials_out=str(trials))
    assert [p["problem"] for p in r["problems"]] == ["gemm/f32/NN/64x64x64/a16", "gemm/f32/NN/128x64x32/a16",
                                                     "gemm/bf16/NN/32x32x32/a16"]
    assert len(r["runs"]) == 2  # one program run per dtype
    argv = r["runs"][0]["argv"]
    assert argv[argv.index("--budget-seconds") + 1] == "2.0"
    assert argv[argv.index("--family") + 1] == "gemm_simt"
    assert argv[argv.index("--db") + 1] == str(tmp_path / "x.db")
    assert len(trials.read_text().splitlines()) == 6
    err = capsys.readouterr().err
    assert "3/3" in err and "ktune tune [" in err


def test_tune_reports_program_failure(tmp_path, monkeypatch):
    cli = tmp_path / "ktune"
    cli.write_text("#!/bin/sh\necho 'ktune: no GPU available, nothing can be tuned: test' >&2\nexit 1\n")
    cli.chmod(0o755)
    monkeypatch.setenv("KTUNE_CLI", str(cli))
    with pytest.raises(ktune.KtuneError, match="no GPU available"):
        ktune.tune("64x64x64", progress=False)


def test_cli_found():
    # The program ktune.tune drives: installed in the package, or the build tree's.
    from ktune._tune import find_cli
    p = find_cli()
    assert os.access(p, os.X_OK), p


def test_configure_cubin_cache(tmp_path):
    # The cubin cache's options reach the runtime: a file of one's own, or none, and a size limit;
    # bad limits are refused before any runtime is made, and by the runtime itself.
    import ktune
    try:
        opts = ktune.configure(cubin_cache=str(tmp_path / "cubins.db"), cubin_cache_max_mb=64)
        assert opts["cubin_cache"] == str(tmp_path / "cubins.db")
        assert opts["cubin_cache_max_mb"] == 64
        assert ktune.runtime(arch="sm_90").arch == "sm_90"
        assert ktune.configure(cubin_cache="")["cubin_cache"] == ""
        assert ktune.configure()["cubin_cache_max_mb"] == 64  # None keeps the value
        for bad in (-1, 1.5, True, "64"):
            with pytest.raises(ktune.UsageError, match="cubin_cache_max_mb"):
                ktune.configure(cubin_cache_max_mb=bad)
        with pytest.raises(ktune.UsageError, match="cubin_cache_max_mb"):
            ktune._ktune.Runtime(arch="sm_90", cubin_cache_max_mb=-5)
    finally:
        ktune.configure(cubin_cache=ktune.DEFAULT_CUBIN_CACHE)
        ktune._runtime._options["cubin_cache_max_mb"] = None  # configure() has no "back to the default" limit


def test_configure_shipped_tables(tmp_path):
    # shipped_tables=False: the runtime knows only the database (here none) and the user's tables,
    # as on a GPU nobody tuned for (bench/attention_vs_torch.py --untuned); True brings them back.
    import ktune
    try:
        ktune.configure(db=str(tmp_path / "none.db"))
        shipped = ktune.runtime(arch="sm_90").entries
        assert shipped > 0
        assert ktune.configure(shipped_tables=False)["shipped_tables"] is False
        assert ktune.runtime(arch="sm_90").entries == 0
        assert ktune.configure()["shipped_tables"] is False  # None keeps the value
        assert ktune.configure(shipped_tables=True)["shipped_tables"] is True
        assert ktune.runtime(arch="sm_90").entries == shipped
    finally:
        ktune.configure(shipped_tables=True)
        ktune._runtime._options["db"] = None  # configure() has no "back to the default" database
        ktune._runtime.reload()


def test_configure_neighbours():
    # neighbours=False: first use at a shape nobody tuned offers the lenders and defaults only (an
    # untuned bf16 GEMM offers gemm_wgmma's lender's neighbours otherwise); True brings them back.
    import ktune
    try:
        def neighbours():
            s = ktune.best_config(3072, 3072, 3072, dtype="bf16", arch="sm_90")
            return sum(1 for c in s["candidates"] if c["neighbour"]), len(s["candidates"])
        with_n, all_with = neighbours()
        assert with_n > 0
        assert ktune.configure(neighbours=False)["neighbours"] is False
        assert neighbours() == (0, all_with - with_n)
        assert ktune.configure()["neighbours"] is False  # None keeps the value
        assert ktune.configure(neighbours=True)["neighbours"] is True
        assert neighbours() == (with_n, all_with)
    finally:
        ktune.configure(neighbours=True)


def test_buffers_call_names_its_selection():
    """A prepared call says what it runs (the bench's --explain reads it): for an attention prompt
    nobody tuned, without a GPU, attention_wgmma lent or by default, its candidates listed with the
    neighbours first use would time, for that call's problem (its strides and causal layout)."""
    rt = ktune._ktune.Runtime(arch="sm_90")
    B, H, Hk, S, D = 1, 12, 12, 128, 64
    strides = [S * H * D, H * D, D] * 4  # q, k, v, out laid out (batch, seq, heads, head dim)
    call = rt.buffers_call("attention", "bf16", [B, H, Hk, S, S, D], {"scale": 0.0}, strides, "causal")
    s = call.selection
    assert s["problem"] == call.key == "attention/bf16/causal/1x12x12x128x128x64/a16", s["problem"]
    assert s["family"] == "attention_wgmma", s
    assert s["config"] == s["candidates"][0]["config"], s
    assert any(c["neighbour"] for c in s["candidates"]), s["candidates"]
    full = rt.buffers_call("attention", "bf16", [B, H, Hk, S, S, D], {"scale": 0.0}, strides, "full")
    assert full.selection["problem"] == "attention/bf16/full/1x12x12x128x128x64/a16"


def test_best_config_answers_for_every_op():
    """best_config(op=...) asks about the row ops too (rows, columns; no k, no layout), from the
    shipped tables, without a GPU; a wrong op or a k for a row op is a UsageError."""
    for op in ("softmax", "layernorm", "rmsnorm"):
        s = ktune.best_config(16, 4096, op=op, dtype="bf16", arch="sm_90")
        assert s["problem"] == "%s/bf16/16x4096/a16" % op, s
        assert s["family"].startswith(op + "_"), s
        assert s["provenance"] in ("exact", "nearest", "default_config"), s
    assert ktune.best_config(1024, 1024, 1024, arch="sm_90")["problem"] == "gemm/f32/NN/1024x1024x1024/a16"
    with pytest.raises(ktune.UsageError, match="k must be left out"):
        ktune.best_config(16, 4096, 8, op="softmax", arch="sm_90")
    with pytest.raises(ktune.UsageError, match="unknown op .flash_decode. .known: gemm, softmax"):
        ktune.best_config(16, 4096, op="flash_decode", arch="sm_90")


def test_ops_lists_every_op_with_its_operands():
    ops = {o["name"]: o for o in ktune.ops()}
    assert {"gemm", "softmax", "layernorm", "rmsnorm", "scale_add"} <= set(ops)
    s = ops["scale_add"]
    assert s["runner"] == "buffers" and s["dims"] == ["n"]
    assert s["operands"] == [("x", False), ("y", False), ("out", True)]
    assert [n for n, _ in s["scalars"]] == ["alpha", "beta"]
    # The strides each op takes, by name (ktune.run passes an N-dimensional operand's own);
    # scale_add's operands are flat, GEMM's and the row ops' matrices have leading dimensions.
    assert s["shapes"] == {} and s["strides"] == []
    assert ops["gemm"]["strides"] == ["lda", "ldb", "ldc"] and ops["gemm"]["shapes"] == {}
    assert ops["softmax"]["strides"] == ["ldx", "ldy"]


def test_best_config_of_any_op_without_gpu():
    s = ktune.best_config(1 << 20, op="scale_add", dtype="bf16", arch="sm_90")
    assert s["provenance"] == "default" and s["problem"] == "scale_add/bf16/1048576/a16"
    assert s["family"] in ("scale_add_simple", "scale_add_vec")
    r = ktune.best_config(4096, 4096, op="softmax", dtype="bf16", arch="sm_90")
    assert r["family"].startswith("softmax_")
    with pytest.raises(ktune.UsageError, match="dimensions n"):
        ktune.best_config(4, 4, op="scale_add", arch="sm_90")
    with pytest.raises(ktune.UsageError, match="unknown op"):
        ktune.best_config(4, op="scale_ad", arch="sm_90")


def test_torch_fast_path_says_which_path_serves():
    import sys
    from ktune import _runtime
    path = ktune.torch_fast_path()
    assert path.startswith("Python (") or path == "C++ (ktune._torch_ext)"
    if "torch" not in sys.modules:
        assert path == "Python (PyTorch not imported yet)"
    try:
        assert _runtime.set_torch_ext(False) == "Python (turned off by set_torch_ext(False))"
        assert not _runtime.torch_ext()
    finally:
        _runtime.set_torch_ext(True)


def test_build_torch_ext_command_builds_against_the_given_torch():
    """python -m ktune.build_torch_ext: the command compiles the source tree's torch_ext.cpp with
    PyTorch's headers as system headers, its ABI and version, and links its libraries with an rpath."""
    import sysconfig
    import types
    from ktune import build_torch_ext as b
    src, src_dir = b.sources()
    assert src == os.path.join(REPO, "python", "torch_ext.cpp") and src_dir == os.path.join(REPO, "python")
    torch = types.SimpleNamespace(__version__="9.9.9+cu999", _C=types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=False))
    ext = types.SimpleNamespace(include_paths=lambda device_type="cpu": ["/t/include", "/cuda/include"][: 2 if device_type == "cuda" else 1],
                                library_paths=lambda device_type="cpu": ["/t/lib"])
    cmd = b.command(torch, ext, "/out", src, src_dir, "c++")
    assert cmd[0] == "c++" and src in cmd
    joined = " ".join(cmd)
    for part in ("-isystem /t/include", "-isystem /cuda/include", "-D_GLIBCXX_USE_CXX11_ABI=0",
                 '-DKTUNE_TORCH_VERSION="9.9.9+cu999"', "-L/t/lib", "-Wl,-rpath,/t/lib", "-lc10_cuda", "-ltorch_cuda", "-ltorch_python",
                 "-I" + src_dir):
        assert part in joined, part
    assert cmd[-1] == "/out/_torch_ext" + sysconfig.get_config_var("EXT_SUFFIX")
    assert b.cache_dir("9.9.9").endswith(os.path.join("ktune", "torch_ext", "9.9.9"))


def test_build_torch_ext_without_torch_says_so():
    try:
        import torch  # noqa: F401
        pytest.skip("PyTorch is installed here")
    except ImportError:
        pass
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-m", "ktune.build_torch_ext"], capture_output=True, text=True, env=env)
    assert done.returncode == 2, done.stderr
    assert "PyTorch is not importable" in done.stderr


def test_build_torch_ext_with_a_cpu_only_torch_says_so(tmp_path):
    """A PyTorch built without CUDA (pip's CPU wheels, Debian's python3-torch) has no c10_cuda or
    torch_cuda to link: the builder says so and exits 2 instead of running a compiler that fails."""
    fake = tmp_path / "torch"
    (fake / "utils").mkdir(parents=True)
    (fake / "__init__.py").write_text("import types\n__version__ = '9.9.9+cpu'\nversion = types.SimpleNamespace(cuda=None)\n")
    (fake / "utils" / "__init__.py").write_text("")
    (fake / "utils" / "cpp_extension.py").write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    done = subprocess.run([sys.executable, "-m", "ktune.build_torch_ext", "--print"], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "PyTorch 9.9.9+cpu is built without CUDA" in done.stderr


def test_a_torch_before_custom_op_imports_ktune_without_its_ops(tmp_path):
    """A PyTorch older than torch.library.custom_op (2.4): ktune imports, says why torch.ops.ktune.*
    are missing, and its functions are there."""
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("import types\n__version__ = '1.13.0'\nlibrary = types.SimpleNamespace()\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    done = subprocess.run([sys.executable, "-W", "always", "-c", "import ktune; print(callable(ktune.attention_decode))"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert "PyTorch 1.13.0 has no torch.library.custom_op" in done.stderr
