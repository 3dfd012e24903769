"""ktune.gemm and torch.ops.ktune.gemm against torch.matmul on a GPU (skipped without one).

Tolerances (README, "Python"; docs/TEMPLATES.md, "Verification"): relative Frobenius error against
the product of the same (rounded) inputs in FP64: f32 1e-5; bf16 2^-8 + K * 2^-23; f16 2^-11 + K * 2^-23.
"""
import itertools
import os
import threading

import pytest

import ktune
from conftest import requires_custom_ops, requires_gpu

pytestmark = requires_gpu


def tol(dtype, k):
    import torch
    if dtype == torch.float32:
        return 1e-5
    u = 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11
    return u + k * 2.0 ** -23


def rel_err(c, ref):
    c64 = c.double()
    return ((c64 - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def inputs(m, n, k, dtype, seed=0):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    b = torch.randn(k, n, device="cuda", generator=g).to(dtype)
    return a, b


def check(c, a, b, alpha=1.0, beta=0.0, c0=None):
    import torch
    ref = alpha * torch.matmul(a.double(), b.double())
    if c0 is not None:
        ref = ref + beta * c0.double()
    err = rel_err(c, ref)
    assert err <= tol(a.dtype, a.shape[1]), "relative error %g > %g" % (err, tol(a.dtype, a.shape[1]))


DTYPES = ["float32", "bfloat16", "float16"]
SHAPES = [(256, 256, 256), (1024, 1024, 1024), (127, 65, 33), (16, 4096, 512), (1, 1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gemm_matches_matmul(dtype, shape):
    import torch
    dt = getattr(torch, dtype)
    m, n, k = shape
    a, b = inputs(m, n, k, dt)
    c = ktune.gemm(a, b)
    torch.cuda.synchronize()
    assert c.shape == (m, n) and c.dtype == dt
    check(c, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_gemm_transposed_views(dtype, ta, tb):
    import torch
    dt = getattr(torch, dtype)
    m, n, k = 192, 160, 96
    a, b = inputs(m, n, k, dt, seed=1)
    a_in = a.t().contiguous().t() if ta else a  # column-major storage: ktune's T layout, no copy
    b_in = b.t().contiguous().t() if tb else b
    c = ktune.gemm(a_in, b_in)
    torch.cuda.synchronize()
    check(c, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_leading_dimensions_and_copies(dtype):
    import torch
    dt = getattr(torch, dtype)
    a_big, b_big = inputs(300, 200, 260, dt, seed=2)
    a = a_big[:, :130]            # row-major with lda 260
    b = b_big[:130, ::2]          # column stride 2: copied to contiguous
    c = ktune.gemm(a, b)
    torch.cuda.synchronize()
    check(c, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_out_alpha_beta(dtype):
    import torch
    dt = getattr(torch, dtype)
    a, b = inputs(128, 96, 64, dt, seed=3)
    c0 = torch.randn(128, 96, device="cuda").to(dt)
    out = c0.clone()
    r = ktune.gemm(a, b, out=out, alpha=0.5, beta=2.0)
    torch.cuda.synchronize()
    assert r is out
    check(out, a, b, 0.5, 2.0, c0)


def test_gemm_zero_sizes():
    import torch
    a, b = inputs(0, 8, 4, torch.float32)
    assert ktune.gemm(a, b).shape == (0, 8)
    a, b = inputs(8, 8, 0, torch.float32)
    c = ktune.gemm(a, b)
    torch.cuda.synchronize()
    assert torch.count_nonzero(c).item() == 0


def test_gemm_on_current_stream():
    import torch
    a, b = inputs(512, 512, 512, torch.float32, seed=4)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        c = ktune.gemm(a, b)
    s.synchronize()
    check(c, a, b)


def test_gemm_threads():
    import torch
    pairs = [inputs(256, 256, 256, torch.float32, seed=10 + i) for i in range(4)]
    results, errors = [None] * 4, []

    def work(i):
        try:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for _ in range(5):
                    results[i] = ktune.gemm(*pairs[i])
            s.synchronize()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for (a, b), c in zip(pairs, results):
        check(c, a, b)


def test_best_config_on_gpu():
    s = ktune.best_config(1024, 1024, 1024)
    assert s["arch"].startswith("sm_")


@pytest.mark.parametrize("dtype", DTYPES)
@requires_custom_ops
def test_custom_op_and_torch_compile(dtype):
    import torch
    dt = getattr(torch, dtype)
    a, b = inputs(256, 128, 192, dt, seed=5)
    c0 = torch.randn(256, 128, device="cuda").to(dt)

    def f(x, y, z):
        return torch.relu(torch.ops.ktune.gemm(x, y, z, 1.0, 0.5)) * 2

    compiled = torch.compile(f, fullgraph=True)
    got = compiled(a, b, c0)
    torch.cuda.synchronize()
    ref = torch.relu(torch.matmul(a.double(), b.double()) + 0.5 * c0.double()) * 2
    err = rel_err(got, ref)
    assert err <= 2 * tol(dt, a.shape[1]), err
    eager = f(a, b, c0)
    assert rel_err(eager, ref) <= 2 * tol(dt, a.shape[1])


@requires_custom_ops
def test_custom_op_opcheck():
    import torch
    a, b = inputs(64, 48, 32, torch.float32, seed=6)
    torch.library.opcheck(torch.ops.ktune.gemm.default, (a, b, None, 1.0, 0.0),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static"))


@requires_custom_ops
def test_custom_op_autograd():
    import torch
    a, b = inputs(96, 80, 64, torch.float32, seed=7)
    a.requires_grad_(True)
    b.requires_grad_(True)
    torch.ops.ktune.gemm(a, b, None, 2.0, 0.0).square().sum().backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    (2.0 * torch.matmul(a, b)).square().sum().backward()
    assert rel_err(ga, a.grad.double()) <= 1e-4
    assert rel_err(gb, b.grad.double()) <= 1e-4


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    a = cupy.random.standard_normal((200, 120), dtype=cupy.float32)
    b = cupy.random.standard_normal((120, 90), dtype=cupy.float32)
    c = ktune.gemm(a, b)
    cupy.cuda.get_current_stream().synchronize()
    assert isinstance(c, cupy.ndarray)
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    err = float(cupy.linalg.norm(c.astype(cupy.float64) - ref) / cupy.linalg.norm(ref))
    assert err <= 1e-5


def _row_reference(op, x, w, b, scalar):
    import torch
    xd = x.double()
    if op == "softmax":
        return torch.softmax(xd * scalar, -1)
    if op == "layernorm":
        return torch.nn.functional.layer_norm(xd, (x.shape[-1],), None if w is None else w.double(),
                                              None if b is None else b.double(), scalar)
    ms = (xd * xd).mean(-1, keepdim=True)
    y = xd / torch.sqrt(ms + scalar)
    return y if w is None else y * w.double()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("op", ["softmax", "layernorm", "rmsnorm"])
@pytest.mark.parametrize("shape", [(1, 768), (7, 3, 1000), (64, 4096), (3, 32000)])
def test_row_ops_match_fp64(op, dtype, shape):
    """ktune's row ops against FP64 of the same rounded inputs, as the tuner's rule: the output's
    rounding (2^-8 bf16, 2^-11 f16) + 1e-5 relative, plus half the f16 subnormal spacing an element."""
    import math
    import torch
    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.rand(shape, device="cuda", generator=g) * 6 - 3).to(dt)
    cols = shape[-1]
    w = (torch.rand(cols, device="cuda", generator=g) + 0.5).to(dt)
    b = (torch.rand(cols, device="cuda", generator=g) - 0.5).to(dt)
    if op == "softmax":
        y, ref = ktune.softmax(x, scale=0.7), _row_reference(op, x, None, None, 0.7)
    elif op == "layernorm":
        y, ref = ktune.layer_norm(x, w, b, eps=1e-5), _row_reference(op, x, w, b, 1e-5)
    else:
        y, ref = ktune.rms_norm(x, w, eps=1e-6), _row_reference(op, x, w, None, 1e-6)
    torch.cuda.synchronize()
    assert y.shape == x.shape and y.dtype == x.dtype
    u = {"float32": 0.0, "bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}[dtype]
    err = (y.double() - ref).norm().item()
    allowed = (u + 1e-5) * ref.norm().item() + math.sqrt(ref.numel()) * (2.0 ** -25 if dtype == "float16" else 0.0)
    assert torch.isfinite(y).all()
    assert err <= allowed, (op, dtype, shape, err / ref.norm().item())


def test_row_ops_take_strided_3d_and_empty_inputs():
    """A transposed x (last dimension not contiguous) is copied, the output is contiguous and right;
    tensors with no rows or no columns give empty outputs without a launch."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(9)
    base = (torch.rand((256, 24), device="cuda", generator=g) * 6 - 3).to(torch.bfloat16)
    x = base.t()  # 24 x 256 with strides (1, 24)
    y = ktune.softmax(x)
    torch.cuda.synchronize()
    assert y.is_contiguous() and y.shape == x.shape
    ref = _row_reference("softmax", x, None, None, 1.0)
    assert (y.double() - ref).norm().item() <= (2.0 ** -8 + 1e-5) * ref.norm().item()
    for shape in [(0, 8), (3, 0), (2, 0, 5)]:
        e = torch.empty(shape, device="cuda", dtype=torch.float16)
        assert ktune.rms_norm(e).shape == e.shape


def test_repeated_calls_take_the_prepared_path_and_stay_right():
    """The second call of a problem goes through its prepared handle (ktune._runtime.calls): it must
    compute on the new inputs, on the current stream, and still refuse what the first call would."""
    import torch
    from ktune import _runtime
    _runtime.reload()
    for dtype in (torch.float32, torch.bfloat16):
        for seed in (1, 2, 3):  # three calls of one problem, new data each time
            a, b = inputs(200, 96, 80, dtype, seed)
            c = ktune.gemm(a, b, alpha=0.5)
            torch.cuda.synchronize()
            check(c, a, b, alpha=0.5)
    assert any(k[0] == "gemm" for k in _runtime.calls), "no prepared GEMM call was kept"
    g = torch.Generator(device="cuda").manual_seed(3)
    for seed in range(3):
        x = (torch.rand((5, 3, 1000), device="cuda", generator=g) * 6 - 3).to(torch.bfloat16)
        w = (torch.rand(1000, device="cuda", generator=g) + 0.5).to(torch.bfloat16)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            y = ktune.rms_norm(x, w, eps=1e-6)
        s.synchronize()
        ref = _row_reference("rmsnorm", x, w, None, 1e-6)
        assert (y.double() - ref).norm().item() <= (2.0 ** -8 + 1e-5) * ref.norm().item()
    assert any(k[0] == "rmsnorm" for k in _runtime.calls), "no prepared row call was kept"
    # What the full path refuses, the prepared one refuses too: a weight of another dtype or length.
    with pytest.raises(ktune.UsageError, match="weight must be"):
        ktune.rms_norm(x, w.float(), eps=1e-6)
    with pytest.raises(ktune.UsageError, match="weight must be"):
        ktune.rms_norm(x, w[:999], eps=1e-6)
    # A strided weight of the right length is copied, not read with the wrong stride.
    w2 = torch.stack([w, w], 1)[:, 0]
    assert w2.stride() == (2,)
    y2 = ktune.rms_norm(x, w2, eps=1e-6)
    torch.cuda.synchronize()
    ref = _row_reference("rmsnorm", x, w, None, 1e-6)
    assert (y2.double() - ref).norm().item() <= (2.0 ** -8 + 1e-5) * ref.norm().item()
    _runtime.reload()
    assert not _runtime.calls, "reload() must drop the prepared calls of the runtimes it replaces"


def test_cxx_fast_path_serves_seen_problems_as_the_python_path_does():
    """ktune._torch_ext (python/torch_ext.cpp), where built: a problem the Python path prepared is
    served from C++ from its next call on, with results bit-identical to the Python path's (the same
    prepared launch), and whatever the Python path would refuse or treat otherwise is left to it."""
    import torch
    from ktune import _runtime
    ext = _runtime.torch_ext()
    if not ext:
        if os.environ.get("KTUNE_EXPECT_TORCH_EXT") == "1":
            pytest.fail("ktune._torch_ext was built for this run but is not used: " + ktune.torch_fast_path())
        pytest.skip(ktune.torch_fast_path())
    assert ktune.torch_fast_path().startswith("C++")
    _runtime.reload()
    assert ext.stats()[0] == 0, "reload() must drop the C++ path's calls"
    g = torch.Generator(device="cuda").manual_seed(7)

    def rows(shape, dtype):
        return (torch.rand(shape, device="cuda", generator=g) * 6 - 3).to(dtype)

    w, bias = rows(1000, torch.bfloat16) + 4, rows(1000, torch.bfloat16)
    a, bt = rows((200, 80), torch.float16), rows((96, 80), torch.float16)
    cases = {
        "softmax": (lambda x: ktune.softmax(x, scale=0.5), lambda: rows((6, 3, 1000), torch.bfloat16)),
        "layer_norm": (lambda x: ktune.layer_norm(x, w, bias, eps=1e-5), lambda: rows((6, 3, 1000), torch.bfloat16)),
        "rms_norm": (lambda x: ktune.rms_norm(x, w), lambda: rows((6, 3, 1000), torch.bfloat16)),
        # b a transposed view (layout NT); alpha an int
        "gemm": (lambda x: ktune.gemm(x, bt.t(), alpha=2), lambda: rows((200, 80), torch.float16)),
    }
    for name, (f, make) in cases.items():
        assert _runtime.set_torch_ext(True).startswith("C++")
        f(make())  # the Python path checks, prepares and registers
        x = make()
        served = ext.stats()[1]
        y = f(x)
        assert ext.stats()[1] == served + 1, "%s: the second call of a problem was not served from C++" % name
        _runtime.set_torch_ext(False)
        f(x)  # prepares the Python path's handle
        y_py = f(x)
        torch.cuda.synchronize()
        assert y.shape == y_py.shape and y.dtype == y_py.dtype and y.is_contiguous()
        assert torch.equal(y, y_py), "%s: the C++ and Python paths disagree" % name
    _runtime.set_torch_ext(True)
    x = rows((6, 3, 1000), torch.bfloat16)
    ktune.rms_norm(x, w)
    served = ext.stats()[1]
    # Left to the Python path, which refuses or serves them as before: a weight of another dtype or
    # length, a CPU tensor, a complex alpha, a tensor subclass, an out= tensor.
    with pytest.raises(ktune.UsageError, match="weight must be"):
        ktune.rms_norm(x, w.float())
    with pytest.raises(ktune.UsageError, match="weight must be"):
        ktune.rms_norm(x, w[:999])
    with pytest.raises(ktune.UsageError, match="is on cpu"):
        ktune.rms_norm(x.cpu(), w)

    class Sub(torch.Tensor):
        pass

    y_sub = ktune.rms_norm(x.as_subclass(Sub), w)
    out = torch.empty_like(x)
    ktune.rms_norm(x, w, out=out)
    y = ktune.rms_norm(x, w)
    torch.cuda.synchronize()
    assert torch.equal(out, y) and torch.equal(y_sub, y)
    assert ext.stats()[1] == served + 1, "only the last call may be served from C++"
    ktune.gemm(a, bt.t())
    with pytest.raises(ktune.UsageError, match="real"):
        ktune.gemm(a, bt.t(), alpha=1j)
    # The C++ table emptied on its own (at its cap) while the Python one still holds the problem:
    # the Python path serves the next call and hands the problem back, so the one after is C++'s.
    ext.clear()
    ktune.rms_norm(x, w)
    served = ext.stats()[1]
    ktune.rms_norm(x, w)
    assert ext.stats()[1] == served + 1, "a problem the Python path served was not handed back to the C++ path"
    ktune.configure()
    assert ext.stats()[0] == 0, "configure() must drop the C++ path's calls"


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_run_serves_an_op_of_plain_buffers(dtype):
    """ktune.run / ktune.op on scale_add (an op with no typed wrapper), against FP64 of the same
    rounded inputs: the output's rounding plus FP32's two roundings of the terms."""
    import torch
    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(11)
    for n in (1, 1000003, 1 << 22):
        x = (torch.rand(n, device="cuda", generator=g) * 2 - 1).to(dt)
        y = (torch.rand(n, device="cuda", generator=g) * 2 - 1).to(dt)
        out = torch.empty_like(x)
        ktune.run("scale_add", x, y, out, alpha=1.5, beta=-0.75)
        ref = 1.5 * x.double() - 0.75 * y.double()
        mag = (1.5 * x.double()).abs() + (0.75 * y.double()).abs()
        u = {"float32": 2.0 ** -24, "bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}[dtype]
        bound = u * ref.abs() + 2.0 * 2.0 ** -24 * mag * 1.01 + 2.0 ** -25
        torch.cuda.synchronize()
        assert ((out.double() - ref).abs() <= bound).all(), (dtype, n)
        # The same through a handle, a 2-D tensor (its element count is n), and in place.
        x2 = x.reshape(1, n)
        ktune.op("scale_add")(x2, y.reshape(1, n), x2, dims=(n,), alpha=1.5, beta=-0.75)
        torch.cuda.synchronize()
        assert torch.equal(x, out), (dtype, n)
    with pytest.raises(ValueError, match="takes 3 tensors"):
        ktune.run("scale_add", x, y)
    with pytest.raises(ValueError, match="no scalar gamma"):
        ktune.run("scale_add", x, y, out, gamma=2.0)
    with pytest.raises(ValueError, match="dtype"):
        ktune.run("scale_add", x, y.float() if dtype != "float32" else y.half(), out)


def _example(name):
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "examples", "kernels", name, name + ".json")


def test_user_kernel_launches_on_torch_tensors_and_tunes():
    import torch

    k = ktune.Kernel(_example("transpose"))
    x = torch.randn(300, 1000, device="cuda")
    out = torch.empty(1000, 300, device="cuda")
    k(x, out, rows=300, cols=1000)
    torch.cuda.synchronize()
    assert torch.equal(out, x.t())
    with pytest.raises(ktune.UsageError):
        k(x, rows=300, cols=1000)  # out missing
    with pytest.raises(ktune.UsageError):
        k(x.to(torch.float16), out, rows=300, cols=1000)  # the spec's in is f32
    g = ktune.Kernel(_example("bias_gelu"))
    xb = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
    yb = torch.empty_like(xb)
    g(xb, bias, yb, rows=64, cols=1024)
    want = torch.nn.functional.gelu(xb.double() + bias.double(), approximate="tanh")
    assert torch.allclose(yb.double(), want, rtol=1e-2, atol=1e-2)
    summary = k.tune([(512, 512)], budget_seconds=None, budget_evals=4, progress=False,
                     db=os.environ["KTUNE_DB"] + ".kernel.db")
    assert summary["problems"][0]["problem"].startswith(k.op + "/f32/512x512")
    assert k.best_config(512, 512)["family"] == k.op


def test_user_kernel_checked_against_a_python_reference():
    """Kernel(spec, reference=fn): tuning checks every config against fn's outputs (files the
    derived spec reads); a reference that disagrees with the kernel leaves no correct config."""
    import numpy
    import torch

    db = os.environ["KTUNE_DB"] + ".pyref.db"
    k = ktune.Kernel(_example("transpose"), reference=lambda x, out, rows, cols: x.reshape(rows, cols).T.copy())
    summary = k.tune([(256, 384)], budget_seconds=None, budget_evals=4, progress=False, db=db)
    p = summary["problems"][0]
    assert p["trials"].get("ok", 0) == 4, p
    x = torch.randn(256, 384, device="cuda")
    out = torch.empty(384, 256, device="cuda")
    k(x, out, rows=256, cols=384)
    torch.cuda.synchronize()
    assert torch.equal(out, x.t())
    wrong = ktune.Kernel(_example("transpose"), reference=lambda x, out, rows, cols: numpy.zeros(rows * cols))
    bad = wrong.tune([(256, 384)], budget_seconds=None, budget_evals=2, progress=False, db=db)["problems"][0]
    assert bad["trials"].get("wrong_result", 0) == 2 and "config" not in bad, bad


def test_user_kernel_of_two_steps_with_partials_the_config_sizes():
    """examples/kernels/l2norm: the caller passes x and out; ktune sizes the partial sums and
    computes their count for each config. A Python reference gets None for that count, and
    every config it checks passes; one that is off fails every config."""
    import numpy
    import torch

    k = ktune.Kernel(_example("l2norm"))
    assert [a["name"] for a in k.info["args"]] == ["x", "out"]
    for n in (1000003, 4096):
        x = torch.randn(n, device="cuda")
        out = torch.empty(1, device="cuda")
        k(x, out, n=n)
        torch.cuda.synchronize()
        want = x.double().norm().item()
        assert abs(out.item() - want) <= 1e-5 * want, (n, out.item(), want)
    got = []

    def norm(x, out, n, parts):
        got.append(parts)
        return numpy.array([numpy.sqrt(numpy.sum(x.astype(numpy.float64) ** 2))])

    db = os.environ["KTUNE_DB"] + ".l2norm.db"
    p = ktune.Kernel(_example("l2norm"), reference=norm).tune([(65536,)], budget_seconds=None, budget_evals=6,
                                                             progress=False, db=db)["problems"][0]
    assert p["trials"].get("ok", 0) == 6 and got == [None], (p, got)
    off = ktune.Kernel(_example("l2norm"), reference=lambda x, out, n, parts: numpy.array([1.01 * numpy.sqrt(
        numpy.sum(x.astype(numpy.float64) ** 2))]))
    bad = off.tune([(65536,)], budget_seconds=None, budget_evals=3, progress=False, db=db)["problems"][0]
    assert bad["trials"].get("wrong_result", 0) == 3 and "config" not in bad, bad


def attention_ref(q, k, v, causal, scale):
    """FP64 attention of (B, S, H, D) tensors, bottom-right causal, and its log-sum-exp (B, H, Sq)."""
    import torch
    B, Sq, H, D = q.shape
    Sk, Hk = k.shape[1], k.shape[2]
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    kd = kd.repeat_interleave(H // Hk, dim=1)
    vd = vd.repeat_interleave(H // Hk, dim=1)
    s = torch.einsum("bhqd,bhkd->bhqk", qd, kd) * scale
    if causal:
        qi = torch.arange(Sq, device=q.device).view(-1, 1)
        kj = torch.arange(Sk, device=q.device).view(1, -1)
        s = s.masked_fill(kj > qi + (Sk - Sq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
    return torch.einsum("bhqk,bhkd->bhqd", p, vd).transpose(1, 2), lse


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape,causal", [((2, 200, 8, 64), True), ((1, 333, 4, 128), False), ((1, 64, 2, 256), True),
                                          ((3, 1, 8, 128), False), ((1, 100, 4, 80), True),
                                          ((2, 150, 4, 40), False), ((1, 50, 2, 36), True)])
def test_attention_matches_fp64(dtype, shape, causal):
    """ktune.attention on (B, S, H, D) tensors, GQA (kv_heads H / 4 where H allows), kv_len longer than
    q_len (bottom-right causal), head_dims 80 and 40 (on sm_90 attention_wgmma pads them to 128 and 64)
    and 36 (rows not whole 16-byte units: the fallback), against FP64."""
    import torch
    dt = getattr(torch, dtype)
    B, Sq, H, D = shape
    Hk, Sk = max(1, H // 4), Sq + 37
    g = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(B, Sq, H, D, device="cuda", generator=g).to(dt)
    k = torch.randn(B, Sk, Hk, D, device="cuda", generator=g).to(dt)
    v = torch.randn(B, Sk, Hk, D, device="cuda", generator=g).to(dt)
    out, lse = ktune.attention(q, k, v, causal=causal, return_lse=True)
    ref, ref_lse = attention_ref(q, k, v, causal, D ** -0.5)
    u = 2.0 ** -8 if dt == torch.bfloat16 else 2.0 ** -11
    assert (out.double() - ref).abs().max().item() <= 4 * u * max(1.0, ref.abs().max().item())
    assert (lse.double() - ref_lse).abs().max().item() <= 1e-3
    # A (B, H, S, D) tensor passes as its transpose; an explicit scale.
    qt, kt, vt = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    out2 = ktune.attention(qt, kt, vt, causal=causal, scale=0.3)
    ref2, _ = attention_ref(q, k, v, causal, 0.3)
    assert (out2.double() - ref2).abs().max().item() <= 4 * u * max(1.0, ref2.abs().max().item())


@requires_custom_ops
def test_attention_custom_op_under_torch_compile():
    """torch.ops.ktune.attention traced whole by torch.compile (its fake kernel gives O like q and the
    log-sum-exp), equal to the eager call; opcheck's schema and fake-kernel checks pass."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(11)
    q = torch.randn(2, 1, 32, 128, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(2, 700, 8, 128, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(2, 700, 8, 128, device="cuda", generator=g).to(torch.bfloat16)

    def f(q, k, v):
        o, lse = torch.ops.ktune.attention(q, k, v, True, None)
        return o.float() * 2, lse

    got, got_lse = torch.compile(f, fullgraph=True)(q, k, v)
    ref, ref_lse = attention_ref(q, k, v, True, 128 ** -0.5)
    assert (got.double() / 2 - ref).abs().max().item() <= 4 * 2.0 ** -8
    assert (got_lse.double() - ref_lse).abs().max().item() <= 1e-3
    eager, _ = f(q, k, v)
    assert torch.equal(eager, got)
    torch.library.opcheck(torch.ops.ktune.attention.default, (q, k, v, False, 0.5),
                          test_utils=("test_schema", "test_faketensor"))


def kv_cache(g, B, Hk, D, cap, paged, spare):
    """A bf16 KV cache of `cap` keys a sequence: contiguous (B, cap, Hk, D), or in 64-key pages dealt
    to the sequences out of order from B * cap / 64 + spare pages (block table int32, else None).
    Returns k_cache, v_cache, block_table and each sequence's keys and values in order."""
    import torch
    if not paged:
        kc = torch.randn(B, cap, Hk, D, device="cuda", generator=g).to(torch.bfloat16)
        vc = torch.randn(B, cap, Hk, D, device="cuda", generator=g).to(torch.bfloat16)
        return kc, vc, None, list(kc), list(vc)
    page, pps = 64, cap // 64
    pages = B * pps + spare
    kc = torch.randn(pages, page, Hk, D, device="cuda", generator=g).to(torch.bfloat16)
    vc = torch.randn(pages, page, Hk, D, device="cuda", generator=g).to(torch.bfloat16)
    bt = torch.randperm(pages, device="cuda", generator=g)[: B * pps].view(B, pps).to(torch.int32).contiguous()
    return (kc, vc, bt, [kc[bt[b].long()].reshape(cap, Hk, D) for b in range(B)],
            [vc[bt[b].long()].reshape(cap, Hk, D) for b in range(B)])


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [128, 96])
def test_attention_decode_matches_fp64(paged, causal, D):
    """ktune.attention_decode over a KV cache with per-sequence lengths (the capacity, 1 key and a
    partial page), contiguous or in 64-key pages scattered over the cache, against FP64 of each
    sequence's own keys; a row that sees no key (causal, 2 queries over 1 key) gives O = 0, lse = inf.
    Head dim 96 (Phi-3's) as well as 128: the kernel's tiles pad it with zeros to 128."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(21)
    B, Sq, H, Hk, cap = 3, 2, 16, 4, 640
    lens = torch.tensor([cap, 1, 300], dtype=torch.int32, device="cuda")
    q = torch.randn(B, Sq, H, D, device="cuda", generator=g).to(torch.bfloat16)
    kc, vc, bt, keys, values = kv_cache(g, B, Hk, D, cap, paged, spare=5)
    out, lse = ktune.attention_decode(q, kc, vc, lens, bt, causal=causal, return_lse=True)
    u = 2.0 ** -8
    for b in range(B):
        n = int(lens[b])
        ref, ref_lse = attention_ref(q[b:b + 1], keys[b][:n][None], values[b][:n][None], causal, D ** -0.5)
        assert (out[b:b + 1].double() - ref).abs().max().item() <= 4 * u * max(1.0, ref.abs().max().item()), b
        seen = torch.isfinite(ref_lse)
        assert (lse[b:b + 1][seen].double() - ref_lse[seen]).abs().max().item() <= 1e-3, b
        assert torch.isinf(lse[b:b + 1][~seen]).all() and (lse[b:b + 1][~seen] > 0).all(), b
    if causal:
        assert not torch.isfinite(lse[1, :, 0]).any()  # sequence 1: query 0 of 2 sees no key
    if not paged:  # the second call takes the identity block table kept by the first
        assert torch.equal(ktune.attention_decode(q, kc, vc, lens, causal=causal), out)
    with pytest.raises(ktune.UsageError, match="must share dtype and device"):
        ktune.attention_decode(q, kc.half(), vc, lens, bt)
    with pytest.raises(ktune.UsageError, match="int32"):
        ktune.attention_decode(q, kc, vc, lens.long(), bt)


@pytest.mark.parametrize("paged", [False, True])
@requires_custom_ops
def test_attention_decode_custom_op_under_torch_compile(paged):
    """torch.ops.ktune.attention_decode traced whole by torch.compile over a contiguous and a paged
    cache (per-sequence lengths), equal to the eager call and to FP64 of each sequence's keys;
    opcheck's schema and fake-kernel checks pass."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(12)
    B, H, Hk, D, cap = 2, 32, 8, 128, 512
    lens = torch.tensor([cap, 77], dtype=torch.int32, device="cuda")
    q = torch.randn(B, 1, H, D, device="cuda", generator=g).to(torch.bfloat16)
    kc, vc, bt, keys, values = kv_cache(g, B, Hk, D, cap, paged, spare=3)

    def f(q, kc, vc, lens, bt):
        o, lse = torch.ops.ktune.attention_decode(q, kc, vc, lens, bt, True, None)
        return o.float() * 2, lse

    got, got_lse = torch.compile(f, fullgraph=True)(q, kc, vc, lens, bt)
    for b in range(B):
        n = int(lens[b])
        ref, ref_lse = attention_ref(q[b:b + 1], keys[b][:n][None], values[b][:n][None], True, D ** -0.5)
        assert (got[b:b + 1].double() / 2 - ref).abs().max().item() <= 4 * 2.0 ** -8 * max(1.0, ref.abs().max().item())
        assert (got_lse[b:b + 1].double() - ref_lse).abs().max().item() <= 1e-3
    eager, _ = f(q, kc, vc, lens, bt)
    assert torch.equal(eager, got)
    torch.library.opcheck(torch.ops.ktune.attention_decode.default, (q, kc, vc, lens, bt, False, 0.5),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("causal", [False, True])
@requires_custom_ops
def test_attention_varlen_matches_fp64(causal):
    """ktune.attention_varlen over packed sequences of different lengths (an empty one, one off the
    tiles, keys longer and shorter than queries, one with queries and no key: O = 0, lse = +inf),
    GQA, against FP64 of each sequence alone; the
    log-sum-exp (heads, total_q); the custom op under torch.compile gives the same."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(31)
    H, Hk, D = 8, 2, 128
    lq, lk = [300, 0, 17, 129, 40], [340, 5, 17, 100, 0]  # the last sequence's rows see no key
    cu_q = torch.tensor([0] + list(itertools.accumulate(lq)), dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0] + list(itertools.accumulate(lk)), dtype=torch.int32, device="cuda")
    q = torch.randn(sum(lq), H, D, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(sum(lk), Hk, D, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(sum(lk), Hk, D, device="cuda", generator=g).to(torch.bfloat16)
    out, lse = ktune.attention_varlen(q, k, v, cu_q, cu_k, max(lq), max(lk), causal=causal, return_lse=True)
    assert out.shape == q.shape and lse.shape == (H, sum(lq))
    u = 2.0 ** -8
    for b in range(len(lq)):
        q0, k0 = int(cu_q[b]), int(cu_k[b])
        if lq[b] == 0:
            continue
        if lk[b] == 0:
            assert torch.equal(out[q0:q0 + lq[b]], torch.zeros_like(out[q0:q0 + lq[b]])), b
            assert torch.isinf(lse[:, q0:q0 + lq[b]]).all() and (lse[:, q0:q0 + lq[b]] > 0).all(), b
            continue
        ref, ref_lse = attention_ref(q[None, q0:q0 + lq[b]], k[None, k0:k0 + lk[b]], v[None, k0:k0 + lk[b]], causal,
                                     D ** -0.5)
        got = out[None, q0:q0 + lq[b]]
        assert (got.double() - ref).abs().max().item() <= 4 * u * max(1.0, ref.abs().max().item()), b
        got_lse = lse[:, q0:q0 + lq[b]][None]
        seen = torch.isfinite(ref_lse)
        if seen.any():
            assert (got_lse[seen].double() - ref_lse[seen]).abs().max().item() <= 1e-3, b
        assert torch.isinf(got_lse[~seen]).all() and (got_lse[~seen] > 0).all(), b

    def f(q, k, v, cu_q, cu_k):
        o, l = torch.ops.ktune.attention_varlen(q, k, v, cu_q, cu_k, max(lq), max(lk), causal, None)
        return o, l

    got, got_lse = torch.compile(f, fullgraph=True)(q, k, v, cu_q, cu_k)
    assert torch.equal(got, out) and torch.equal(got_lse, lse)
    torch.library.opcheck(torch.ops.ktune.attention_varlen.default, (q, k, v, cu_q, cu_k, max(lq), max(lk), causal, None),
                          test_utils=("test_schema", "test_faketensor"))
    with pytest.raises(ktune.UsageError, match="int32"):
        ktune.attention_varlen(q, k, v, cu_q.long(), cu_k, max(lq), max(lk))
    with pytest.raises(ktune.UsageError, match="one length"):
        ktune.attention_varlen(q, k, v, cu_q, cu_k[:-1], max(lq), max(lk))
    with pytest.raises(ktune.UsageError, match="at least the longest sequence"):
        ktune.attention_varlen(q, k, v, cu_q, cu_k, 10, max(lk))
    with pytest.raises(ktune.UsageError, match="3-d"):
        ktune.attention_varlen(q[None], k, v, cu_q, cu_k, max(lq), max(lk))


def test_attention_refuses_bad_inputs():
    import torch
    q = torch.randn(1, 16, 4, 64, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 16, 3, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ktune.UsageError, match="multiple of kv_heads"):
        ktune.attention(q, k, k)
    with pytest.raises(ktune.UsageError, match="bfloat16 or float16"):
        ktune.attention(q.float(), q.float(), q.float())
    with pytest.raises(ktune.UsageError, match="4-d"):
        ktune.attention(q[0], q[0], q[0])
