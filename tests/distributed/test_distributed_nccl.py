"""fastsoftmax.distributed on 2 GPUs over NCCL: the gloo suite's cases plus larger shapes, with the
Triton kernels compiled for the GPU. Skipped without two CUDA devices."""

import os

import distributed_cases as cases
import pytest
import torch
from distributed_harness import run_ranks

# NVLink multicast (NVLS) stays off on the shared GPU machines; children inherit this.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices"),
]


def fresh_seed() -> int:
    return int.from_bytes(os.urandom(4), "little")


def test_peer_exchange_nccl():
    run_ranks(2, cases.peer_exchange, fresh_seed(), backend="nccl")


def test_everything_nccl():
    run_ranks(2, cases.everything, fresh_seed(), backend="nccl")


def test_large_shapes_nccl():
    run_ranks(2, cases.large_shapes, fresh_seed(), backend="nccl")
