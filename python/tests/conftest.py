import os
import tempfile

import pytest

# Answers from the shipped tables alone: no user database (a missing file means none).
os.environ["KTUNE_DB"] = os.path.join(tempfile.mkdtemp(prefix="ktune-pytest-"), "none.db")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def gpu_available():
    torch = _torch()
    return torch is not None and torch.cuda.is_available()


requires_torch = pytest.mark.skipif(_torch() is None, reason="PyTorch is not installed")
requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs PyTorch with a CUDA GPU")
