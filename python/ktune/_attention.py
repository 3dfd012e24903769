"""Attention on PyTorch CUDA tensors (the op "attention"; kernel_templates/attention/)."""

from . import _ktune, _runtime
from ._rows import _current_stream, _dtype_codes
from ._runtime import runtime


def _err(msg):
    return _ktune.UsageError("ktune.attention: " + msg)


def attention(q, k, v, causal=False, scale=None, out=None, return_lse=False):
    """softmax(scale q k^T) v, as flash_attn_func takes it: q (batch, q_len, heads, head_dim), k and v
    (batch, kv_len, kv_heads, head_dim), bf16 or f16 on one CUDA device, heads a multiple of kv_heads
    (GQA, MQA). Any strides whose last dimension is contiguous: a (batch, heads, seq, head_dim) tensor
    passes as x.transpose(1, 2). causal: bottom-right aligned as FlashAttention's (query i sees keys
    j <= i + kv_len - q_len). scale: default 1 / sqrt(head_dim). out: where O goes (default: a new
    tensor laid out as q). return_lse: also return the log-sum-exp of every row, float32 (batch,
    heads, q_len) (+inf for a row that sees no key)."""
    import torch

    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or not t.is_cuda:
            raise _err("%s must be a CUDA tensor" % name)
        if t.dim() != 4:
            raise _err("%s must be 4-d (batch, seq, heads, head_dim), got shape %s" % (name, tuple(t.shape)))
        if t.dtype != q.dtype or t.device != q.device:
            raise _err("q, k and v must share dtype and device (%s on %s, %s on %s)" % (q.dtype, q.device, t.dtype, t.device))
        if t.numel() and t.stride(-1) != 1:
            raise _err("%s's last dimension must be contiguous (strides %s)" % (name, t.stride()))
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise _err("dtype must be bfloat16 or float16, got %s" % q.dtype)
    B, Sq, H, D = q.shape
    if k.shape != v.shape or k.shape[0] != B or k.shape[3] != D:
        raise _err("k and v must be (batch %d, kv_len, kv_heads, head_dim %d), got %s and %s"
                   % (B, D, tuple(k.shape), tuple(v.shape)))
    Sk, Hk = k.shape[1], k.shape[2]
    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or out.device != q.device or out.stride(-1) != 1:
        raise _err("out must be like q (shape %s, %s, last dimension contiguous)" % (tuple(q.shape), q.dtype))
    lse = torch.empty((B, H, Sq), dtype=torch.float32, device=q.device)
    strides = (*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3])
    current = torch.cuda.current_device()
    index = q.get_device()
    scale = 0.0 if scale is None else float(scale)
    ptrs = [q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr()]
    # The launch goes to the current CUDA context; switching devices costs microseconds a call
    # (a decode step's attention runs in tens of them), so only when q is elsewhere. A problem seen
    # before (shape, dtype, strides, causal, scale, device) is called through its prepared handle:
    # no Problem to build, validate and look up by key again.
    if index == current:
        key = ("attention", q.dtype, B, H, Hk, Sq, Sk, D, strides, bool(causal), scale, index)
        call = _runtime.calls.get(key)
        if call is None:
            call = runtime(device=index).buffers_call("attention", _dtype_codes()[q.dtype], [B, H, Hk, Sq, Sk, D],
                                                      {"scale": scale}, list(strides), "causal" if causal else "full")
            _runtime.remember_call(key, call)
        call(ptrs, _current_stream(index))
    else:
        with torch.cuda.device(index):
            runtime(device=index).run("attention", _dtype_codes()[q.dtype], [B, H, Hk, Sq, Sk, D], ptrs,
                                      {"scale": scale}, _current_stream(index), list(strides),
                                      "causal" if causal else "full")
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

    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(t, torch.Tensor) or not t.is_cuda:
            raise _err("%s must be a CUDA tensor" % name)
        if t.dim() != 4:
            raise _err("%s must be 4-d, got shape %s" % (name, tuple(t.shape)))
        if t.dtype != q.dtype or t.get_device() != q.get_device():
            raise _err("q, k_cache and v_cache must share dtype and device")
        if t.numel() and t.stride(-1) != 1:
            raise _err("%s's last dimension must be contiguous (strides %s)" % (name, t.stride()))
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise _err("dtype must be bfloat16 or float16, got %s" % q.dtype)
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
        block_table = torch.arange(B, dtype=torch.int32, device=q.device).view(B, 1)
    elif block_table.dim() != 2 or block_table.shape[0] != B:
        raise _err("block_table must be (batch %d, pages a sequence), got %s" % (B, tuple(block_table.shape)))
    kv_len = block_table.shape[1] * page_size
    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or out.get_device() != q.get_device() or out.stride(-1) != 1:
        raise _err("out must be like q (shape %s, %s, last dimension contiguous)" % (tuple(q.shape), q.dtype))
    lse = torch.empty((B, H, Sq), dtype=torch.float32, device=q.device)
    strides = (*q.stride()[:3], *k_cache.stride()[:3], *v_cache.stride()[:3], *out.stride()[:3])
    scale = 0.0 if scale is None else float(scale)
    dims = [B, H, Hk, Sq, kv_len, D, page_size, pages]
    ptrs = [q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), block_table.data_ptr(), seq_lens.data_ptr(),
            out.data_ptr(), lse.data_ptr()]
    index = q.get_device()
    layout = "causal" if causal else "full"
    if index == torch.cuda.current_device():
        key = ("attention_paged", q.dtype, *dims, strides, layout, scale, index)
        call = _runtime.calls.get(key)
        if call is None:
            call = runtime(device=index).buffers_call("attention_paged", _dtype_codes()[q.dtype], dims,
                                                      {"scale": scale}, list(strides), layout)
            _runtime.remember_call(key, call)
        call(ptrs, _current_stream(index))
    else:
        with torch.cuda.device(index):
            runtime(device=index).run("attention_paged", _dtype_codes()[q.dtype], dims, ptrs, {"scale": scale},
                                      _current_stream(index), list(strides), layout)
    return (out, lse) if return_lse else out
