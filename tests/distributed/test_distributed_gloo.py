"""fastsoftmax.distributed on 2 and 3 gloo ranks (CPU), against torch on the gathered tensors.

Spawning ranks costs seconds (each imports torch and triton), so each test runs many cases in one
process group: every function, forward and backward, both collectives, chunked rows, float32 and
bfloat16, uneven and empty shards, through the Triton kernels (interpreter) and the torch path.
"""

import os

import distributed_cases as cases
from distributed_harness import run_ranks


def fresh_seed() -> int:
    return int.from_bytes(os.urandom(4), "little")


def test_softmax_log_softmax_numerics_and_mismatches_on_2_ranks():
    run_ranks(2, cases.softmax_numerics_and_mismatches, fresh_seed())


def test_cross_entropy_on_2_ranks():
    run_ranks(2, cases.cross_entropy, fresh_seed())


def test_everything_on_3_ranks():
    run_ranks(3, cases.everything_quick, fresh_seed())
