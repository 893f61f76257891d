"""Fixtures of the CUDA backend's GPU tests."""

import pytest
import torch


@pytest.fixture(scope="module")
def backend():
    """The CUDA backend, or a skip naming why it cannot run on this machine."""
    from fastsoftmax.backends.cuda import BACKEND

    reason = BACKEND.unavailable_reason(torch.device("cuda", torch.cuda.current_device()))
    if reason:
        pytest.skip(f"backend 'cuda' cannot run here: {reason}")
    return BACKEND
