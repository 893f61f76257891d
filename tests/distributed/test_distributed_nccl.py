"""fastsoftmax.distributed on GPUs: on 2 GPUs over NCCL, the gloo suite's cases plus larger shapes
and collective="peer", with the kernels compiled for the GPU (skipped without two CUDA devices);
collective="peer" between two processes on one GPU (skipped without one)."""

import os

import distributed_cases as cases
import pytest
import torch
from distributed_harness import run_ranks

# NVLink multicast (NVLS) stays off on the shared GPU machines; children inherit this.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

pytestmark = pytest.mark.gpu
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")


def fresh_seed() -> int:
    return int.from_bytes(os.urandom(4), "little")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_peer_exchange_two_processes_one_gpu():
    """collective="peer" with both ranks on one GPU: the GPU time-slices the two processes'
    kernels, so this checks results and the exchange protocol, not speed."""
    run_ranks(2, cases.peer_exchange, fresh_seed(), backend="gloo+cuda:0")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_peer_exchange_three_processes_one_gpu():
    """Three ranks (every slot array holds three pairs a row; uneven shards of three)."""
    run_ranks(3, cases.peer_exchange_small, fresh_seed(), backend="gloo+cuda:0")


@two_gpus
def test_peer_exchange_nccl():
    run_ranks(2, cases.peer_exchange, fresh_seed(), backend="nccl")


@two_gpus
def test_everything_nccl():
    run_ranks(2, cases.everything, fresh_seed(), backend="nccl")


@two_gpus
def test_large_shapes_nccl():
    run_ranks(2, cases.large_shapes, fresh_seed(), backend="nccl")
