"""fastsoftmax.distributed on 2 and 3 gloo ranks (CPU), against torch on the gathered tensors.

Spawning ranks costs seconds (each imports torch and triton), so each test runs many cases in one
process group: every function, forward and backward, both collectives, chunked rows, every
reduction, ignore_index and label smoothing, float32 and bfloat16, uneven and empty shards,
non-finite rows, mismatched ranks, through the Triton kernels (interpreter) and the torch path.
A failure names the case, the rank and the seed.
"""

import os

import distributed_cases as cases
from distributed_harness import run_ranks


def fresh_seed() -> int:
    return int.from_bytes(os.urandom(4), "little")


def test_everything_on_2_ranks():
    run_ranks(2, cases.everything, fresh_seed())


def test_fewer_cases_on_3_ranks():
    run_ranks(3, cases.everything_quick, fresh_seed())


def test_dtensor_inputs_on_2_ranks():
    run_ranks(2, cases.dtensor_inputs, fresh_seed())


def test_cross_entropy_edges_on_2_ranks():
    run_ranks(2, cases.cross_entropy_edges, fresh_seed())


def test_one_rank_mismatches_on_3_ranks():
    run_ranks(3, cases.one_rank_mismatches)
