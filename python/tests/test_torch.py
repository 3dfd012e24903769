"""PyTorch without a GPU: the custom op is registered and its fake kernel gives the right shape."""
import pytest

import ktune
from conftest import requires_custom_ops, requires_torch

pytestmark = requires_torch


@requires_custom_ops
def test_op_registered():
    import torch
    assert hasattr(torch.ops.ktune, "gemm")


@requires_custom_ops
def test_fake_kernel_on_meta():
    import torch
    a = torch.empty(3, 4, device="meta", dtype=torch.bfloat16)
    b = torch.empty(4, 5, device="meta", dtype=torch.bfloat16)
    c = torch.ops.ktune.gemm(a, b)
    assert c.shape == (3, 5) and c.dtype == torch.bfloat16 and c.device.type == "meta"


def test_cpu_tensor_refused():
    import torch
    with pytest.raises(ktune.UsageError, match="on cpu"):
        ktune.gemm(torch.ones(4, 5), torch.ones(5, 6))


def test_bad_dtype_refused():
    import torch
    with pytest.raises(ktune.UsageError, match="dtype"):
        ktune.gemm(torch.ones(4, 5, dtype=torch.float64, device="meta"), torch.ones(5, 6, dtype=torch.float64, device="meta"))


def test_shape_mismatch_refused():
    import torch
    with pytest.raises(ktune.UsageError, match="shape mismatch"):
        ktune.gemm(torch.ones(4, 5, device="meta"), torch.ones(6, 6, device="meta"))


def test_mixed_dtypes_refused():
    import torch
    with pytest.raises(ktune.UsageError, match="one dtype"):
        ktune.gemm(torch.ones(4, 5, device="meta"), torch.ones(5, 6, dtype=torch.float16, device="meta"))


@requires_custom_ops
def test_compile_traces_the_op_on_meta():
    # torch.compile with the eager backend traces through the fake kernel (no GPU needed).
    import torch

    def f(x, y):
        return torch.ops.ktune.gemm(x, y, None, 1.0, 0.0) + 1

    a = torch.empty(8, 4, device="meta")
    b = torch.empty(4, 6, device="meta")
    out = torch.compile(f, backend="eager", fullgraph=True)(a, b)
    assert out.shape == (8, 6)


@requires_custom_ops
def test_autograd_through_fake_kernel():
    import torch
    a = torch.empty(8, 4, device="meta", requires_grad=True)
    b = torch.empty(4, 6, device="meta", requires_grad=True)
    torch.ops.ktune.gemm(a, b, None, 2.0, 0.0).sum().backward()
    assert a.grad.shape == (8, 4) and b.grad.shape == (4, 6)


@requires_custom_ops
def test_schema():
    import torch
    assert str(torch.ops.ktune.gemm.default._schema) == (
        "ktune::gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1., float beta=0.) -> Tensor")


def test_row_ops_refuse_cpu_tensors_bad_dtypes_and_bad_vectors():
    import torch
    with pytest.raises(ktune.UsageError, match="on cpu"):
        ktune.softmax(torch.ones(4, 5))
    with pytest.raises(ktune.UsageError, match="dtype"):
        ktune.rms_norm(torch.ones(4, 5, dtype=torch.float64, device="meta"))
    with pytest.raises(ktune.UsageError, match="on meta"):
        ktune.layer_norm(torch.ones(2, 3, device="meta"))
