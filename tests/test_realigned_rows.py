"""The Triton backend's realigned row kernels (kernels.softmax_*_realigned, held or walked): rows cut
at their own 16-byte boundaries into a head, whole vectors and a tail, taken by the tile, row and online
tiers where REALIGNED_ROW_COLS holds the length (here: every length), against float64."""

import pytest
import torch
from reference import DEVICE, check_backward, check_forward

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends import triton as triton_backend

pytestmark = pytest.mark.skipif(
    dispatch.unavailable_reason("triton", torch.device(DEVICE).type, None) is not None,
    reason="the realigned kernels are Triton's",
)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
EVERY_LENGTH = triton_backend.realigned_everywhere()


@pytest.fixture
def realigned(monkeypatch):
    """Every length realigned, no plan remembered before or after; the names of the kernels the
    Triton backend launches."""
    monkeypatch.setattr(triton_backend, "REALIGNED_ROW_COLS", EVERY_LENGTH)
    dispatch.PLANS.clear()
    launched = []
    launch = triton_backend.launch

    def recorded(kernel, programs, tensors, scalars, config, *args, **kwargs):
        name = kernel.fn.__name__ if hasattr(kernel, "fn") else kernel.__name__
        walked = dict(config).get("WALKED")  # the realigned kernels' two forms
        launched.append(name if walked is None else f"{name}_{'walked' if walked else 'held'}")
        return launch(kernel, programs, tensors, scalars, config, *args, **kwargs)

    monkeypatch.setattr(triton_backend, "launch", recorded)
    yield launched
    dispatch.PLANS.clear()


def _input(shape, dtype, scale=3.0):
    return (torch.randn(shape, device=DEVICE) * scale).to(dtype)


def _with_edges(x):
    """``x`` with a row of -inf (NaN, as torch), a +inf, a NaN and a value at the type's limit, each
    in a row's head, body or tail."""
    n = x.shape[-1]
    x[1] = float("-inf")
    x[2, n // 2] = float("inf")
    x[3, 0] = float("nan")
    x[4, -1] = torch.finfo(x.dtype).max
    return x


@pytest.mark.parametrize("tier", ["tile", "row", "online"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_at_every_phase(tier, dtype, realigned):
    # lengths around the vector (8 16-bit or 4 float32 elements) and past it, as many rows as the
    # phases repeat and more than one program's block, so that every head length and a last block of
    # fewer rows occur; forward and backward of both functions
    vector = 16 // dtype.itemsize
    kind = "held" if tier != "online" else "walked"
    for n in (2 * vector + 1, 3 * vector, 33, 65, 100, 127, 300, 1001, 3001, 5001):
        for log, launched in _checked_at_every_phase(tier, n, dtype, realigned):
            assert launched == [f"softmax_fwd_realigned_{kind}"] * 2 + [f"softmax_bwd_realigned_{kind}"], (n, log)


def _checked_at_every_phase(tier, n, dtype, realigned):
    """Forward and backward of softmax, then of log-softmax, on rows of n through ``tier`` against
    float64: as many rows as the phases repeat and more than one program's block, with rows of -inf,
    +inf, NaN and the type's limit. Yields (log, the kernels launched) after each function's checks."""
    vector = 16 // dtype.itemsize
    plan = triton_backend.realigned_plan(tier, 1 << 20, n, dtype.itemsize, False, 132, False)
    rows = 2 * dict(plan["configs"][0])["BLOCK_O"] + vector + 3
    x = _with_edges(_input((rows, n), dtype))
    finite = x.nan_to_num(0.0, 5.0, -5.0)
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        realigned.clear()
        with dispatch.forced("triton", tier):
            check_forward(op(x, -1), x, -1, log)
            leaf, dy = finite.detach().requires_grad_(), _input((rows, n), dtype, 1.0)
            (dx,) = torch.autograd.grad(op(leaf, -1), leaf, dy)
        check_backward(dx, finite, dy, -1, log)
        yield log, list(realigned)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_views_of_other_pitches(dtype, realigned):
    # rows of a wider tensor: a pitch of no multiple of 16 at the phase of the output's (realigned), a
    # pitch of 16's multiple with a length of a vector's multiple off 16's (realigned: head 0 on every
    # row), and views the kernels cannot cut alike (rows whose pitch lies at another phase than the
    # dense output's, a pointer off a 16-byte boundary): the tiers' own kernels
    vector = 16 // dtype.itemsize
    base = _input((37, 131 + vector), dtype)
    cases = [
        (base[:, :131], True),
        (_input((37, 128), dtype)[:, :104], True),
        (_input((37, 128), dtype)[:, :101], False),
        (base[:, 1:120], False),
    ]
    for view, expected in cases:
        for tier in ("tile", "online"):
            realigned.clear()
            with dispatch.forced("triton", tier):
                y = fastsoftmax.softmax(view, -1)
                leaf, dy = view.detach().requires_grad_(), _input(view.shape, dtype, 1.0)
                (dx,) = torch.autograd.grad(fastsoftmax.log_softmax(leaf, -1), leaf, dy)
            check_forward(y, view, -1)
            check_backward(dx, view, dy, -1, True)
            # (the backward's tensors are the dense y, dy and dx: realigned whatever the view)
            forwards = [name for name in realigned if "_fwd_" in name]
            assert forwards and all(("realigned" in name) is expected for name in forwards), (view.stride(), tier)
    # the output written through out= at another pitch and phase than the input's: not cut alike
    out = torch.empty((37, 131 + 1), dtype=dtype, device=DEVICE)[:, :131]
    realigned.clear()
    with dispatch.forced("triton", "tile"):
        check_forward(fastsoftmax.softmax(base[:, :131], -1, out=out), base[:, :131], -1)
    assert realigned == ["softmax_fwd_tile"]


def test_repeated_calls_take_the_prepared_plan(realigned):
    # the eager fast path (a remembered plan) realigns as the full path does, and checks every call's
    # pointers: a later call one element into its storage takes the tiers' own kernel
    x = _input((70, 65), torch.bfloat16)
    for _ in range(3):
        check_forward(fastsoftmax.softmax(x, -1, backend="triton"), x, -1)
    assert realigned == ["softmax_fwd_realigned_held"] * 3
    realigned.clear()
    shifted = _input((70 * 65 + 1,), torch.bfloat16)[1:].view(70, 65)
    check_forward(fastsoftmax.softmax(shifted, -1, backend="triton"), shifted, -1)
    assert realigned == ["softmax_fwd_tile"]


def test_which_rows_realign(monkeypatch):
    monkeypatch.setattr(triton_backend, "REALIGNED_ROW_COLS", EVERY_LENGTH)
    realign = triton_backend.rows_realign
    dense = [(65, 1), (65, 1)]
    assert realign(9, 65, dense, [2, 2], True, False)
    assert realign(9, 64, [(72, 1), (72, 1)], [2, 2], True, True)  # 72: a vector's multiple, not 16's
    assert not realign(9, 64, [(64, 1), (64, 1)], [2, 2], True, False)  # the tiers' own kernels vectorise
    assert not realign(9, 65, dense, [2, 2], False, False)  # a pointer off a 16-byte boundary
    assert not realign(9, 65, dense, [2, 4], True, False)  # a 16-bit input written as float32
    assert not realign(9, 65, [(65, 1), (66, 1)], [2, 2], True, False)  # pitches at two phases
    assert realign(1, 65, [(65, 1), (66, 1)], [2, 2], True, False)  # one row: no pitch
    assert not realign(9, 65, [(130, 2), (65, 1)], [2, 2], True, False)  # a step along the row
    assert not realign(9, 15, [(15, 1)] * 3, [2] * 3, True, True)  # shorter than two vectors
    assert realign(9, 15, [(15, 1)] * 3, [4] * 3, True, True)
    none = triton_backend.realigned_everywhere(())
    monkeypatch.setattr(triton_backend, "REALIGNED_ROW_COLS", {**none, (False, 2): ((66, 128),)})
    assert not realign(9, 65, dense, [2, 2], True, False)
    assert realign(9, 67, [(67, 1)] * 2, [2, 2], True, False)
    assert not realign(9, 67, [(67, 1)] * 2, [4, 4], True, False)
    assert not realign(9, 67, [(67, 1)] * 3, [2] * 3, True, True)


@pytest.mark.parametrize("tier", ["tile", "row"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bodies_held_as_two_pieces(tier, dtype, realigned, monkeypatch):
    # REALIGNED_TWO_PIECES at 1/2 of any length: bodies just past a power of two held as that power and the one
    # that holds the rest (a vector's length past it up to half of it), at every phase, rows of -inf,
    # +inf, NaN and the type's limit among them; forward and backward of both functions
    monkeypatch.setattr(triton_backend, "REALIGNED_TWO_PIECES", dict.fromkeys(EVERY_LENGTH, (0.5, None)))
    triton_backend.plan.cache_clear()  # plans cache what they read of the setting
    pieces = []  # each launch's (BLOCK_N, BLOCK_N2, WIDE)
    launch = triton_backend.launch

    def recorded(kernel, programs, tensors, scalars, config, *args, **kwargs):
        pieces.append((dict(config)["BLOCK_N"], dict(config)["BLOCK_N2"], dict(config)["WIDE"]))
        return launch(kernel, programs, tensors, scalars, config, *args, **kwargs)

    monkeypatch.setattr(triton_backend, "launch", recorded)
    vector = 16 // dtype.itemsize
    try:
        for n in (64 + vector + 1, 256 + 5 * vector, 512 + vector + 3, 1024 + vector + 1, 1500):
            body = n // vector * vector
            # the last length with 64-bit offsets as well
            for wide in (False, True) if n == 1500 else (False,):
                monkeypatch.setattr(triton_backend, "_wide_offsets", lambda *args, wide=wide: wide)
                dispatch.PLANS.clear()  # a prepared call keeps its offsets' width
                for log, launched in _checked_at_every_phase(tier, n, dtype, realigned):
                    assert launched == ["softmax_fwd_realigned_held"] * 2 + ["softmax_bwd_realigned_held"], (n, log)
                    assert len(pieces) == 3, (n, pieces)
                    assert all(b1 + b2 >= body > b1 >= b2 > 0 and w == wide for b1, b2, w in pieces), (n, pieces)
                    pieces.clear()
    finally:
        triton_backend.plan.cache_clear()


def test_realigned_lengths_as_measured():
    # (triton.REALIGNED_ROW_COLS) rows from 9 columns, every direction and element size
    lengths = triton_backend.realigned_length
    for backward in (False, True):
        for size in (2, 4):
            assert not lengths(8, backward, size)
            assert all(lengths(n, backward, size) for n in (9, 127, 300, 999, 1025, 50257, 1 << 40))


def test_held_bodies_take_two_pieces_as_measured():
    # REALIGNED_TWO_PIECES: (BLOCK_N, BLOCK_N2) of a row's body by (backward, itemsize); the 16-bit forward's
    # second piece up to 1/8 of the first and 64 bytes, the 16-bit backward's and the float32 forward's up to one
    # 16-byte vector (the float32 forward's at most 1/16 of the first), the float32 backward in one piece
    expected = {  # (body, itemsize, backward): pieces
        (72, 2, False): (64, 8),
        (144, 2, False): (128, 16),
        (544, 2, False): (512, 32),
        (576, 2, False): (1024, 0),  # a second piece of 64 elements: slower
        (296, 2, False): (512, 0),  # of a quarter
        (4104, 2, False): (4096, 8),
        (136, 2, True): (128, 8),
        (144, 2, True): (256, 0),
        (36, 4, False): (64, 0),  # one vector, but 1/8 of 32
        (68, 4, False): (64, 4),
        (516, 4, False): (512, 4),
        (520, 4, False): (1024, 0),
        (516, 4, True): (1024, 0),
        (64, 2, False): (64, 0),
    }
    for (body, itemsize, backward), pieces in expected.items():
        assert triton_backend.realigned_pieces(body, itemsize, backward) == pieces, (body, itemsize, backward)


def test_held_plans_threads_as_measured():
    # REALIGNED_HELD_ELEMS_PER_THREAD: the warps of the held plans on the rows they were timed on, on the
    # tier the backend takes there (the tile tier's BLOCK_O rows a program up to rows of 1024, the row
    # tier's one past them), by the bytes of a row's body block (bf16, then float32): 16 elements a
    # thread up to blocks of 128 (bf16) or 512 (float32) bytes, 64 on blocks of 2 KiB (float32 backward
    # 32), else 32, but 64 for the bf16 backward from 16 KiB; BLOCK_N2: a body's second piece, where
    # REALIGNED_TWO_PIECES holds it in two
    expected = {  # (n, itemsize, backward): (tier, BLOCK_O, BLOCK_N, BLOCK_N2, warps)
        (65, 2, False): ("tile", 64, 64, 0, 8),
        (150, 2, False): ("tile", 16, 128, 16, 4),  # a body of 144: 128 + 16
        (300, 2, False): ("tile", 8, 512, 0, 4),
        (600, 2, False): ("tile", 4, 1024, 0, 2),
        (999, 2, True): ("tile", 4, 1024, 0, 2),
        (1025, 2, True): ("row", 1, 1024, 0, 1),
        (1500, 2, False): ("row", 1, 2048, 0, 2),
        (5000, 2, False): ("row", 1, 8192, 0, 8),
        (5000, 2, True): ("row", 1, 8192, 0, 4),
        (12345, 2, True): ("row", 1, 16384, 0, 8),
        (100, 4, False): ("tile", 32, 128, 0, 8),
        (150, 4, True): ("tile", 16, 256, 0, 4),
        (300, 4, False): ("tile", 8, 512, 0, 2),
        (300, 4, True): ("tile", 8, 512, 0, 4),
        (999, 4, False): ("tile", 4, 1024, 0, 4),
        (12345, 4, False): ("row", 1, 16384, 0, 16),
    }
    for (n, itemsize, backward), (tier, block_o, block_n, block_n2, warps) in expected.items():
        outer = (1 << 26) // n
        assert triton_backend._choose_tier(outer, n, 1, itemsize, backward, 132) == tier, n
        config = dict(triton_backend.realigned_plan(tier, outer, n, itemsize, backward, 132, False)["configs"][0])
        held = (config["BLOCK_O"], config["BLOCK_N"], config["BLOCK_N2"], config["num_warps"])
        assert held == (block_o, block_n, block_n2, warps), n
