"""benchmarks/grid_row_probe.py's shape syntax and tensor sets, on the CPU: a probe that laid its
tensors out otherwise than its label says would time the wrong problem."""

from __future__ import annotations

import torch
from benchmark_scripts import load_benchmark_script


def _probe():
    return load_benchmark_script("grid_row_probe")


def test_shapes_with_a_step_a_pitch_or_an_offset():
    probe = _probe()
    assert probe.parse_shape("64x262152") == ((64, 262152), 1, 0, 0)
    assert probe.parse_shape("32x4096x1024s2") == ((32, 4096, 1024), 2, 0, 0)
    assert probe.parse_shape("2670x50257p50264") == ((2670, 50257), 1, 50264, 0)
    assert probe.parse_shape("32x4096x1024o1") == ((32, 4096, 1024), 1, 0, 1)


def test_offset_sets_hold_the_inputs_in_their_storage_and_the_output_dense():
    probe = _probe()
    for backward in (False, True):
        for tensors in probe.make_sets((3, 5, 10), torch.float32, backward, offset=1, device="cpu"):
            *inputs, out = tensors
            assert len(inputs) == (2 if backward else 1)
            for t in inputs:
                assert t.storage_offset() == 1 and t.is_contiguous() and torch.isfinite(t).all()
                whole = torch.as_strided(t, (1,), (1,), 0)
                assert torch.isnan(whole).all()  # the element before the view: never a value
            assert out.storage_offset() == 0 and out.is_contiguous()


def test_pitched_sets_hold_every_tensor_at_the_pitch():
    probe = _probe()
    for backward in (False, True):
        sets = probe.make_sets((3, 10), torch.float32, backward, pitch=16, device="cpu")
        for tensors in sets:
            assert len(tensors) == (3 if backward else 2)
            for t in tensors:
                assert t.shape == (3, 10) and t.stride() == (16, 1)
                assert torch.isnan(t.as_strided((3, 6), (16, 1), t.storage_offset() + 10)).all()
            assert torch.isfinite(tensors[0]).all()
    dense = probe.make_sets((3, 10), torch.float32, True, device="cpu")[0]
    assert all(t.is_contiguous() for t in dense)
