import functools
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


@functools.lru_cache(maxsize=None)
def _gpus():
    """ktune's view of the GPUs, as the C++ GPU tests see it (list_devices, tests/gpu_env.h):
    (gpus, why there are none, error). None only where there is truly no GPU (no driver library,
    the toolkit's stub, a driver without a device); a driver that is installed but broken is an
    error, which fails the tests that need or rule out a GPU instead of skipping them."""
    import ktune
    try:
        gpus, why = ktune._ktune.devices()
    except ktune.KtuneError as e:
        return [], "", str(e)
    return list(gpus), why, ""


requires_torch = pytest.mark.skipif(_torch() is None, reason="PyTorch is not installed")
# torch.ops.ktune.*: registered with torch.library.custom_op, which came with PyTorch 2.4 (an older
# PyTorch imports ktune without them, with a warning).
requires_custom_ops = pytest.mark.skipif(
    _torch() is None or not hasattr(_torch().library, "custom_op"),
    reason="torch.ops.ktune.* need PyTorch 2.4+ (torch.library.custom_op)")
# Needs a GPU and PyTorch: skipped where there is no GPU, or no PyTorch at all (an optional
# dependency; tools/python-gpu-check.sh requires it); fails where the driver is broken or where
# PyTorch and ktune disagree about the GPU.
requires_gpu = pytest.mark.ktune_gpu
# Checks what happens without a GPU: skipped where there is one; fails where the driver is broken.
requires_no_gpu = pytest.mark.ktune_no_gpu


def pytest_configure(config):
    config.addinivalue_line("markers", "ktune_gpu: needs a GPU and PyTorch (conftest.requires_gpu)")
    config.addinivalue_line("markers", "ktune_no_gpu: checks the behaviour without a GPU (conftest.requires_no_gpu)")
    config.addinivalue_line("markers", "ray: a local Ray cluster (test_ray.py; ctest Python.ray, not Python.pytest)")


def pytest_runtest_setup(item):
    needs_gpu = item.get_closest_marker("ktune_gpu") is not None
    needs_none = item.get_closest_marker("ktune_no_gpu") is not None
    if not (needs_gpu or needs_none):
        return
    gpus, why, broken = _gpus()
    if broken:
        pytest.fail("no GPU test can run: " + broken, pytrace=False)
    if needs_none and gpus:
        pytest.skip("checks the behaviour without a GPU; this machine has %s" % gpus[0]["name"])
    if not needs_gpu:
        return
    torch = _torch()
    torch_gpu = torch is not None and torch.cuda.is_available()
    if not gpus:
        if torch_gpu:
            pytest.fail("PyTorch sees %s but ktune sees no GPU: %s" % (torch.cuda.get_device_name(), why), pytrace=False)
        pytest.skip("no GPU: " + why)
    if torch is None:
        pytest.skip("needs PyTorch, which is not installed (the GPU is %s)" % gpus[0]["name"])
    if not torch_gpu:
        pytest.fail("ktune sees %s but PyTorch %s (CUDA %s) cannot use it" % (gpus[0]["name"], torch.__version__, torch.version.cuda),
                    pytrace=False)
