"""The PyTorch custom op ktune::gemm (torch.library), with a fake kernel for torch.compile and
autograd. Imported by ktune when torch is installed.

    torch.ops.ktune.gemm(a, b, c=None, alpha=1.0, beta=0.0) -> alpha * a @ b + beta * c  (a new tensor)
"""

from typing import Optional

import torch

from ._gemm import gemm as _gemm


@torch.library.custom_op("ktune::gemm", mutates_args=())
def gemm(a: torch.Tensor, b: torch.Tensor, c: Optional[torch.Tensor] = None, alpha: float = 1.0,
         beta: float = 0.0) -> torch.Tensor:
    """alpha * a @ b + beta * c as a new tensor, by ktune.gemm (functional: c is not written)."""
    if c is not None and beta != 0:
        if tuple(c.shape) != (a.shape[0], b.shape[1]):
            raise ValueError("ktune::gemm: c has shape %s; a @ b is %dx%d"
                             % (tuple(c.shape), a.shape[0], b.shape[1]))
        out = c.clone(memory_format=torch.contiguous_format)
        return _gemm(a, b, out=out, alpha=alpha, beta=beta)
    return _gemm(a, b, alpha=alpha)


@gemm.register_fake
def _(a, b, c=None, alpha=1.0, beta=0.0):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "ktune::gemm: a and b must be 2-D")
    torch._check(a.shape[1] == b.shape[0], lambda: "ktune::gemm: a's columns must equal b's rows")
    torch._check(a.dtype == b.dtype, lambda: "ktune::gemm: a and b must have one dtype")
    return a.new_empty((a.shape[0], b.shape[1]))


def _setup_context(ctx, inputs, output):
    a, b, c, alpha, beta = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta, ctx.has_c = alpha, beta, c is not None


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    ga = gb = gc = None
    # Transposed views run as ktune's T layouts: no copies.
    if ctx.needs_input_grad[0]:
        ga = torch.ops.ktune.gemm(grad, b.t(), None, ctx.alpha, 0.0)
    if ctx.needs_input_grad[1]:
        gb = torch.ops.ktune.gemm(a.t(), grad, None, ctx.alpha, 0.0)
    if ctx.has_c and ctx.needs_input_grad[2]:
        gc = grad * ctx.beta
    return ga, gb, gc, None, None


gemm.register_autograd(_backward, setup_context=_setup_context)
