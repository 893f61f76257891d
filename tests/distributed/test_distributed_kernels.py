"""The shard-local kernels of fastsoftmax.distributed, in this process: the Triton kernels (on the
GPU, or in the interpreter on CPU tensors) and the torch path, against float64 references. Under
the interpreter tiles are shrunk so that the chunk loops, several row blocks and several column
blocks all run on small tensors."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsoftmax.distributed import _local

SHAPES = [(5, 37), (1, 1), (9, 3), (4, 0), (0, 6)]
#: float32 results against float64 references
FLOAT32 = {"rtol": 1e-5, "atol": 1e-5}


@pytest.fixture(params=["triton", "torch"])
def device(request, monkeypatch):
    """Where the tensors of a test live: the GPU, or the CPU (Triton interpreter or torch ops)."""
    if request.param == "torch":
        monkeypatch.setattr(_local, "TRITON_ON_CPU", False)
        return torch.device("cpu")
    if _local.INTERPRETED:
        monkeypatch.setattr(_local, "TRITON_ON_CPU", True)
        monkeypatch.setattr(_local, "INTERPRETED_TILE", 16)
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.skip("the Triton kernels need a GPU or the interpreter")
    return torch.device("cuda")


def strided(rows, n, dtype):
    """A (rows, n) view with a column stride of 2, as a softmax over a non-last dim gives."""
    return (torch.randn(rows, n, 2) * 4).to(dtype)[..., 0]


def stats_reference(x: torch.Tensor):
    x = x.double()
    if x.shape[1] == 0:
        return torch.full((x.shape[0],), float("-inf"), dtype=torch.float64), torch.zeros(
            x.shape[0], dtype=torch.float64
        )
    m = x.amax(1)
    return m, torch.exp(x - m[:, None]).sum(1)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_row_stats_and_normalise(device, shape, dtype):
    x = strided(*shape, dtype).to(device)
    stats = _local.row_stats(x)
    assert stats.dtype == torch.float32 and stats.shape == (2, shape[0])
    m, s = stats_reference(x.cpu())
    torch.testing.assert_close(stats[0].cpu().double(), m, **FLOAT32)
    torch.testing.assert_close(stats[1].cpu().double(), s, **FLOAT32)
    # Two "ranks": the row cut in two, each half's statistics merged inside the normalise kernel.
    cut = shape[1] // 3
    halves = torch.stack((_local.row_stats(x[:, :cut]), _local.row_stats(x[:, cut:])))
    for log in (False, True):
        y = _local.normalise(x[:, cut:], halves, log)
        expected = (torch.log_softmax if log else torch.softmax)(x.cpu().double(), 1)[:, cut:]
        torch.testing.assert_close(
            y.cpu().double(),
            expected,
            rtol=1e-5 if dtype == torch.float32 else 1.6e-2,
            atol=1e-6 if dtype == torch.float32 else 1e-3,
        )


def test_row_stats_special_values(device):
    x = torch.randn(4, 20)
    x[0] = float("-inf")
    x[1, 5] = float("inf")
    x[2, 7] = float("nan")
    x[3] *= 1e4
    stats = _local.row_stats(x.to(device)).cpu()
    assert stats[0, 0] == float("-inf") and stats[1, 0] == 0  # an all -inf shard adds nothing
    assert torch.isnan(stats[1, 1]) and torch.isnan(stats[1, 2])  # +inf and NaN poison the row
    assert torch.isfinite(stats[:, 3]).all()  # large logits do not overflow


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("log", [False, True])
def test_backward_pieces(device, dtype, log):
    x = (torch.randn(6, 37) * 3).double().requires_grad_()
    y64 = (torch.log_softmax if log else torch.softmax)(x, 1)
    dy = torch.randn(6, 37)
    y64.backward(dy.double())
    y = y64.detach().to(device, dtype)
    upstream = torch.randn(6, 37, 2, device=device).to(dtype)[..., 0].copy_(dy)  # strided, as autograd may give
    total = _local.grad_total(y, upstream, log)
    dx = _local.grad_apply(y, upstream, total, log).cpu()
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 3e-2, "atol": 3e-2}
    torch.testing.assert_close(dx.double(), x.grad, **tolerance)


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_pieces(device, smoothing):
    vocab, start, width = 37, 10, 20
    logits = torch.randn(7, vocab, dtype=torch.float64) * 3
    target = torch.randint(0, vocab, (7,))
    target[2] = -100
    target[3] = start  # owned by the shard, at its first column
    shard = logits[:, start : start + width].float().to(device)
    rest = torch.cat((logits[:, :start], logits[:, start + width :]), 1).float().to(device)
    target = target.to(device)
    stats = torch.stack((_local.row_stats(shard, target, start), _local.row_stats(rest, target, -(10**6))))
    # the rest's target logits are wrong on purpose (vocab_start far away): it owns no target
    assert bool((stats[1, 3] == 0).all())
    owned = (target >= start) & (target < start + width)
    target_logits = logits.float().to(device).gather(1, target.clamp(min=0)[:, None])[:, 0]
    stats[1, 3] = torch.where(owned, 0.0, target_logits)
    lse, loss = _local.cross_entropy_rows(stats, target, -100, 1.0 - smoothing, smoothing / vocab)
    target = target.cpu()
    expected = torch.nn.functional.cross_entropy(logits, target, reduction="none", label_smoothing=smoothing)
    torch.testing.assert_close(lse.cpu().double(), torch.logsumexp(logits, 1), **FLOAT32)
    torch.testing.assert_close(loss.cpu().double(), expected, **FLOAT32)
    scale = torch.rand(7)
    dx = _local.cross_entropy_grad(
        shard, lse, target.to(device), scale.to(device), start, -100, 1.0 - smoothing, smoothing / vocab
    )
    reference = logits.clone().requires_grad_()
    torch.nn.functional.cross_entropy(reference, target, reduction="none", label_smoothing=smoothing).backward(
        scale.double()
    )
    torch.testing.assert_close(dx.cpu().double(), reference.grad[:, start : start + width], **FLOAT32)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_peer_kernels_compile(arch):
    """collective="peer"'s kernels (CUDA C++, NVRTC) compile for both architectures, without a GPU."""
    pytest.importorskip("cuda.core")
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.distributed import _peer

    if compiler.nvrtc_unavailable_reason():
        pytest.skip(compiler.nvrtc_unavailable_reason())
    cubin = compiler.compile_cubin(_peer.source(_peer.all_kernels()), arch, "peer_rows", use_cache=False)
    missing = [_peer.kernel_name(*k) for k in _peer.all_kernels() if _peer.kernel_name(*k).encode() not in cubin]
    assert not missing


@settings(max_examples=300, deadline=None)
@given(
    rows=st.integers(1, 20000),
    n=st.integers(0, 3_000_000),
    itemsize=st.sampled_from([2, 4]),
    aligned=st.booleans(),
    resident=st.integers(1, 2000),
)
def test_peer_shape(rows, n, itemsize, aligned, resident):
    """collective="peer"'s launches: every row once, every column of a row in exactly one CTA, a
    chunk a whole number of packs, no grid larger than the GPU holds, and launches that depend on
    the rows alone (every rank must make the same ones, whatever its shard width)."""
    from fastsoftmax.distributed import _peer

    pack = 16 // itemsize if aligned else 1
    shape = _peer.peer_shape(rows, n, itemsize, pack, resident)
    assert shape.chunk % pack == 0 and shape.ctas >= 1
    assert shape.ctas * shape.chunk >= n and (shape.ctas - 1) * shape.chunk < max(n, 1)
    covered = 0
    for start, count, groups in shape.launches:
        assert start == covered and 1 <= count <= _peer.ROWS_PER_LAUNCH
        assert 1 <= groups <= count and groups * shape.ctas <= resident
        covered += count
    assert covered == rows
    other = _peer.peer_shape(rows, n // 3 + 1, 6 - itemsize, 1, max(1, resident // 2))
    assert [(start, count) for start, count, _ in other.launches] == [
        (start, count) for start, count, _ in shape.launches
    ]
