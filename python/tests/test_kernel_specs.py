"""User kernel specs against Kernel Tuner's own semantics, without a GPU: for each example spec in
examples/kernels/, the number of valid configs `ktune space --count` gives equals what Kernel
Tuner's search space (kernel_tuner.searchspace.Searchspace, its brute-force builder) counts for the
same tune_params, restrictions and max_threads. kernel_tuner is a test-only dependency
(tools/test.sh installs it)."""
import json
import os
import re
import subprocess
from collections import OrderedDict

import pytest

from conftest import REPO

EXAMPLES = {
    # name: (problem shape, values of the names a restriction may read besides the parameters)
    "transpose": ("2048x4096", {"rows": 2048, "cols": 4096, "align": 16}),
    "reduction": ("16777216", {"n": 16777216, "align": 16}),
    "conv2d": ("4096x4096", {"w": 4096, "h": 4096, "align": 16}),
    "bias_gelu": ("4096x4096", {"rows": 4096, "cols": 4096, "align": 16}),
}


def ktune_binary():
    return os.environ.get("KTUNE_BIN", os.path.join(REPO, "build", "ktune"))


def spec_path(name):
    return os.path.join(REPO, "examples", "kernels", name, name + ".json")


def kernel_tuner_count(spec, known):
    from kernel_tuner.searchspace import Searchspace

    tune_params = OrderedDict((k, list(v)) for k, v in spec["params"].items())
    restrictions = []
    for r in spec.get("restrictions", []) + spec.get("constraints", []):
        # Kernel Tuner's restrictions see the parameters only: the problem's values go in as numbers.
        for name, value in known.items():
            r = re.sub(r"\b%s\b" % name, str(value), r)
        restrictions.append(r)
    space = Searchspace(tune_params, restrictions, spec.get("max_threads", 1024), framework="PythonConstraint",
                        solver_method="PC_BacktrackingSolver")
    return space.size


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_valid_config_count_matches_kernel_tuners_search_space(name):
    import kernel_tuner  # noqa: F401  required, not optional: tools/test.sh installs it

    shape, known = EXAMPLES[name]
    with open(spec_path(name)) as f:
        spec = json.load(f)
    out = subprocess.run([ktune_binary(), "space", "--count", "--kernel", spec_path(name), "--problem", shape],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    ours = int(out.stdout.strip())
    theirs = kernel_tuner_count(spec, known)
    assert ours == theirs, f"{name}: ktune counts {ours} valid configs, Kernel Tuner {theirs}"
    assert ours > 1


def test_python_restriction_syntax_counts_as_kernel_tuner_counts(tmp_path):
    """Restrictions in Python's own grammar, where it differs from C's and muparser's: a chained
    comparison, `not` below the comparisons, `in` / `not in` a list or tuple, and bitwise `&`
    binding tighter than `==`. ktune's count must equal Kernel Tuner's."""
    import kernel_tuner  # noqa: F401  required, not optional: tools/test.sh installs it

    (tmp_path / "k.cu").write_text("__global__ void k(float* y) { y[threadIdx.x] = 1.f; }\n")
    spec = {
        "ktune_kernel_spec": 1, "name": "restriction_grammar", "sources": ["k.cu"], "kernel": "k",
        "dims": ["n"],
        "params": {"block_size_x": [16, 32, 48, 64, 96, 128, 256, 512], "block_size_y": [1, 2, 4, 8, 16, 32],
                   "tile": [1, 2, 3, 4]},
        "restrictions": ["32 <= block_size_x * block_size_y <= 1024",
                         "not block_size_y == 1 or block_size_x in [64, 128, 256]",
                         "block_size_x & (block_size_x - 1) == 0 or tile not in (3,)",
                         "tile ** 2 <= block_size_y * 4 or tile == 1"],
        "launch": {"grid": ["ceil_div(n, block_size_x)"], "block": ["block_size_x", "block_size_y"]},
        "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n * 1024", "intent": "out"}],
        "check": {"none": "only counted here"},
    }
    path = tmp_path / "k.json"
    path.write_text(json.dumps(spec))
    out = subprocess.run([ktune_binary(), "space", "--count", "--kernel", str(path), "--problem", "4096"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    ours = int(out.stdout.strip())
    theirs = kernel_tuner_count(spec, {"n": 4096})
    assert ours == theirs, f"ktune counts {ours} valid configs, Kernel Tuner {theirs}"
    assert 1 < ours < 8 * 6 * 4


def test_inline_spec_with_kernel_tuners_names_loads_as_a_file_spec_does(tmp_path):
    import ktune

    source = "template <int B> __global__ void scale(const float* x, float* y, int n) {\n" \
             "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }\n"
    spec = {
        "name": "inline_scale", "source_text": source, "kernel": "scale<{block_size_x}>", "params_as": "template",
        "dims": ["n"], "tune_params": {"block_size_x": [32, 64, 128, 256]},
        "restrictions": ["block_size_x >= 64 and block_size_x % 64 == 0"],
        "launch": {"grid": ["ceil_div(n, block_size_x)"], "block": ["block_size_x"]},
        "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
                 {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
                 {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
        "check": {"none": "a doubling needs no reference in this test"},
    }
    k = ktune.Kernel(spec)
    assert k.op.startswith("inline_scale@")
    assert k.dims == ["n"]
    assert [a["name"] for a in k.info["args"]] == ["x", "y"], "n is computed, not passed"
    assert ktune.Kernel(spec).op == k.op, "the same inline spec is the same op"
    out = subprocess.run([ktune_binary(), "space", "--count", "--kernel", k.path, "--problem", "1000"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len([b for b in spec["tune_params"]["block_size_x"] if b >= 64 and b % 64 == 0])


def test_a_python_reference_draws_inputs_as_the_specs_fills_say(tmp_path, monkeypatch):
    """The random inputs a Python reference is given follow the spec's fills at each problem: a
    range of the dimensions, whole numbers in a float buffer, a permutation's distinct values; a
    ramp with a start, a step and a period stays a fill. A spec with setup kernels is refused (the
    reference would see the inputs before them)."""
    import numpy
    import ktune

    monkeypatch.setenv("KTUNE_DB", str(tmp_path / "k.db"))
    source = "template <int B> __global__ void gather(const int* idx, const float* v, const float* r, float* y, int n) {\n" \
             "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = v[i] + r[i] + idx[i]; }\n"
    spec = {
        "name": "pyref_fills", "source_text": source, "kernel": "gather<{B}>", "params_as": "template",
        "dims": ["n"], "tune_params": {"B": [64, 128]},
        "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
        "args": [{"name": "idx", "kind": "buffer", "dtype": "i32", "count": "n", "fill": {"permutation": "n * 3"}},
                 {"name": "v", "kind": "buffer", "dtype": "f32", "count": "n", "fill": {"random": [-5, "n // 100"], "integers": True}},
                 {"name": "r", "kind": "buffer", "dtype": "f32", "count": "n", "fill": {"ramp": {"start": 1, "step": 2, "mod": 4}}},
                 {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
                 {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
        "check": {"none": "replaced by the reference"},
    }
    seen = {}

    def ref(idx, v, r, y, n):
        seen.update(idx=idx.copy(), v=v.copy(), r=r.copy())
        return v + r + idx

    k = ktune.Kernel(spec, reference=ref)
    k._write_answers([1000], "f32")
    idx, v, r = seen["idx"], seen["v"], seen["r"]
    assert len(set(idx.tolist())) == 1000 and idx.min() >= 0 and idx.max() < 3000, "distinct, in [0, 3n)"
    assert (v == numpy.floor(v)).all() and v.min() >= -5 and v.max() < 10, "whole numbers in [-5, n // 100)"
    assert r[:6].tolist() == [1, 3, 5, 7, 1, 3], "1 + 2 (i % 4)"
    with_setup = dict(spec, setup={"kernel": "gather<64>", "launch": {"grid": [1], "block": [1]}})
    with pytest.raises(ktune.UsageError, match="setup kernels"):
        ktune.Kernel(with_setup, reference=ref)
    # A spec written for a Python reference needs no check of its own; post steps stay in the
    # derived spec (the kernel's outputs brought to the form fn's answers are in).
    bare = {k: v for k, v in spec.items() if k != "check"}
    assert ktune.Kernel(bare, reference=ref).op
    post = dict(spec, check={"none": "x", "post": {"kernel": "gather<64>", "launch": {"grid": [1], "block": [1]}}})
    post["check"].pop("none")
    derived = json.load(open(ktune.Kernel(post, reference=ref).path))
    assert "post" in derived["check"] and "answer" in derived["check"]


def test_a_python_reference_writes_inputs_and_answers_a_derived_spec_reads(tmp_path, monkeypatch):
    """Kernel(spec, reference=fn) without a GPU: the derived spec reads each random input and
    each output's answer from a file a problem; _write_answers calls fn with the arguments in the
    spec's order (the inputs as the kernel reads them: bf16-rounded here) and writes what it
    returns; a reference with the wrong number of outputs is refused."""
    import numpy
    import ktune

    monkeypatch.setenv("KTUNE_DB", str(tmp_path / "k.db"))
    source = "template <int B> __global__ void axpy(const float* x, float* y, int n, float a) {\n" \
             "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n"
    spec = {
        "name": "pyref_axpy", "source_text": source, "kernel": "axpy<{B}>", "params_as": "template",
        "dims": ["n"], "dtypes": ["bf16"], "tune_params": {"B": [64, 128]},
        "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
        "args": [{"name": "x", "kind": "buffer", "dtype": "bf16", "count": "n", "fill": {"random": [-2, 2]}},
                 {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout", "fill": "ramp"},
                 {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"},
                 {"name": "a", "kind": "scalar", "dtype": "f32", "default": 0.5}],
        "check": {"none": "replaced by the reference"},
    }
    seen = {}

    def axpy(x, y, n, a):
        seen.update(x=x.copy(), n=n, a=a)
        return a * x.astype(numpy.float64) + y

    k = ktune.Kernel(spec, reference=axpy)
    derived = json.load(open(k.path))
    assert set(derived["check"]) == {"answer"} and "y" in derived["check"]["answer"]
    assert "{n}" in derived["args"][0]["fill"]["file"], "the random input becomes a file a problem"
    assert derived["args"][1]["fill"] == "ramp", "a fixed fill stays"
    k._write_answers([1000], "bf16")
    assert seen["n"] == 1000 and isinstance(seen["n"], int) and seen["a"] == 0.5
    x = seen["x"]
    assert x.dtype == numpy.float32 and (x.view(numpy.uint32) & 0xFFFF).max() == 0, "x as bf16 values"
    assert -2 <= x.min() and x.max() <= 2
    files = os.listdir(os.path.dirname(derived["args"][0]["fill"]["file"]))
    assert "x_1000_bf16.npy" in files and "y_1000_bf16.answer.npy" in files
    y = numpy.load(os.path.join(os.path.dirname(derived["args"][0]["fill"]["file"]), "y_1000_bf16.answer.npy"))
    assert numpy.allclose(y, 0.5 * x + numpy.arange(1000), rtol=1e-6)
    bad = ktune.Kernel(spec, reference=lambda x, y, n, a: (y, y))
    assert bad.op != k.op, "another reference is another op: results checked by one are not the other's"

    def scaled(s):
        return lambda x, y, n, a: s * x + y
    assert ktune.Kernel(spec, reference=scaled(2)).op != ktune.Kernel(spec, reference=scaled(3)).op, "a closure's values count"
    assert ktune.Kernel(spec, reference=axpy, reference_version="2").op != k.op
    with pytest.raises(ktune.UsageError, match="returned 2 outputs"):
        bad._write_answers([1000], "bf16")


def test_a_struct_argument_is_ktunes_to_build_and_a_references_none(tmp_path, monkeypatch):
    """A struct passed by value ("kind": "struct") is built by ktune: the caller passes its buffers
    (and scalars) only, and a Python reference gets None in its place."""
    import numpy
    import ktune

    monkeypatch.setenv("KTUNE_DB", str(tmp_path / "k.db"))
    source = "struct P { const float* x; float* y; int n; float w; };\n" \
             "template <int B> __global__ void scale_p(P p, float s) {\n" \
             "  int i = blockIdx.x * B + threadIdx.x; if (i < p.n) p.y[i] = s * p.w * p.x[i]; }\n"
    spec = {
        "name": "py_struct", "source_text": source, "kernel": "scale_p<{B}>", "params_as": "template",
        "dims": ["n"], "tune_params": {"B": [64, 128]},
        "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["p", "scale"]},
        "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
                 {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
                 {"name": "p", "kind": "struct", "fields": [{"name": "x", "buffer": "x"}, {"name": "y", "buffer": "y"},
                                                            {"name": "n", "dtype": "i32", "value": "n"},
                                                            {"name": "w", "dtype": "f32", "value": 0.5}]},
                 {"name": "scale", "kind": "scalar", "dtype": "f32", "default": 1.0}],
    }
    got = {}

    def ref(x, y, p, scale):
        got.update(p=p, scale=scale)
        return scale * 0.5 * x

    k = ktune.Kernel(spec, reference=ref)
    assert [a["name"] for a in k.info["args"]] == ["x", "y", "scale"], "the struct is not the caller's"
    k._write_answers([1000], "f32")
    assert got["p"] is None and got["scale"] == 1.0
    out = subprocess.run([ktune_binary(), "space", "--kernel", k.path, "--problem", "1000"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert re.search(r"struct p\s+24 bytes, aligned 8", out.stdout), out.stdout


def test_a_texture_argument_is_ktunes_to_make_and_a_references_none(tmp_path, monkeypatch):
    """A texture object ("kind": "texture") is made by ktune over a buffer the caller passes: the
    caller passes the buffer only, and a Python reference gets None in the texture's place."""
    import ktune

    monkeypatch.setenv("KTUNE_DB", str(tmp_path / "k.db"))
    source = "template <int B> __global__ void fetch(cudaTextureObject_t t, float* y, int n) {\n" \
             "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 2.f * tex1Dfetch<float>(t, i); }\n"
    spec = {
        "name": "py_texture", "source_text": source, "kernel": "fetch<{B}>", "params_as": "template",
        "dims": ["n"], "tune_params": {"B": [64, 128]},
        "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["t", "y", "n_"]},
        "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
                 {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
                 {"name": "t", "kind": "texture", "buffer": "x"},
                 {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    }
    got = {}

    def ref(x, y, t, n):
        got.update(t=t, n=n)
        return 2 * x

    k = ktune.Kernel(spec, reference=ref)
    assert [a["name"] for a in k.info["args"]] == ["x", "y"], "the texture is not the caller's"
    k._write_answers([1000], "f32")
    assert got["t"] is None and got["n"] == 1000
    out = subprocess.run([ktune_binary(), "space", "--kernel", k.path, "--problem", "1000"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "texture t  linear over x: 1 x f32 channel, 1000 texels" in out.stdout, out.stdout


def test_an_address_table_is_ktunes_to_make_and_a_references_none(tmp_path, monkeypatch):
    """An address table ("kind": "addresses") holds the addresses of a buffer's slices, made by
    ktune: the caller passes the buffer only, and a Python reference gets None in its place."""
    import ktune

    monkeypatch.setenv("KTUNE_DB", str(tmp_path / "k.db"))
    source = "template <int B> __global__ void rows(const float* const* r, float* y, int w) {\n" \
             "  int i = blockIdx.x * B + threadIdx.x; if (i < w) y[blockIdx.y * w + i] = 2.f * r[blockIdx.y][i]; }\n"
    spec = {
        "name": "py_table", "source_text": source, "kernel": "rows<{B}>", "params_as": "template",
        "dims": ["h", "w"], "tune_params": {"B": [64, 128]},
        "launch": {"grid": ["ceil_div(w, B)", "h"], "block": ["B"], "args": ["r", "y", "w_"]},
        "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "h * w"},
                 {"name": "y", "kind": "buffer", "dtype": "f32", "count": "h * w", "intent": "out"},
                 {"name": "r", "kind": "addresses", "buffer": "x", "count": "h", "stride": "w"},
                 {"name": "w_", "kind": "scalar", "dtype": "i32", "value": "w"}],
    }
    got = {}

    def ref(x, y, r, w):
        got.update(r=r, w=w)
        return 2 * x

    k = ktune.Kernel(spec, reference=ref)
    assert [a["name"] for a in k.info["args"]] == ["x", "y"], "the table is not the caller's"
    k._write_answers([10, 100], "f32")
    assert got["r"] is None and got["w"] == 100
    out = subprocess.run([ktune_binary(), "space", "--kernel", k.path, "--problem", "10x100"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "address table r  10 entries of 8 bytes into x: element 0 + i * 100" in out.stdout, out.stdout
