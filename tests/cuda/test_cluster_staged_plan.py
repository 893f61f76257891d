"""The choice of the cluster tier's staged form (plans._cluster_staged), on the CPU: fake kernels
whose resident clusters follow their thread counts as an H100's do for float32 32 x 151936."""

from __future__ import annotations

import pytest
import torch

from fastsoftmax.backends.cuda import plans, tiers
from fastsoftmax.backends.cuda.instances import cluster_shape, cluster_slots, cluster_staged_smem


class FakeKernel:
    def __init__(self, storage, threads, smem):
        self.storage, self.threads, self.smem = storage, threads, smem

    def resident_clusters(self):
        # 132 SMs, 16-CTA clusters: three CTAs an SM above 256 threads, four at 256 or fewer
        return 132 * (4 if self.threads <= 256 else 3) // 16


def choose(rows, n=151936, dtype=torch.float32, backward=False, align=0, **tuning):
    shape = cluster_shape(n, dtype, backward, rows=rows, sm_count=132, aligned=align == 0)
    plain = FakeKernel("", shape.threads, shape.smem_bytes)
    with tiers.tuned(**tuning):
        chosen = plans._cluster_staged(
            FakeKernel, shape, rows, n, dtype, backward, align, tiers.current_tuning(), plain.resident_clusters()
        )
    return shape, chosen


def test_staged_where_it_makes_the_launch_one_wave():
    shape, chosen = choose(32)
    assert shape.threads == 320 and shape.held // shape.pack == 8
    kernel, resident = chosen
    assert (kernel.storage, kernel.threads) == ("staged", 256)
    assert resident >= 32
    slots = cluster_slots(151936, torch.float32, shape.ctas, True)
    assert kernel.smem == cluster_staged_smem(slots, 8, 256) == (slots - 8 * 256) * 16 > 0


def test_register_held_launch_kept_where_it_is_one_wave_or_cannot_become_one():
    assert choose(24)[1] is None  # 24 clusters of 320 threads are resident at once
    assert choose(64)[1] is None  # no thread count makes 64 rows one wave
    assert choose(32, backward=True)[1] is None
    assert choose(32, align=4)[1] is None
    assert choose(32, cluster_staged_threads=0)[1] is None


def test_forced_thread_count_and_refusals():
    kernel, _ = choose(4, cluster_staged_threads=128)[1]
    assert (kernel.storage, kernel.threads) == ("staged", 128)
    for kwargs in ({"backward": True}, {"align": 2}):
        with pytest.raises(ValueError, match="stages slots in shared memory"):
            choose(4, cluster_staged_threads=128, **kwargs)
    with pytest.raises(ValueError, match="stages slots in shared memory"):
        choose(4, cluster_staged_threads=320)
    with pytest.raises(ValueError, match="not 0 or a positive multiple of 32"):
        tiers.Tuning(cluster_staged_threads=100)
