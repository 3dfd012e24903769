"""The PyTorch custom ops ktune::gemm and ktune::attention (torch.library), with fake kernels for
torch.compile (and autograd for the GEMM). Imported by ktune when torch is installed.

    torch.ops.ktune.gemm(a, b, c=None, alpha=1.0, beta=0.0) -> alpha * a @ b + beta * c  (a new tensor)
    torch.ops.ktune.attention(q, k, v, causal=False, scale=None) -> (o, lse)  (forward only)
    torch.ops.ktune.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                     causal=False, scale=None) -> (o, lse)  (forward only)
    torch.ops.ktune.attention_decode(q, k_cache, v_cache, seq_lens, block_table=None, causal=False,
                                     scale=None) -> (o, lse)  (forward only)
"""

from typing import Optional, Tuple

import torch

from ._attention import attention as _attention
from ._attention import attention_decode as _attention_decode
from ._attention import attention_varlen as _attention_varlen
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


@torch.library.custom_op("ktune::attention", mutates_args=())
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              scale: Optional[float] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """ktune.attention(q, k, v, causal, scale, return_lse=True): O laid out as q, and the
    log-sum-exp (batch, heads, q_len) float32. No backward: ktune has no attention backward kernel."""
    return _attention(q, k, v, causal=causal, scale=scale, return_lse=True)


@attention.register_fake
def _(q, k, v, causal=False, scale=None):
    torch._check(q.dim() == 4 and k.dim() == 4 and v.dim() == 4,
                 lambda: "ktune::attention: q, k and v must be 4-d (batch, seq, heads, head_dim)")
    torch._check(k.shape == v.shape, lambda: "ktune::attention: k and v must have one shape")
    torch._check(q.dtype == k.dtype and q.dtype == v.dtype, lambda: "ktune::attention: q, k and v must have one dtype")
    B, Sq, H, _ = q.shape
    return torch.empty_like(q), q.new_empty((B, H, Sq), dtype=torch.float32)


@torch.library.custom_op("ktune::attention_varlen", mutates_args=())
def attention_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                     cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, causal: bool = False,
                     scale: Optional[float] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """ktune.attention_varlen(..., return_lse=True): O laid out as q (total_q, heads, head_dim), and
    the log-sum-exp (heads, total_q) float32. No backward."""
    return _attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=causal,
                             scale=scale, return_lse=True)


@attention_varlen.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False, scale=None):
    torch._check(q.dim() == 3 and k.dim() == 3 and v.dim() == 3,
                 lambda: "ktune::attention_varlen: q, k and v must be 3-d (tokens, heads, head_dim)")
    torch._check(k.shape == v.shape, lambda: "ktune::attention_varlen: k and v must have one shape")
    torch._check(q.dtype == k.dtype and q.dtype == v.dtype,
                 lambda: "ktune::attention_varlen: q, k and v must have one dtype")
    Tq, H, _ = q.shape
    return torch.empty_like(q), q.new_empty((H, Tq), dtype=torch.float32)


@torch.library.custom_op("ktune::attention_decode", mutates_args=())
def attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, seq_lens: torch.Tensor,
                     block_table: Optional[torch.Tensor] = None, causal: bool = False,
                     scale: Optional[float] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """ktune.attention_decode(..., return_lse=True): O laid out as q (batch, q_len, heads, head_dim)
    over a contiguous or paged KV cache, and the log-sum-exp (batch, heads, q_len) float32. No
    backward."""
    return _attention_decode(q, k_cache, v_cache, seq_lens, block_table=block_table, causal=causal, scale=scale,
                             return_lse=True)


@attention_decode.register_fake
def _(q, k_cache, v_cache, seq_lens, block_table=None, causal=False, scale=None):
    torch._check(q.dim() == 4 and k_cache.dim() == 4 and v_cache.dim() == 4,
                 lambda: "ktune::attention_decode: q, k_cache and v_cache must be 4-d")
    torch._check(k_cache.shape == v_cache.shape, lambda: "ktune::attention_decode: k_cache and v_cache must have one shape")
    torch._check(q.dtype == k_cache.dtype and q.dtype == v_cache.dtype,
                 lambda: "ktune::attention_decode: q, k_cache and v_cache must have one dtype")
    torch._check(seq_lens.dim() == 1 and seq_lens.shape[0] == q.shape[0],
                 lambda: "ktune::attention_decode: seq_lens must be (batch,)")
    B, Sq, H, _ = q.shape
    return torch.empty_like(q), q.new_empty((B, H, Sq), dtype=torch.float32)
