"""ktune: tuned CUDA GEMM kernels from Python.

    import ktune
    c = ktune.gemm(a, b)                       # PyTorch CUDA tensors (or CuPy arrays), f32 / bf16 / f16
    ktune.best_config(4096, 4096, 4096, dtype="bf16", arch="sm_90")   # what would run, and why
    ktune.tune(["4096x4096x4096"], budget_seconds=30)                  # search on the GPU, with a progress bar
    torch.ops.ktune.gemm(a, b)                 # the same GEMM as a PyTorch custom op (torch.compile traces it)
    ktune.softmax(x, scale=0.125); ktune.layer_norm(x, w, b); ktune.rms_norm(x, w)   # row ops, last dimension
    o = ktune.attention(q, k, v, causal=True)     # (batch, seq, heads, head_dim), bf16 / f16, GQA
    o = ktune.attention_decode(q, k_cache, v_cache, seq_lens, block_table)  # KV cache, paged or not
    o = ktune.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal=True)  # packed sequences
    ktune.run("scale_add", x, y, out, alpha=2.0)   # any registered op by name (ktune.ops() lists them)
    k = ktune.Kernel("spec.json"); k.tune([(4096, 4096)]); k(x, out, rows=4096, cols=4096)   # your own kernel

The package imports without PyTorch; the custom op is registered when torch can be imported.
One ktune runtime per process and device, created on first use (ktune.configure() sets its
options first; thread-safe as the C++ Runtime is: include/ktune/runtime.h).
"""

import pkgutil as _pkgutil

# A build tree holds the compiled module in BUILD/python/ktune/ while these sources stay in
# python/ktune/: with both on sys.path, the package spans the two (README, "Python").
__path__ = _pkgutil.extend_path(__path__, __name__)

try:
    from . import _ktune
except ImportError as _e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "ktune: the compiled module ktune._ktune could not be loaded (%s). Install the package with "
        "`pip install .` from the ktune repository, or build it with CMake (-DKTUNE_PYTHON=ON, target _ktune) and "
        "put both python/ and BUILD/python on PYTHONPATH (README, 'Python')." % (_e,)
    ) from _e

__version__ = _ktune.__version__

#: Any failure inside ktune (CUDA, NVRTC, cuBLAS, SQLite, no GPU); a RuntimeError.
KtuneError = _ktune.KtuneError
#: An argument ktune cannot take (bad dtype, shape mismatch, a tensor not on a CUDA device); a ValueError.
UsageError = _ktune.UsageError

from ._runtime import best_config, configure, default_db_path, devices, runtime, torch_fast_path  # noqa: E402
from ._ktune import DEFAULT_CUBIN_CACHE  # noqa: E402
from ._gemm import gemm  # noqa: E402
from ._rows import layer_norm, rms_norm, softmax  # noqa: E402
from ._ops import op, ops, run  # noqa: E402
from ._attention import attention, attention_decode, attention_varlen  # noqa: E402
from ._tune import tune  # noqa: E402
from ._kernel import Kernel  # noqa: E402

try:  # the PyTorch custom ops torch.ops.ktune.*, where torch is installed
    import torch as _torch  # noqa: F401
except ImportError:
    _torch = None
if _torch is not None and hasattr(getattr(_torch, "library", None), "custom_op"):
    from . import _torch_ops  # noqa: E402,F401
elif _torch is not None:  # torch.library.custom_op came with PyTorch 2.4; the functions above work without it
    import warnings as _warnings

    _warnings.warn("ktune: PyTorch %s has no torch.library.custom_op (PyTorch 2.4+): torch.ops.ktune.* are not "
                   "registered; ktune.gemm, ktune.attention and the others work as functions" % _torch.__version__,
                   stacklevel=2)

__all__ = [
    "__version__",
    "DEFAULT_CUBIN_CACHE",
    "Kernel",
    "attention",
    "attention_decode",
    "attention_varlen",
    "KtuneError",
    "UsageError",
    "best_config",
    "configure",
    "default_db_path",
    "devices",
    "gemm",
    "layer_norm",
    "op",
    "ops",
    "rms_norm",
    "run",
    "runtime",
    "softmax",
    "torch_fast_path",
    "tune",
]
