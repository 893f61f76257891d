"""Property tests: random shapes, dims, dtypes and layouts against float64, plus the invariants
of softmax itself (rows sum to one, shift invariance)."""

from dataclasses import dataclass

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reference import DEVICE, check_backward, check_forward

import fastsoftmax
from fastsoftmax.backends.triton import TritonBackend

DTYPES = st.sampled_from([torch.float32, torch.float16, torch.bfloat16])
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
#: per tier: the interpreter takes seconds an example, and one test a tier lets the test workers
#: share them
TIER_SETTINGS = settings(SETTINGS, max_examples=8)


@dataclass(frozen=True)
class View:
    """How a problem's input lies in memory: ``step`` elements apart along its innermost axis,
    ``offset`` elements into its storage (off every 16-byte boundary unless 0), and the axis
    ``expanded`` (stride 0: one slice read for all) where not None."""

    step: int = 1
    offset: int = 0
    expanded: int | None = None

    def make(self, shape: list, dtype: torch.dtype) -> torch.Tensor:
        held = [1 if axis == self.expanded else size for axis, size in enumerate(shape)]
        held[-1] *= self.step
        values = (torch.randn(held, device=DEVICE) * 3).to(dtype)
        storage = torch.empty(self.offset + values.numel(), device=DEVICE, dtype=dtype)
        x = storage[self.offset :].view(held).copy_(values)[..., :: self.step]
        return x.expand(shape)


@st.composite
def problems(draw):
    shape = draw(st.lists(st.integers(1, 12), min_size=1, max_size=4))
    if draw(st.booleans()):
        # one long axis, keeping the whole tensor small enough for the interpreter
        others = torch.Size(shape).numel()
        shape[draw(st.integers(0, len(shape) - 1))] = draw(st.integers(13, max(13, 30000 // others)))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    permutation = draw(st.permutations(range(len(shape))))
    step, offset = draw(st.sampled_from([1, 1, 2, 3])), draw(st.sampled_from([0, 0, 1, 3]))
    broadcast = [axis for axis, size in enumerate(shape) if size > 1]
    expanded = draw(st.sampled_from(broadcast)) if broadcast and draw(st.integers(0, 3)) == 0 else None
    view = View(step, offset, expanded)
    return shape, dim, permutation, draw(DTYPES), draw(st.booleans()), view


def _held(tier, x, dim, backward):
    """``tier``, or "online" where the tile tier cannot hold the reduced axis in registers (it refuses
    a forced problem it cannot hold: axes past MAX_TILE, MAX_TILE_BACKWARD backward, strided axes
    sooner, a 32-byte sector of columns a row)."""
    if tier != "tile":
        return tier
    outer, n, inner = fastsoftmax._layout.canonical_pair(x, dim)[0].shape
    return tier if TritonBackend().supports("tile", outer, n, inner, x.dtype, backward) else "online"


def _run(x, dim, log, tier):
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    if tier is None:
        return op(x, dim, backend="triton")
    with fastsoftmax.dispatch.forced("triton", tier):
        return op(x, dim)


@pytest.mark.parametrize("tier", [None, "tile", "online", "split", "relay"])
@TIER_SETTINGS
@given(problem=problems())
@example(problem=([1025, 2], 0, [0, 1], torch.float16, False, View()))  # past what a forced tile holds backward
@example(problem=([4, 5, 6], 1, [2, 0, 1], torch.bfloat16, True, View(step=2, offset=3, expanded=0)))
def test_random_problems_match_float64(tier, problem):
    shape, dim, permutation, dtype, log, view = problem
    x = view.make(shape, dtype).permute(*permutation)
    given_storage = _storage_bytes(x).clone()  # the gaps of a step and the elements before the view too
    dim = dim % len(shape)
    y = _run(x, dim, log, _held(tier, x, dim, False))
    check_forward(y, x, dim, log)
    assert torch.equal(_storage_bytes(x), given_storage), "the input's storage was written"
    if x.numel() <= 5000:
        xg = x.detach().requires_grad_(True)
        dy = torch.randn(x.shape, device=DEVICE).to(dtype)
        tier = _held(tier, x, dim, True)
        with fastsoftmax.dispatch.forced("triton", tier) if tier else _null():
            (dx,) = torch.autograd.grad(
                (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(xg, dim, backend="triton"), xg, dy
            )
        check_backward(dx, x, dy, dim, log)
        assert torch.equal(_storage_bytes(x), given_storage), "the input's storage was written by the backward"


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage under ``t``, as bytes (a view of it, not a copy)."""
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@SETTINGS
@given(st.integers(1, 5000), st.floats(-1e4, 1e4), DTYPES)
def test_rows_sum_to_one_and_shift_invariance(n, shift, dtype):
    x = torch.randn(3, n, device=DEVICE) * 3
    y = fastsoftmax.softmax(x.to(dtype), -1, backend="triton").double()
    assert torch.allclose(
        y.sum(-1),
        torch.ones(3, dtype=torch.float64, device=y.device),
        atol=n * 2e-3 if dtype != torch.float32 else 1e-5,
    )
    if dtype == torch.float32 and abs(shift) < 100:
        shifted = fastsoftmax.softmax(x + shift, -1, backend="triton").double()
        assert torch.allclose(shifted, y, rtol=1e-4, atol=1e-6)
