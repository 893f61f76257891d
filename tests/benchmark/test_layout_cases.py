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
