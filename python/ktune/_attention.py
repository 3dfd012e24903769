"""Attention on PyTorch CUDA tensors (the op "attention"; kernel_templates/attention/)."""

from . import _ktune, _runtime
from ._rows import _current_stream, _dtype_codes
from ._runtime import runtime


def _err(msg):
    return _ktune.UsageError("ktune.attention: " + msg)


# The block table of a contiguous cache given to attention_decode, (batch, 1) of 0..batch-1, per
# (batch, device): made once, not a kernel launch a call (0.7 us beside a 10 us decode step).
_identity_tables = {}


def _check_inputs(q, named, dims=4):
    """q and the (name, tensor) pairs: `dims`-d CUDA tensors of q's dtype and device, last dimension
    contiguous; the dtype bf16 or f16."""
    import torch

    for name, t in (("q", q),) + tuple(named):
        if not isinstance(t, torch.Tensor) or not t.is_cuda:
            raise _err("%s must be a CUDA tensor" % name)
        if t.dim() != dims:
            raise _err("%s must be %d-d, got shape %s" % (name, dims, tuple(t.shape)))
        if t.dtype != q.dtype or t.get_device() != q.get_device():
            raise _err("q, %s must share dtype and device (%s on %s, %s on %s)"
                       % (" and ".join(n for n, _ in named), q.dtype, q.device, t.dtype, t.device))
        if t.numel() and t.stride(-1) != 1:
            raise _err("%s's last dimension must be contiguous (strides %s)" % (name, t.stride()))
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise _err("dtype must be bfloat16 or float16, got %s" % q.dtype)


def _outputs(q, out, H):
    """O (out, checked, or a new tensor laid out as q) and a new float32 log-sum-exp (batch, H, q_len)."""
    import torch

    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or out.get_device() != q.get_device() or out.stride(-1) != 1:
        raise _err("out must be like q (shape %s, %s, last dimension contiguous)" % (tuple(q.shape), q.dtype))
    return out, torch.empty((q.shape[0], H, q.shape[1]), dtype=torch.float32, device=q.device)


def _call(op, q, dims, strides, causal, scale, ptrs):
    """Runs op on q's device and current stream. The launch goes to the current CUDA context;
    switching devices costs microseconds a call (a decode step's attention runs in tens of them), so
    only when q is elsewhere. A problem seen before (op, dtype, dims, strides, causal, scale, device)
    is called through its prepared handle: no Problem to build, validate and look up by key again."""
    import torch

    index = q.get_device()
    layout = "causal" if causal else "full"
    scale = 0.0 if scale is None else float(scale)
    if index == torch.cuda.current_device():
        key = (op, q.dtype, *dims, strides, layout, scale, index)
        call = _runtime.calls.get(key)
        if call is None:
            call = runtime(device=index).buffers_call(op, _dtype_codes()[q.dtype], dims, {"scale": scale},
                                                      list(strides), layout)
            _runtime.remember_call(key, call)
        call(ptrs, _current_stream(index))
    else:
        with torch.cuda.device(index):
            runtime(device=index).run(op, _dtype_codes()[q.dtype], dims, ptrs, {"scale": scale},
                                      _current_stream(index), list(strides), layout)


def attention(q, k, v, causal=False, scale=None, out=None, return_lse=False):
    """softmax(scale q k^T) v, as flash_attn_func takes it: q (batch, q_len, heads, head_dim), k and v
    (batch, kv_len, kv_heads, head_dim), bf16 or f16 on one CUDA device, heads a multiple of kv_heads
    (GQA, MQA). Any strides whose last dimension is contiguous: a (batch, heads, seq, head_dim) tensor
    passes as x.transpose(1, 2). causal: bottom-right aligned as FlashAttention's (query i sees keys
    j <= i + kv_len - q_len). scale: default 1 / sqrt(head_dim). out: where O goes (default: a new
    tensor laid out as q). return_lse: also return the log-sum-exp of every row, float32 (batch,
    heads, q_len) (+inf for a row that sees no key)."""
    _check_inputs(q, (("k", k), ("v", v)))
    B, Sq, H, D = q.shape
    if k.shape != v.shape or k.shape[0] != B or k.shape[3] != D:
        raise _err("k and v must be (batch %d, kv_len, kv_heads, head_dim %d), got %s and %s"
                   % (B, D, tuple(k.shape), tuple(v.shape)))
    Sk, Hk = k.shape[1], k.shape[2]
    out, lse = _outputs(q, out, H)
    strides = (*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3])
    _call("attention", q, [B, H, Hk, Sq, Sk, D], strides, causal, scale,
          [q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr()])
    return (out, lse) if return_lse else out


def attention_decode(q, k_cache, v_cache, seq_lens, block_table=None, causal=False, scale=None, out=None,
                     return_lse=False):
    """Attention of a few new queries over a KV cache, as flash_attn_with_kvcache takes it (the op
    attention_paged; decode and speculative decoding, q_len <= 64). q (batch, q_len, heads, head_dim);
    seq_lens int32 (batch,) on q's device: the keys each sequence holds. Without block_table, k_cache
    and v_cache are (batch, capacity, kv_heads, head_dim); with it they are pages (pages, page_size,
    kv_heads, head_dim) and block_table is int32 (batch, pages a sequence), the page of each
    page_size keys of a sequence (vLLM's layout; its entries must be pages of the cache). Any strides
    with a contiguous last dimension for q and the caches. causal: bottom-right aligned to each
    sequence's length. Returns O laid out as q (and the float32 log-sum-exp (batch, heads, q_len)
    with return_lse)."""
    import torch

    _check_inputs(q, (("k_cache", k_cache), ("v_cache", v_cache)))
    B, Sq, H, D = q.shape
    if k_cache.shape != v_cache.shape or k_cache.shape[3] != D:
        raise _err("k_cache and v_cache must have one shape with head_dim %d, got %s and %s"
                   % (D, tuple(k_cache.shape), tuple(v_cache.shape)))
    for name, t, shape in (("seq_lens", seq_lens, (B,)),) + (() if block_table is None else
                                                             (("block_table", block_table, None),)):
        if (not isinstance(t, torch.Tensor) or t.dtype != torch.int32 or t.get_device() != q.get_device()
                or not t.is_contiguous() or (shape is not None and tuple(t.shape) != shape)):
            raise _err("%s must be a contiguous int32 tensor on q's device%s" % (name, "" if shape is None else
                                                                               " of shape %s" % (shape,)))
    pages, page_size, Hk = k_cache.shape[0], k_cache.shape[1], k_cache.shape[2]
    if block_table is None:
        if pages != B:
            raise _err("without block_table, k_cache is (batch %d, capacity, kv_heads, head_dim), got %s"
                       % (B, tuple(k_cache.shape)))
        block_table = _identity_tables.get((B, q.get_device()))
        if block_table is None:
            block_table = torch.arange(B, dtype=torch.int32, device=q.device).view(B, 1)
            # Kept only once written (a later call may run on another stream), and never from a
            # CUDA graph's capture (its memory belongs to the graph).
            with torch.cuda.device(q.device):  # the capture state and stream of q's device
                if not torch.cuda.is_current_stream_capturing():
                    torch.cuda.current_stream().synchronize()
                    _identity_tables[(B, q.get_device())] = block_table
    elif block_table.dim() != 2 or block_table.shape[0] != B:
        raise _err("block_table must be (batch %d, pages a sequence), got %s" % (B, tuple(block_table.shape)))
    out, lse = _outputs(q, out, H)
    strides = (*q.stride()[:3], *k_cache.stride()[:3], *v_cache.stride()[:3], *out.stride()[:3])
    _call("attention_paged", q, [B, H, Hk, Sq, block_table.shape[1] * page_size, D, page_size, pages], strides,
          causal, scale, [q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), block_table.data_ptr(),
                          seq_lens.data_ptr(), out.data_ptr(), lse.data_ptr()])
    return (out, lse) if return_lse else out


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False, scale=None,
                     out=None, return_lse=False):
    """Attention over packed sequences of different lengths, as flash_attn_varlen_func takes them (the
    op attention_varlen): q (total_q, heads, head_dim), k and v (total_kv, kv_heads, head_dim), bf16 or
    f16 on one CUDA device, any token and head strides with a contiguous last dimension;
    cu_seqlens_q and cu_seqlens_k int32 (batch + 1,) on q's device, sequence b the tokens
    [cu[b], cu[b + 1]); max_seqlen_q / max_seqlen_k at least every sequence's length (the kernels
    trust the lengths, as FlashAttention's do: rows past max_seqlen_q are not computed, and only the
    totals are checked). Every token of k and v must be finite, those between the sequences too (a
    key past a sequence's end has weight exactly 0, but 0 x inf is NaN). causal: bottom-right aligned
    to each sequence's own lengths. The runtime's choice is kept per (batch, longest lengths), not
    per token count. Returns O laid out as q (and the float32 log-sum-exp (heads, total_q) with return_lse,
    +inf for a row that sees no key)."""
    import torch

    _check_inputs(q, (("k", k), ("v", v)), dims=3)
    Tq, H, D = q.shape
    if k.shape != v.shape or k.shape[2] != D:
        raise _err("k and v must be (total_kv, kv_heads, head_dim %d), got %s and %s"
                   % (D, tuple(k.shape), tuple(v.shape)))
    Tk, Hk = k.shape[0], k.shape[1]
    B = None
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if (not isinstance(t, torch.Tensor) or t.dtype != torch.int32 or t.get_device() != q.get_device()
                or not t.is_contiguous() or t.dim() != 1 or t.shape[0] < 2):
            raise _err("%s must be a contiguous int32 tensor (batch + 1,) on q's device" % name)
        if B is not None and t.shape[0] - 1 != B:
            raise _err("cu_seqlens_q and cu_seqlens_k must have one length (batch + 1), got %d and %d"
                       % (B + 1, t.shape[0]))
        B = t.shape[0] - 1
    for name, x in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise _err("%s must be an int >= 1, got %r" % (name, x))
    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or out.get_device() != q.get_device() or out.stride(-1) != 1:
        raise _err("out must be like q (shape %s, %s, last dimension contiguous)" % (tuple(q.shape), q.dtype))
    lse = torch.empty((H, Tq), dtype=torch.float32, device=q.device)
    strides = (*q.stride()[:2], *k.stride()[:2], *v.stride()[:2], *out.stride()[:2])
    _call("attention_varlen", q, [B, H, Hk, max_seqlen_q, max_seqlen_k, D, Tq, Tk], strides, causal, scale,
          [q.data_ptr(), k.data_ptr(), v.data_ptr(), cu_seqlens_q.data_ptr(), cu_seqlens_k.data_ptr(),
           out.data_ptr(), lse.data_ptr()])
    return (out, lse) if return_lse else out
