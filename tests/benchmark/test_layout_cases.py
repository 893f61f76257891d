"""The layouts regime builds each case's tensors in the memory layout it names, backward inputs
included (torch.softmax returns a contiguous tensor whatever its input's layout)."""

import pytest
import torch

from fastsoftmax.benchmark import layouts

CASES = layouts.layout_cases()


def small(case: layouts.LayoutCase) -> layouts.LayoutCase:
    shape = tuple(min(size, 6 + i) for i, size in enumerate(case.shape))
    return layouts.LayoutCase(case.cls, case.label, shape, case.dim, case.view)


@pytest.mark.parametrize("case", [small(c) for c in CASES], ids=[c.label for c in CASES])
def test_laid_out_keeps_values_and_takes_the_layout(case):
    values = torch.randn(case.shape, dtype=torch.float64)
    if case.view == "expand":
        values = values[:1].expand(case.shape)  # an expanded case holds one slice
    out = case.laid_out(values)
    fresh = case.make(torch.float64, "cpu")
    assert out.shape == fresh.shape == case.shape
    assert out.stride() == fresh.stride()
    assert out.storage_offset() == fresh.storage_offset()
    torch.testing.assert_close(out, values, rtol=0, atol=0)
    if case.view == "transpose":
        assert not out.is_contiguous() and out.transpose(-1, -2).is_contiguous()
    if case.view == "channels_last":
        assert out.is_contiguous(memory_format=torch.channels_last) and not out.is_contiguous()
    if case.view in ("step", "step_inner"):
        assert not out.is_contiguous()
    if case.view == "expand":
        assert out.stride(0) == 0
    if case.view == "offset":
        assert out.storage_offset() == 1


def test_backward_inputs_take_the_case_layout(monkeypatch):
    case = small(next(c for c in CASES if c.view == "transpose"))
    monkeypatch.setattr(
        layouts.LayoutCase, "make", lambda self, dtype, device: self.laid_out(torch.randn(self.shape, dtype=dtype))
    )
    ((dy, y),) = layouts.input_sets(case, torch.float32, backward=True, budget=1)
    for tensor in (dy, y):
        assert tensor.stride() == case.make(torch.float32, "cpu").stride()
    torch.testing.assert_close(y.sum(case.dim), torch.ones(y.shape[1 - case.dim]))


def test_log_softmax_backward_inputs_and_losses_name_the_function(monkeypatch):
    # --log: the backward's y is log-softmax's output in the case's layout, and a loss names the
    # function it was measured on
    case = small(next(c for c in CASES if c.view == "transpose"))
    monkeypatch.setattr(
        layouts.LayoutCase, "make", lambda self, dtype, device: self.laid_out(torch.randn(self.shape, dtype=dtype))
    )
    ((dy, y),) = layouts.input_sets(case, torch.float32, backward=True, budget=1, log=True)
    assert y.stride() == dy.stride() == case.make(torch.float32, "cpu").stride()
    torch.testing.assert_close(y.exp().sum(case.dim), torch.ones(y.shape[1 - case.dim]))
    row = {"case": case.label, "dtype": "float32", "direction": "backward", "goal": 0.5}
    row.update(fastsoftmax=0.6, torch=0.1, compile=0.7)
    assert layouts.losses([dict(row, function="log_softmax")]) == [
        f"{case.label} float32 log-softmax backward: compile 0.70 > fastsoftmax 0.60"
    ]
    assert layouts.losses([dict(row, function="softmax")]) == [
        f"{case.label} float32 backward: compile 0.70 > fastsoftmax 0.60"
    ]
    assert " log bac" in layouts.format_rows([dict(row, function="log_softmax")], ["fastsoftmax"])


def test_rounds_alternate_the_implementations_and_keep_each_best(monkeypatch):
    # with rounds, every implementation is timed once a round, in turn, and keeps its best time; one
    # that fails is reported once and not timed again
    case = small(CASES[0])
    order = []
    times = {"fast": [3.0, 1.0], "slow": [2.0, 2.5]}

    def fake_time(fn, inputs):
        name = fn()
        order.append(name)
        if name == "broken":
            raise RuntimeError("no kernel")
        return times[name][sum(1 for seen in order if seen == name) - 1]

    impls = {"fast": lambda: "fast", "slow": lambda: "slow", "broken": lambda: "broken"}
    monkeypatch.setattr(layouts, "input_sets", lambda *args, **kwargs: [()])
    monkeypatch.setattr(layouts, "implementations", lambda *args: impls)
    monkeypatch.setattr(layouts, "time_ms", fake_time)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    row = layouts.run_case(case, torch.float32, False, copy=1.0, rounds=2)
    assert order == ["fast", "slow", "broken", "fast", "slow"]
    assert row["fast_us"] == 1000.0 and row["slow_us"] == 2000.0
    assert row["broken"] is None and "no kernel" in row["broken_error"]
    assert row["fast"] == round(case.bytes_moved(4, False) / 1.0 / 1e6, 3)
