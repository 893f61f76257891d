"""Tier and backend choice: pure functions of the problem, checked at real sizes."""

import contextlib
import json
import warnings

import pytest
import torch
from reference import DEVICE

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.triton import BACKEND, MAX_TILE, _choose_tier, plan

H100_SMS = 132


@contextlib.contextmanager
def measured_table(tmp_path, monkeypatch, points):
    """The dispatch table replaced by one of ``points`` inside the block, every cached choice
    forgotten on the way in and out."""
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"points": points}))
    with monkeypatch.context() as patch:
        patch.setattr(dispatch, "TABLE_PATH", path)
        dispatch.clear_caches()
        try:
            yield
        finally:
            dispatch.clear_caches()


@pytest.mark.parametrize(
    "n,tier",
    [
        (64, "tile"),
        (1000, "tile"),
        (1024, "tile"),
        (1025, "row"),
        (16384, "row"),
        (32768, "row"),
        (32769, "online"),
        (131072, "online"),
    ],
)
def test_row_tiers_at_bulk_sizes(n, tier):
    assert _choose_tier((1 << 27) // n, n, 1, 2, False, H100_SMS) == tier


def test_single_long_rows_split():
    assert _choose_tier(1, 1 << 24, 1, 2, False, H100_SMS) == "split"
    assert _choose_tier(8, 128256, 1, 2, False, H100_SMS) == "split"
    p = plan("split", 1, 1 << 24, 1, 2, False, H100_SMS)
    assert p["programs"] >= H100_SMS and p["SPLITS"] * p["CHUNK"] >= 1 << 24


def test_strided_tiers():
    assert _choose_tier(4096, 64, 512, 2, False, H100_SMS) == "tile"
    assert _choose_tier(1, 8192, 16384, 2, False, H100_SMS) == "online"
    assert _choose_tier(1, 1 << 20, 128, 2, False, H100_SMS) == "split"


def test_tiles_fit_in_registers():
    for n in (1, 7, 64, 1000, 4096, 16384):
        for inner in (1, 3, 512):
            for itemsize in (2, 4):
                try:
                    p = plan("tile", 1000, n, inner, itemsize, False, H100_SMS)
                except ValueError:
                    continue
                config = dict(p["configs"][0])
                assert config["BLOCK_O"] * config["BLOCK_N"] * config["BLOCK_I"] <= MAX_TILE
                assert config["num_warps"] in (1, 2, 4, 8, 16, 32)


def test_forced_tier_is_validated():
    assert not BACKEND.supports("row", 1, 1 << 20, 1, torch.float32, False)
    assert BACKEND.supports("split", 1, 1 << 20, 1, torch.float32, False)
    with pytest.raises(ValueError, match="unknown triton tier"):
        plan("warp", 1, 10, 1, 4, False, H100_SMS)


def test_table_choice_takes_the_nearest_measured_point(tmp_path, monkeypatch):
    table = {
        "points": [
            {
                "direction": "forward",
                "layout": "row",
                "dtype": "bfloat16",
                "n": 1024,
                "numel": 1 << 26,
                "us": {"triton": 30.0, "cuda": 25.0},
            },
            {
                "direction": "forward",
                "layout": "row",
                "dtype": "bfloat16",
                "n": 131072,
                "numel": 1 << 26,
                "us": {"triton": 40.0, "cuda": 55.0},
            },
        ]
    }
    with measured_table(tmp_path, monkeypatch, table["points"]):
        assert dispatch._table_choice(False, False, torch.bfloat16, 2048, 1 << 26) == "cuda"
        assert dispatch._table_choice(False, False, torch.bfloat16, 100000, 1 << 26) == "triton"
        assert dispatch._table_choice(True, False, torch.bfloat16, 2048, 1 << 26) is None
        assert dispatch._table_choice(False, False, torch.float32, 2048, 1 << 26) is None


def test_table_choice_for_strided_problems_follows_the_inner_size(tmp_path, monkeypatch):
    """Two strided points alike in n and numel, unlike in inner: a problem takes the winner of the
    point whose inner size is nearest to its own (grid points store (outer, n, inner) and no dim;
    main-suite points their shape and dim)."""
    common = {"direction": "forward", "layout": "strided", "dtype": "bfloat16"}
    table = {
        "points": [
            dict(common, n=64, numel=1 << 26, shape=[4096, 64, 256], us={"triton": 170.0, "cuda": 180.0}),
            dict(common, n=32, numel=1 << 27, shape=[16, 32, 512, 512], dim=1, us={"triton": 700.0, "cuda": 190.0}),
        ]
    }
    with measured_table(tmp_path, monkeypatch, table["points"]):
        assert dispatch._point_inner(table["points"][0]) == 256
        assert dispatch._point_inner(table["points"][1]) == 512 * 512
        # (16, 21, 512, 512) over dim 1: nearer the first point in n and numel, in inner the second
        assert dispatch._table_choice(False, True, torch.bfloat16, 21, 16 * 21 * 512 * 512, 512 * 512) == "cuda"
        assert dispatch._table_choice(False, True, torch.bfloat16, 48, 48 * 3000 * 256, 256) == "triton"


def test_table_choice_lends_the_other_16_bit_type_its_points(tmp_path, monkeypatch):
    """float16 and bfloat16 take each other's points, a little farther than their own: a 16-bit
    problem with no point of its own type near it follows the other type's nearest point, one with
    a point of its own at the same place follows that, and float32 takes neither."""
    common = {"direction": "backward", "layout": "strided", "shape": [16, 21, 512, 512], "dim": 1}
    far = {"direction": "backward", "layout": "strided", "shape": [4096, 64, 256], "n": 64, "numel": 1 << 26}
    points = [
        dict(common, dtype="bfloat16", n=21, numel=16 * 21 * 512 * 512, us={"triton": 318.0, "cuda": 189.0}),
        dict(far, dtype="float16", us={"triton": 138.7, "cuda": 140.9}),
    ]
    channel = (True, True, torch.float16, 21, 16 * 21 * 512 * 512, 512 * 512)
    with measured_table(tmp_path, monkeypatch, points):
        assert dispatch._table_choice(*channel) == "cuda"  # bfloat16's point, nearer than float16's own
        assert dispatch._table_choice(True, True, torch.float16, 64, 1 << 26, 256) == "triton"
        assert dispatch._table_choice(True, True, torch.bfloat16, 64, 1 << 26, 256) == "triton"
        assert dispatch._table_choice(True, True, torch.float32, 21, 16 * 21 * 512 * 512, 512 * 512) is None
    own = dict(common, dtype="float16", n=21, numel=16 * 21 * 512 * 512, us={"triton": 150.0, "cuda": 189.0})
    with measured_table(tmp_path, monkeypatch, [*points, own]):
        assert dispatch._table_choice(*channel) == "triton"  # a point of its own at the same place decides


def test_available_backends_always_lists_torch():
    assert dispatch.available_backends("cpu")[-1] == "torch"


def test_auto_falls_back_to_triton_with_one_warning(tmp_path, monkeypatch):
    table = {
        "points": [
            {
                "direction": "forward",
                "layout": "row",
                "dtype": "bfloat16",
                "n": 1024,
                "numel": 4096,
                "us": {"triton": 20.0, "cuda": 10.0},
            }
        ]
    }
    reasons = {"cuda": "backend='cuda' needs cuda-core: pip install fastsoftmax[cuda]", "triton": None}
    with measured_table(tmp_path, monkeypatch, table["points"]):
        monkeypatch.setattr(dispatch, "unavailable_reason", lambda name, device_type, index: reasons.get(name))
        monkeypatch.setattr(dispatch, "_warned", set())
        try:
            with pytest.warns(RuntimeWarning, match="prefers backend 'cuda'.*pip install"):
                assert dispatch._choose_backend("auto", "cuda", 0, torch.bfloat16, 4, 1024, 1, False) == "triton"
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                assert dispatch._choose_backend("auto", "cuda", 0, torch.bfloat16, 8, 1024, 1, False) == "triton"
            reasons["cuda"] = None
            dispatch._choose_backend.cache_clear()
            assert dispatch._choose_backend("auto", "cuda", 0, torch.bfloat16, 4, 1024, 1, False) == "cuda"
        finally:
            monkeypatch.undo()


def test_auto_takes_torch_where_triton_measured_slower(monkeypatch):
    """Without the CUDA backend, the forward of rows of 49-127 columns off multiples of 16 that
    Triton's realigned kernels do not take goes to torch, not Triton (dispatch.TORCH_OVER_TRITON_FORWARD_COLS);
    other lengths, the backward and strided problems stay on Triton, and a backend asked for by name is
    kept; with it, nothing changes."""
    reasons = {"cuda": "backend='cuda' needs cuda-core: pip install fastsoftmax[cuda]", "triton": None}
    monkeypatch.setattr(dispatch, "unavailable_reason", lambda name, device_type, index: reasons.get(name))
    monkeypatch.setattr(dispatch, "_warned", {"cuda"})
    triton_backend = dispatch._triton_module()
    dispatch._choose_backend.cache_clear()
    try:
        # the realigned kernels take those rows (triton.REALIGNED_ROW_COLS), ahead of torch
        for dtype in (torch.bfloat16, torch.float32):
            for n in (49, 65, 127):
                assert triton_backend.realigned_length(n, False, dtype.itemsize)
                assert dispatch._choose_backend("auto", "cuda", 0, dtype, 1 << 20, n, 1, False) == "triton", n
        monkeypatch.setattr(triton_backend, "REALIGNED_ROW_COLS", triton_backend.realigned_everywhere(()))
        dispatch._choose_backend.cache_clear()
        for dtype in (torch.bfloat16, torch.float32):
            for n in (49, 60, 72, 100, 127):
                assert dispatch._choose_backend("auto", "cuda", 0, dtype, 1 << 20, n, 1, False) == "torch", n
                assert dispatch._choose_backend("auto", "cuda", 0, dtype, 1 << 20, n, 1, True) == "triton", n
                assert dispatch._choose_backend("triton", "cuda", 0, dtype, 1 << 20, n, 1, False) == "triton"
            for n in (8, 48, 64, 80, 128, 160, 1000):
                assert dispatch._choose_backend("auto", "cuda", 0, dtype, 1 << 20, n, 1, False) == "triton", n
            assert dispatch._choose_backend("auto", "cuda", 0, dtype, 64, 72, 512, False) == "triton"
        reasons["cuda"] = None  # with the CUDA backend those rows are its own
        dispatch._choose_backend.cache_clear()
        assert dispatch._choose_backend("auto", "cuda", 0, torch.bfloat16, 1 << 20, 72, 1, False) == "cuda"
        # and where a table would prefer Triton there, Triton keeps them (the CUDA backend ran faster than
        # torch on every one)
        monkeypatch.setattr(dispatch, "_table_choice", lambda *args, **kwargs: "triton")
        dispatch._choose_backend.cache_clear()
        assert dispatch._choose_backend("auto", "cuda", 0, torch.bfloat16, 1 << 20, 72, 1, False) == "triton"
    finally:
        dispatch._choose_backend.cache_clear()


def test_table_choice_breaks_near_ties_towards_the_cuda_backend(tmp_path, monkeypatch):
    """Triton must be faster by more than TRITON_MARGIN: its launches cost more host time."""
    point = {"direction": "forward", "layout": "row", "dtype": "float32", "n": 128256, "numel": 128 * 128256}
    for triton_us, expected in ((50.0, "cuda"), (49.0, "cuda"), (48.0, "triton")):
        with measured_table(tmp_path, monkeypatch, [dict(point, us={"triton": triton_us, "cuda": 50.0})]):
            assert dispatch._table_choice(False, False, torch.float32, 128256, 128 * 128256) == expected, triton_us


def test_calls_shorter_than_a_launch_compare_their_launches(tmp_path, monkeypatch):
    """Where the GPU time at a point is shorter than a backend's launch costs the host
    (LAUNCH_HOST_US), back-to-back calls run at the launch's pace: Triton's GPU time must beat the
    CUDA backend's pace, not its GPU time. A problem too small to outlast a Triton launch takes the
    CUDA backend whatever its nearest point says."""
    point = {"direction": "forward", "layout": "strided", "dtype": "bfloat16", "n": 512, "numel": 1 << 26}
    numel = 1 << 26
    assert not dispatch._launch_bound(numel * 2 * 2)
    triton_floor = dispatch.LAUNCH_HOST_US["triton"]
    small = 512 * 64 * 8
    cases = [
        (20.0, 12.0, "cuda", numel, numel),  # both under Triton's launch: the CUDA backend, though slower on the GPU
        (triton_floor * 0.9, triton_floor * 0.5, "cuda", numel, numel),
        (triton_floor * 2, triton_floor * 1.5, "triton", numel, numel),  # past it: the GPU times decide again
        (triton_floor * 2, triton_floor * 1.5, "cuda", numel, small),  # a problem far smaller than the point
        (triton_floor * 5, triton_floor * 3, "triton", small, small),  # a small point the CUDA kernel is slow on
        # a small point whose CUDA cost is the host's (its kernel took a tenth of it): the launch rule holds
        (triton_floor * 5, triton_floor * 3, "cuda", small, small, triton_floor / 2),
    ]
    for cuda_us, triton_us, expected, point_numel, size, *kernel_us in cases:
        shaped = dict(point, numel=point_numel, shape=[point_numel // 512 // 64, 512, 64])
        shaped["us"] = {"triton": triton_us, "cuda": cuda_us}
        if kernel_us:
            shaped["gpu_us"] = {"triton": triton_us, "cuda": kernel_us[0]}
        with measured_table(tmp_path, monkeypatch, [shaped]):
            chosen = dispatch._table_choice(False, True, torch.bfloat16, 512, size, 64)
            assert chosen == expected, (cuda_us, triton_us, point_numel, size)


def test_long_calls_need_a_smaller_margin_for_triton(tmp_path, monkeypatch):
    """Past TRITON_MARGIN_BELOW_US of GPU time the host's launch cost is hidden: Triton wins by
    more than TRITON_MARGIN_LONG there, and still needs TRITON_MARGIN on short calls."""
    point = {"direction": "forward", "layout": "row", "dtype": "bfloat16", "n": 16384, "numel": 1 << 27}
    long_us = 2 * dispatch.TRITON_MARGIN_BELOW_US
    short_us = dispatch.TRITON_MARGIN_BELOW_US / 2
    cases = [
        (long_us, long_us * (1 - dispatch.TRITON_MARGIN / 2), "triton"),
        (long_us, long_us * (1 - dispatch.TRITON_MARGIN_LONG / 2), "cuda"),
        (short_us, short_us * (1 - dispatch.TRITON_MARGIN / 2), "cuda"),
        (short_us, short_us * (1 - 2 * dispatch.TRITON_MARGIN), "triton"),
    ]
    for cuda_us, triton_us, expected in cases:
        with measured_table(tmp_path, monkeypatch, [dict(point, us={"triton": triton_us, "cuda": cuda_us})]):
            chosen = dispatch._table_choice(False, False, torch.bfloat16, 16384, 1 << 27)
            assert chosen == expected, (cuda_us, triton_us)


def test_shipped_table_sends_decode_shapes_to_the_cuda_backend():
    # few rows of vocabulary length: the CUDA backend's cluster tier took 7-60 us on an H100 where
    # the Triton backend took 9-76 us, and several times more in runs where its host time showed
    from fastsoftmax.benchmark.shapes import DECODE_SHAPES

    dispatch.clear_caches()
    try:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for rows, n in DECODE_SHAPES:
                assert dispatch._table_choice(False, False, dtype, n, rows * n) == "cuda", (dtype, rows, n)
    finally:
        dispatch.clear_caches()


def test_shipped_table_sends_vocabulary_rows_to_the_cluster_tier():
    # the shipped table was measured with the CUDA backend's cluster tier (H100, 2026-11-23): on
    # rows of 50257..262144 it ran 0.94-0.99 of copy where the Triton backend ran 0.66-0.70
    dispatch.clear_caches()
    try:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for backward in (False, True):
                for rows, n in ((2670, 50257), (1046, 128256), (512, 262144), (1, 128256)):
                    assert dispatch._table_choice(backward, False, dtype, n, rows * n) == "cuda", (dtype, backward, n)
    finally:
        dispatch.clear_caches()


def test_short_rows_off_16_byte_boundaries_take_the_flat_rows_tier():
    from fastsoftmax.backends.cuda import instances, tiers

    def tier(dtype, n, backward):
        return tiers.choose_tier(1 << 20, n, 1, dtype, backward, tiers.H100_LIMITS)

    for dtype, n in (
        (torch.float32, 21),
        (torch.bfloat16, 21),
        (torch.float32, 63),
        (torch.float16, 31),
        (torch.bfloat16, 33),
        (torch.bfloat16, 63),
        (torch.float16, 50),
        (torch.bfloat16, 3),
        (torch.float16, 13),
        (torch.float32, 3),
        (torch.float32, 2),
        (torch.bfloat16, 9),
    ):
        for backward in (False, True):
            assert tier(dtype, n, backward) == "flat_rows", (dtype, n, backward)
    # 16-byte multiples keep the warp tier's packs, but for rows of one pack and the 16-bit backward;
    # rows of one element (and the 16-bit forward of rows of two) measured faster there too
    for dtype, n in ((torch.float32, 8), (torch.float32, 64), (torch.float32, 1), (torch.bfloat16, 1)):
        for backward in (False, True):
            assert tier(dtype, n, backward) == "warp", (dtype, n, backward)
    for dtype, n in ((torch.bfloat16, 64), (torch.bfloat16, 32), (torch.float16, 16), (torch.bfloat16, 2)):
        assert tier(dtype, n, False) == "warp", (dtype, n)
        assert tier(dtype, n, True) == "flat_rows", (dtype, n)
    for dtype, n in ((torch.bfloat16, 8), (torch.float16, 8), (torch.float32, 4)):
        for backward in (False, True):
            assert tier(dtype, n, backward) == "flat_rows", (dtype, n, backward)
    # past 64 columns the 16-bit rows measured faster on flat_rows, up to 160 (on 16-byte boundaries
    # too), but for rows whose pitch puts a warp's lanes on few shared-memory banks (64: 16 words)
    assert instances.flat_rows_bank_ways(64, torch.bfloat16, False) == 16
    assert instances.flat_rows_bank_ways(21, torch.bfloat16, False) <= instances.FLAT_ROWS_MAX_BANK_WAYS
    for dtype, n, backward, expected in (
        (torch.bfloat16, 65, False, "flat_rows"),
        (torch.bfloat16, 127, False, "flat_rows"),
        (torch.bfloat16, 126, False, "flat_rows"),
        (torch.bfloat16, 74, False, "flat_rows"),
        (torch.bfloat16, 150, False, "flat_rows"),
        (torch.bfloat16, 152, False, "flat_rows"),
        (torch.bfloat16, 96, False, "warp"),
        (torch.bfloat16, 161, False, "flat_rows"),
        (torch.bfloat16, 257, False, "warp"),
        (torch.bfloat16, 74, True, "flat_rows"),
        (torch.bfloat16, 100, True, "flat_rows"),
        (torch.float16, 127, True, "flat_rows"),
        (torch.bfloat16, 129, True, "flat_rows"),
        (torch.bfloat16, 185, True, "warp"),
        (torch.float32, 101, True, "warp"),
        (torch.float32, 97, False, "warp"),
    ):
        assert tier(dtype, n, backward) == expected, (dtype, n, backward)


def test_the_tight_16_bit_forward_takes_every_alignment_at_few_banks():
    """The 16-bit forward's tight form (one kernel per slots a lane) beat the warp tier on rows on
    16-byte boundaries whose lanes spread over the banks (at most 3 words a bank), and on every row
    off them; float32 forward rows of 65-96 take flat_rows whatever their alignment, but at 8 words a
    bank (96), and aligned ones of 20-44 at up to 4."""
    from fastsoftmax.backends.cuda import instances, tiers

    def tier(dtype, n):
        return tiers.choose_tier(1 << 20, n, 1, dtype, False, tiers.H100_LIMITS)

    for n in (40, 56, 80, 112, 144):
        assert instances.flat_rows_bank_ways(n, torch.bfloat16, False) <= instances.FLAT_ROWS_TIGHT_MAX_BANK_WAYS
        assert tier(torch.bfloat16, n) == "flat_rows", n
        assert tier(torch.float16, n) == "flat_rows", n
    # past 128 the warp tier holds rows over part of a warp: flat_rows only at one word a bank
    assert instances.flat_rows_bank_ways(160, torch.bfloat16, False) == 2 and tier(torch.bfloat16, 160) == "warp"
    for n in (24, 48, 96, 16, 32, 64, 128, 192, 256):
        assert instances.flat_rows_bank_ways(n, torch.bfloat16, False) > instances.FLAT_ROWS_TIGHT_MAX_BANK_WAYS
        assert tier(torch.bfloat16, n) == "warp", n
    # past 208 the warp tier's packs fill its lanes: rows on 16-byte boundaries keep it
    assert tier(torch.bfloat16, 208) == "flat_rows" and tier(torch.bfloat16, 224) == "warp"
    for n in (161, 170, 250, 255):
        assert tier(torch.bfloat16, n) == "flat_rows", n
    # off 16-byte boundaries the warp tier reads an element at a time: flat_rows, its warps' rows
    # spread where consecutive rows would meet on few banks
    for n in (9, 63, 65, 100, 127, 129, 130, 131, 159):
        assert instances.flat_rows_bank_ways(n, torch.bfloat16, False) <= instances.FLAT_ROWS_TIGHT_MAX_BANK_WAYS
        assert tier(torch.bfloat16, n) == "flat_rows", n
    assert instances.lanes_bank_ways(127, torch.bfloat16, 32) == 5
    assert instances.lanes_bank_ways(127, torch.bfloat16, 32, spread=True) == 1
    assert instances.flat_rows_spread(127, torch.bfloat16, 32)
    assert not instances.flat_rows_spread(21, torch.bfloat16, 32)
    for n in (65, 72, 74, 80, 95):
        assert tier(torch.float32, n) == "flat_rows", n
    for n in (96, 56, 24, 32, 48):
        assert tier(torch.float32, n) == "warp", n
    # float32 aligned rows of 20-44 but at 8 words a bank or more (tiers.FLOAT32_FORWARD_FLAT_ALIGNED_COLS)
    for n in (20, 36, 40, 44):
        assert tier(torch.float32, n) == "flat_rows", n
        assert tiers.choose_tier(1 << 20, n, 1, torch.float32, True, tiers.H100_LIMITS) == "warp", n
    # the 16-bit backward: lanes of 32 where they fall on at most two words a bank, rows to 160
    assert instances.flat_rows_per_lane(True, 37, torch.bfloat16) == 32
    assert instances.flat_rows_per_lane(True, 48, torch.bfloat16) == 4
    assert instances.flat_rows_per_lane(True, 37, torch.float32) == 4
    for n, expected in ((150, "flat_rows"), (131, "flat_rows"), (130, "flat_rows"), (184, "flat_rows"), (185, "warp")):
        assert tiers.choose_tier(1 << 20, n, 1, torch.bfloat16, True, tiers.H100_LIMITS) == expected, n


def _bf16_row_choices(monkeypatch, winners: dict, lengths) -> dict:
    """The backend _table_choice gives bf16 forward rows of each of ``lengths`` (2^26 elements) on a table
    of one point for each length in ``winners`` (n: the faster backend, by 10%)."""
    shared = dict(direction="forward", layout="row", dtype="bfloat16", numel=1 << 26)
    times = {"triton": {"triton": 90.0, "cuda": 100.0}, "cuda": {"triton": 100.0, "cuda": 90.0}}
    table = {"points": [dict(shared, n=n, us=times[winner]) for n, winner in winners.items()]}
    dispatch.clear_caches()
    try:
        with monkeypatch.context() as patched:
            patched.setattr(dispatch, "_table", lambda path: table)
            return {n: dispatch._table_choice(False, False, torch.bfloat16, n, 1 << 26) for n in lengths}
    finally:
        dispatch.clear_caches()


def test_rows_off_16_byte_boundaries_are_matched_to_points_of_their_kind(monkeypatch):
    # rows run different kernels by kind (dispatch.row_kind: a byte length of a 16-byte multiple, a
    # length of a 16-element multiple): a row goes by the nearest point of its own kind, whatever a
    # nearer point of another kind says. On a table of three points, one of each kind of bf16 rows:
    # 37 (74 bytes), 72 (144 bytes, no multiple of 16 elements) and 64
    assert dispatch.row_kind(37, 2) == (False, False)
    assert dispatch.row_kind(72, 2) == (True, False) != dispatch.row_kind(64, 2) == (True, True)
    monkeypatch.setattr(dispatch, "ROW_OCTAVE_DISTANCE", 0.0)  # the kinds alone
    expected = dict.fromkeys((100, 99, 150), "triton")  # nearer 72 and 64 than 37
    expected.update(dict.fromkeys((24, 40, 56, 88, 104, 120), "cuda"))
    expected.update(dict.fromkeys((32, 48, 80, 96, 128, 272), "triton"))
    assert _bf16_row_choices(monkeypatch, {37: "triton", 72: "cuda", 64: "triton"}, expected) == expected


def test_rows_past_a_power_of_two_are_matched_to_points_on_their_side(monkeypatch):
    # just past a power of two a backend's row kernels hold a row in up to twice the lanes it fills
    # (dispatch.row_octaves: the CUDA backend's warp tier rounds n up, Triton's realigned kernels the
    # row's whole 16-byte vectors): a row goes by the nearest point rounded up alike, whatever a nearer
    # point on the other side says
    assert dispatch.row_octaves(1024, 2) == (10, 10)
    assert dispatch.row_octaves(1025, 2) == (11, 10)  # a body of 1024 fills Triton's block
    assert dispatch.row_octaves(1033, 2) == (11, 11)
    assert dispatch.row_octaves(515, 4) == (10, 9) and dispatch.row_octaves(517, 4) == (10, 10)
    winners = {1021: "triton", 1031: "cuda", 1037: "triton"}
    expected = {1019: "triton", 1023: "triton", 1025: "cuda", 1029: "cuda", 1033: "triton", 1035: "triton"}
    assert _bf16_row_choices(monkeypatch, winners, expected) == expected
    monkeypatch.setattr(dispatch, "ROW_OCTAVE_DISTANCE", 0.0)
    # by n alone: 1025 takes 1021's point, 1033 1031's
    assert _bf16_row_choices(monkeypatch, winners, (1025, 1033)) == {1025: "triton", 1033: "cuda"}


def test_flat_rows_holds_rows_up_to_a_warp_of_32_slot_lanes():
    from fastsoftmax.backends.cuda import instances, tiers

    for dtype in (torch.float32, torch.bfloat16):
        for backward in (False, True):
            for n in (17, 64, 100, 128, 129, 150, 513, 1000, 1024):
                per_lane = instances.flat_rows_per_lane(backward, n, dtype)
                rows, group, smem = instances.flat_rows_shape(n, dtype, backward)
                assert group * per_lane >= n and group <= 32 and rows % (256 // group) == 0
                assert smem >= (3 if backward else 2) * rows * n * dtype.itemsize
                assert tiers.supports("flat_rows", 10, n, 1, dtype, backward, tiers.H100_LIMITS)
            assert not tiers.supports("flat_rows", 10, 1025, 1, dtype, backward, tiers.H100_LIMITS)
    with pytest.raises(ValueError, match="at most 128"):
        instances.flat_rows_shape(129, torch.float32, True, per_lane=4)


def test_shipped_table_sends_short_odd_rows_to_the_cuda_backend():
    # measured with the flat_rows tier (H100, 2026-11-23): rows of 21 bf16 0.48 of copy forward and
    # 0.85 backward where the Triton backend ran 0.36 and 0.53. The 16-bit backward of rows of 63 left
    # it since Triton's realigned kernels: 136.3 us against 138.1 for fp16 1048576 x 63 (results
    # 2026-12-07_h100_s86/t1/)
    dispatch.clear_caches()
    try:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for backward in (False, True):
                for rows, n in ((1 << 22, 21), (1 << 20, 19), (1 << 21, 33), (1 << 21, 50), (1 << 20, 63)):
                    expected = "triton" if backward and dtype.itemsize == 2 and n == 63 else "cuda"
                    assert dispatch._table_choice(backward, False, dtype, n, rows * n) == expected, (dtype, backward, n)
    finally:
        dispatch.clear_caches()


def test_strided_problems_off_a_16_byte_boundary_go_to_the_cuda_backend(monkeypatch):
    # a table that sends this strided problem to Triton when aligned: off a 16-byte boundary the
    # CUDA backend takes it all the same
    dispatch.clear_caches()
    monkeypatch.setattr(dispatch, "unavailable_reason", lambda name, device_type, index: None)
    monkeypatch.setattr(dispatch, "_table_choice", lambda _, strided, *rest, **where: "triton" if strided else "cuda")
    try:
        args = ("auto", "cuda", 0, torch.bfloat16, 128, 1024, 1024, False)
        assert dispatch._choose_backend(*args) == "triton"
        assert dispatch._choose_backend(*args, False) == "cuda"
        # rows are the row tiers' business: alignment does not change their table choice
        rows = ("auto", "cuda", 0, torch.bfloat16, 4, 1024, 1, False)
        assert dispatch._choose_backend(*rows, False) == dispatch._choose_backend(*rows)
        # inputs with a step along inner: Triton's tiles take up to 8 columns, the strided tier more
        monkeypatch.setattr(dispatch, "_table_choice", lambda *args, **where: "cuda")
        dispatch._choose_backend.cache_clear()
        for inner, name in ((2, "triton"), (8, "triton"), (9, "cuda"), (1024, "cuda")):
            stepped = ("auto", "cuda", 0, torch.bfloat16, 128, 4096, inner, True)
            assert dispatch._choose_backend(*stepped, False, True) == name, inner
            assert dispatch._choose_backend(*stepped, False, False) == "cuda"
    finally:
        monkeypatch.undo()
        dispatch.clear_caches()


def test_long_forward_rows_take_the_cluster_tier_over_block_regs():
    from dataclasses import replace

    from fastsoftmax.backends.cuda import tiers

    h100 = tiers.H100_LIMITS
    after = tiers.CLUSTER_OVER_BLOCK_REGS_AFTER_COLS
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for n in (after + 1024, 16384, 24576, 32768):
            assert tiers.choose_tier(4096, n, 1, dtype, False, h100) == "cluster", (dtype, n)
            # few rows too (one row a CTA leaves most SMs idle)
            assert tiers.choose_tier(132, n, 1, dtype, False, h100) == "cluster", (dtype, n)
            # backward, rows off 16-byte boundaries and GPUs without clusters keep block_regs
            assert tiers.choose_tier(4096, n, 1, dtype, True, h100) == ("block_regs" if n <= 16384 else "cluster")
            assert tiers.choose_tier(4096, n, 1, dtype, False, h100, aligned=False) == "block_regs"
            assert tiers.choose_tier(4096, n, 1, dtype, False, replace(h100, cluster_ctas=0)) == "block_regs"
        assert tiers.choose_tier(4096, after, 1, dtype, False, h100) == "block_regs"
        # a row pitch of no whole number of 16-byte pieces puts every other row off its boundary
        assert tiers.choose_tier(4096, after + 1001, 1, dtype, False, h100) == "block_regs"


def test_row_problems_are_aligned_only_where_every_row_is(monkeypatch):
    """Tier choice hears of rows as on their 16-byte boundaries only where every row of every tensor
    starts on one (a row stride of a whole number of 16-byte pieces), not only the first."""
    from fastsoftmax import functional

    seen = []
    monkeypatch.setattr(dispatch, "resolve", lambda *args: seen.append(args[7]) or (None, None))
    for cols, x_pitch, want in ((104, 104, True), (104, 112, True), (104, 105, False), (100, 100, False)):
        x = torch.randn(4, x_pitch, dtype=torch.bfloat16)[:, :cols]
        assert x.data_ptr() % 16 == 0
        functional._resolve("auto", False, (x.unsqueeze(2),), torch.empty(4, cols, 1, dtype=torch.bfloat16))
        assert seen[-1] is want, (cols, x_pitch)
    # one row: its start is all there is
    x = torch.randn(1, 100, dtype=torch.bfloat16)
    functional._resolve("auto", False, (x.unsqueeze(2),), torch.empty(1, 100, 1, dtype=torch.bfloat16))
    assert seen[-1] is True


def test_rows_off_16_byte_boundaries_in_their_window():
    from fastsoftmax.backends.cuda import tiers

    # 16-bit rows of 512-1024 whose length is no 16-byte multiple stay on the warp tier
    for n in (513, 700, 999, 1023):
        for backward in (False, True):
            assert tiers.choose_tier(1 << 17, n, 1, torch.bfloat16, backward, tiers.H100_LIMITS) == "warp", n
    # on 16-byte boundaries: the forward too (warp 0.99 of copy against block_regs' 0.96 at 1000),
    # the backward past 512 on block_regs
    assert tiers.choose_tier(1 << 17, 1000, 1, torch.bfloat16, False, tiers.H100_LIMITS) == "warp"
    assert tiers.choose_tier(1 << 17, 1000, 1, torch.bfloat16, True, tiers.H100_LIMITS) == "block_regs"
    # past 1024: the forward's warp holds rows on their boundaries only (tiers.warp_takes_long_rows)
    assert tiers.choose_tier(1 << 17, 1032, 1, torch.bfloat16, False, tiers.H100_LIMITS) == "warp"
    assert tiers.choose_tier(1 << 17, 1033, 1, torch.bfloat16, False, tiers.H100_LIMITS) == "block_regs"
    # windows: block_regs wherever its packs would be narrow, warp only for the 16-bit forward past
    # 512 columns; never where 16-byte packs fit anyway; the tuning overrides the rule
    assert tiers.takes_window("block_regs", torch.float32, True, 5001, 1)
    assert tiers.takes_window("block_regs", torch.bfloat16, False, 2047, 1)
    assert tiers.takes_window("warp", torch.bfloat16, False, 999, 1)
    assert not tiers.takes_window("warp", torch.bfloat16, False, 300, 1)
    assert not tiers.takes_window("warp", torch.bfloat16, True, 999, 1)
    assert not tiers.takes_window("warp", torch.float32, False, 999, 1)
    assert not tiers.takes_window("block_regs", torch.bfloat16, False, 2048, 8)
    assert tiers.takes_window("warp", torch.float32, True, 100, 1, tiers.Tuning(row_window=True))
    assert not tiers.takes_window("block_regs", torch.float32, True, 5001, 1, tiers.Tuning(row_window=False))
    # the 16-bit forward aims lower in its window (16 elements a thread where aligned rows take 32)
    assert tiers.block_regs_target(3001, 2, False, window=True) == 16
    assert tiers.block_regs_target(3001, 2, False) == 32
    assert tiers.block_regs_target(3001, 2, True, window=True) == tiers.block_regs_target(3001, 2, True)
    # held raw (GPUs of much bandwidth an SM), 32 unless they leave more of the last warp idle
    assert [tiers.block_regs_target(n, 2, False, window=True, raw=True) for n in (3001, 5001, 8191)] == [32] * 3
    assert [tiers.block_regs_target(n, 2, False, window=True, raw=True) for n in (1025, 2047, 2500)] == [16] * 3
    assert tiers.block_regs_target(3001, 2, False, raw=True) == 32
    assert tiers.block_regs_target(700, 2, False, window=True, raw=True) == 8
    assert tiers.block_regs_target(3001, 2, False, tiers.Tuning(block_regs_elems=16), window=True, raw=True) == 16
    # sector groups: 16 lanes of single 16-bit elements up to 64 columns, 8 lanes of pairs up to 128
    from fastsoftmax.backends.cuda.instances import warp_shape

    assert warp_shape(37, 1, 2, True) == (4, 16, 1)
    assert warp_shape(100, 2, 2, True) == (16, 8, 1)
    assert warp_shape(127, 1, 2, True) == warp_shape(127, 1, 2, False)
    assert warp_shape(100, 2, 4, True) == warp_shape(100, 2, 4, False)  # float32 keeps whole warps


def test_warp_rows_a_group_as_asked_or_refused():
    """Tuning.warp_rows: rows in 16-byte packs of up to WARP_MULTI_ROW_MAX_COLS columns a lane take
    the count asked for; others keep theirs only when it is the one asked for, else a ValueError
    that names the limit (a kernel never compiled is never looked for)."""
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import warp_shape

    assert warp_shape(64, 8, 2, True, rows=4) == (8, 8, 4)
    assert warp_shape(256, 8, 2, True, rows=2) == (8, 32, 2)
    assert warp_shape(96, 4, 4, True, rows=2) == (4, 32, 2)
    assert warp_shape(1000, 8, 2, True, rows=1) == warp_shape(1000, 8, 2, True)
    with pytest.raises(ValueError, match="rows a group only in 16-byte packs"):
        warp_shape(1000, 8, 2, True, rows=2)  # 32 columns a lane
    with pytest.raises(ValueError, match="rows a group only in 16-byte packs"):
        warp_shape(50, 2, 2, False, rows=4)  # pairs of a row off its 16-byte boundaries
    with pytest.raises(ValueError, match="warp_rows=3"):
        tiers.Tuning(warp_rows=3)
    with pytest.raises(ValueError, match="16-byte window one a group"):
        warp_shape(99, 4, 4, rows=2, window=True)


def test_warp_lanes_as_asked_or_refused():
    """Tuning.warp_lanes: 16-bit rows in 16-byte packs over 4, 8, 16 or 32 lanes of up to
    WARP_LANES_MAX_COLS columns each, one row a group; anything else a ValueError."""
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import warp_shape

    assert warp_shape(256, 8, 2, lanes=16) == (16, 16, 1)
    assert warp_shape(256, 8, 2, lanes=8) == (32, 8, 1)
    assert warp_shape(300, 8, 2, lanes=16) == (24, 16, 1)
    assert warp_shape(64, 8, 2, lanes=16) == (8, 16, 1)  # a narrow group's own shape
    assert warp_shape(64, 8, 2, lanes=4) == (16, 4, 1)
    for n, pack, itemsize, lanes in ((257, 8, 2, 8), (600, 8, 2, 16), (256, 4, 4, 16), (256, 2, 2, 16), (256, 8, 2, 4)):
        with pytest.raises(ValueError, match="over"):
            warp_shape(n, pack, itemsize, lanes=lanes)
    with pytest.raises(ValueError, match="one a group"):
        warp_shape(256, 8, 2, rows=2, lanes=16)
    with pytest.raises(ValueError, match="over 16 lanes only"):
        warp_shape(256, 8, 2, lanes=16, window=True)
    with pytest.raises(ValueError, match="warp_lanes=2"):
        tiers.Tuning(warp_lanes=2)


def test_warp_lanes_by_default():
    """16-bit rows in 16-byte packs of more than WARP_LANES_AFTER_PACKS packs take the fewest lanes
    (4 forward, 8, 16, a whole warp) that hold them in at most WARP_LANES_PACKS_A_LANE packs a lane; narrower
    rows, other packs, rows in a window and tunings of more rows a group keep the rule before it."""
    from fastsoftmax.backends.cuda.instances import warp_default_lanes, warp_shape

    widths = (32, 33, 64, 96, 97, 128, 160, 192, 193, 256, 384, 385, 768, 769, 1024)
    expected = (None, 4, 4, 4, 8, 8, 8, 8, 16, 16, 16, 32, 32, None, None)
    assert tuple(warp_default_lanes(n, 8, 2) for n in widths) == expected
    widths = (64, 65, 96, 128, 160, 192, 193, 768, 769)
    expected = (None, 8, 8, 8, 8, 8, 16, 32, None)
    assert tuple(warp_default_lanes(n, 8, 2, backward=True) for n in widths) == expected
    assert warp_shape(160, 8, 2) == (24, 8, 1)
    assert warp_shape(160, 8, 2, backward=True) == (24, 8, 1)
    assert warp_shape(256, 8, 2) == (16, 16, 1)
    assert warp_shape(384, 8, 2) == (24, 16, 1)
    assert warp_shape(512, 8, 2) == (16, 32, 1)
    assert warp_shape(1000, 8, 2) == (32, 32, 1)
    assert warp_shape(128, 8, 2) == (16, 8, 1)
    assert warp_shape(96, 8, 2) == (24, 4, 1)
    assert warp_shape(96, 8, 2, backward=True) == (16, 8, 1)
    assert warp_shape(64, 8, 2) == (16, 4, 1)
    assert warp_shape(64, 8, 2, backward=True) == (8, 8, 1)
    assert warp_shape(256, 4, 2) == (8, 32, 1)  # 8-byte packs: a row off its 16-byte boundaries
    assert warp_shape(256, 4, 4) == (8, 32, 1)  # float32
    assert warp_shape(256, 8, 2, rows=2) == (8, 32, 2)  # a tuning of two rows a group: a whole warp
    assert warp_shape(256, 8, 2, lanes=32) == (8, 32, 1)


def test_warp_long_rows_as_held_or_refused():
    """16-bit forward rows of 1025 up to WARP_LONG_MAX_COLS in 16-byte packs over a whole warp, one row a
    group, in the fewest WARP_LONG_COLS_16BIT columns a lane that hold them, on their boundaries or in
    their window; the backward, float32, narrower packs, other lanes or rows, and longer rows refused by
    name; every such shape is compiled."""
    import torch

    from fastsoftmax.backends.cuda import instances, tiers
    from fastsoftmax.backends.cuda.instances import WARP_LONG_MAX_COLS, WARP_TIER_MAX_COLS, warp_shape

    assert WARP_LONG_MAX_COLS == 3072
    widths = (1025, 1280, 1281, 1536, 2048, 2560, 2561, 3000, 3072)
    columns = (40, 40, 48, 48, 64, 80, 96, 96, 96)
    assert tuple(warp_shape(n, 8, 2) for n in widths) == tuple((c, 32, 1) for c in columns)
    # rows off their boundaries in their window's 16-byte packs: warp_shape takes the window's span (n + 7
    # columns for a row of n, plans._window) as these widths
    assert tuple(warp_shape(n, 8, 2, window=True) for n in widths) == tuple((c, 32, 1) for c in columns)
    refused = [
        (dict(backward=True), "in the backward"),
        (dict(pack=4, itemsize=4), "in 4-byte elements"),
        (dict(pack=4), "in packs of 8 bytes"),
        (dict(rows=2), "in 2 rows a group"),
        (dict(lanes=16), "in 16 lanes a row"),
    ]
    for case, why in refused:
        arguments = dict(n=2048, pack=8, itemsize=2) | case
        with pytest.raises(ValueError, match=f"only in the 16-bit forward.*rows of 2048 {why}"):
            warp_shape(**arguments)
    with pytest.raises(ValueError, match="too long for the warp tier .at most 3072"):
        warp_shape(3073, 8, 2)
    limits = tiers.H100_LIMITS
    assert tiers.warp_max_cols(torch.float16, False) == WARP_LONG_MAX_COLS
    assert tiers.warp_max_cols(torch.float16, True) == WARP_TIER_MAX_COLS
    assert tiers.warp_max_cols(torch.float32, False) == WARP_TIER_MAX_COLS
    assert tiers.supports("warp", 4, WARP_LONG_MAX_COLS, 1, torch.bfloat16, False, limits)
    assert not tiers.supports("warp", 4, WARP_LONG_MAX_COLS + 1, 1, torch.bfloat16, False, limits)
    assert not tiers.supports("warp", 4, 2048, 1, torch.bfloat16, True, limits)
    assert not tiers.supports("warp", 4, 2048, 1, torch.float32, False, limits)
    assert tiers.supports("warp", 4, WARP_TIER_MAX_COLS, 1, torch.float32, True, limits)
    compiled = {i.name for i in instances.all_instances()}
    for dtype in (torch.bfloat16, torch.float16):
        for log in (False, True):
            for cols in instances.WARP_LONG_COLS_16BIT:
                for window in (False, True):
                    inst = instances.Instance("warp", dtype, False, log, 8, cols, 32, 1, window=window)
                    assert inst.name in compiled


def test_long_16bit_forward_rows_take_the_warp_tier():
    """tiers.warp_takes_long_rows: 16-bit forward rows of 1025-3072 on 16-byte boundaries go to the warp
    tier from WARP_LONG_MIN_ROWS rows where block_regs' threads would fill at most 3/4 of their warps;
    fuller rows, fewer rows, rows off their boundaries, the backward and float32 stay on block_regs
    (log-softmax alike), and the dispatcher never keeps such a row plan for calls off 16-byte
    boundaries (the CUDA backend's ``realigns``)."""
    from fastsoftmax.backends.cuda import BACKEND, tiers
    from fastsoftmax.backends.cuda.instances import WARP_LONG_MAX_COLS, WARP_TIER_MAX_COLS, warp_long_row

    h100 = tiers.H100_LIMITS
    rows = tiers.WARP_LONG_MIN_ROWS
    # block_regs holds these in 32 elements a thread, whole warps of threads: they fill n / (32 x 32 x warps)
    sparse = (WARP_TIER_MAX_COLS + 8, 1152, 1536, 2304)  # fills 0.50, 0.56, 0.75, 0.75
    dense = (1792, 2000, 2048, 2560, 3000, WARP_LONG_MAX_COLS)  # 0.88, 0.98, 1, 0.83, 0.98, 1
    for dtype in (torch.bfloat16, torch.float16):
        for n in sparse + dense:
            for log in (False, True):
                for many in (rows, 16 * rows):
                    tier = "warp" if n in sparse else "block_regs"
                    assert tiers.choose_tier(many, n, 1, dtype, False, h100, log=log) == tier, (n, many, log)
                assert tiers.choose_tier(rows - 1, n, 1, dtype, False, h100, log=log) == "block_regs", (n, log)
                assert tiers.choose_tier(rows, n, 1, dtype, False, h100, aligned=False, log=log) == "block_regs"
            assert tiers.choose_tier(rows, n, 1, dtype, True, h100) == "block_regs"
        # a row of no whole number of 16-byte pieces, and rows past the longest the tier holds
        assert tiers.choose_tier(rows, 1535, 1, dtype, False, h100) == "block_regs"
        assert tiers.choose_tier(rows, WARP_LONG_MAX_COLS + 8, 1, dtype, False, h100) == "block_regs"
    assert tiers.choose_tier(rows, 1536, 1, torch.float32, False, h100) == "block_regs"
    assert not BACKEND.realigns("warp", 2048, torch.bfloat16, False)
    assert BACKEND.realigns("warp", WARP_TIER_MAX_COLS, torch.bfloat16, False)
    assert BACKEND.realigns("block_regs", 2048, torch.bfloat16, False)
    # long rows are the 16-bit forward's only: the tier holds no others (tiers.warp_max_cols)
    assert warp_long_row(2048, 2, False) and not warp_long_row(WARP_TIER_MAX_COLS, 2, False)
    assert not warp_long_row(2048, 4, False) and not warp_long_row(2048, 2, True)


def test_flat_rows_beside_the_warp_tiers_lanes():
    """Aligned 16-bit rows the warp tier holds over part of a warp go to flat_rows only at one word a
    bank (FLAT_ROWS_BESIDE_WARP_LANES_MAX_BANK_WAYS), on any GPU; rows off 16-byte boundaries keep the
    rule before it."""
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import flat_rows_bank_ways

    for dtype in (torch.bfloat16, torch.float16):
        for backward in (False, True):
            for high_bandwidth in (False, True):
                assert not tiers.takes_flat_rows(160, dtype, backward, high_bandwidth)  # 2 words a bank
                assert tiers.takes_flat_rows(160, dtype, backward, high_bandwidth, aligned=False)
                assert not tiers.takes_flat_rows(192, dtype, backward, high_bandwidth)
            assert tiers.takes_flat_rows(144, dtype, backward, high_bandwidth=True)  # 1 word a bank
        assert tiers.takes_flat_rows(208, dtype, False, high_bandwidth=True)
        assert tiers.takes_flat_rows(216, dtype, True, high_bandwidth=True)
        assert not tiers.takes_flat_rows(224, dtype, True, high_bandwidth=True)
        assert tiers.takes_flat_rows(224, dtype, True, high_bandwidth=True, aligned=False)
        assert flat_rows_bank_ways(160, dtype, False) == 2 and flat_rows_bank_ways(144, dtype, False) == 1


def test_warp_rows_by_default_and_filled_groups_keep_the_warp_tier():
    """One row a group, but two for float32 forward rows of one 16-byte pack a lane over a whole warp
    (not in a window, not backward); on GPUs of much DRAM bandwidth an SM, 16-bit rows on 16-byte
    boundaries that fill a group with whole packs keep the warp tier over flat_rows, forward and
    backward, where rows leaving lanes idle keep flat_rows."""
    import torch

    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import warp_shape

    assert [warp_shape(n, 8, 2)[2] for n in (8, 16, 64, 128, 256)] == [1] * 5
    assert warp_shape(96, 4, 4) == (4, 32, 2)
    assert warp_shape(128, 4, 4) == (4, 32, 2)
    assert warp_shape(96, 4, 4, backward=True) == (4, 32, 1)
    assert warp_shape(96, 4, 4, window=True) == (4, 32, 1)
    assert warp_shape(64, 4, 4) == (4, 16, 1)
    assert warp_shape(256, 4, 4) == (8, 32, 1)
    for dtype in (torch.bfloat16, torch.float16):
        for backward in (False, True):
            for n in (8, 16, 32, 64, 128):
                assert tiers.warp_fills_rows(n, 2)
                assert not tiers.takes_flat_rows(n, dtype, backward, high_bandwidth=True)
        assert tiers.takes_flat_rows(96, dtype, True, high_bandwidth=True)
        # rows off their 16-byte boundaries: the warp tier would read them in narrow packs
        assert tiers.takes_flat_rows(64, dtype, True, high_bandwidth=True, aligned=False)
        assert tiers.takes_flat_rows(8, dtype, False, high_bandwidth=False)  # elsewhere as measured before
    assert not any(tiers.warp_fills_rows(n, 2) for n in (4, 24, 96, 100, 256))
    assert not tiers.warp_fills_rows(16, 4)


def test_resolve_is_told_whether_blocks_are_single_runs(monkeypatch):
    """functional passes ``runs`` (every tensor's (n, inner) blocks one contiguous run): the relay
    rule keeps slices of wider rows, which the CUDA column kernels cannot hold, on Triton."""
    import inspect

    seen = []
    signature = inspect.signature(dispatch.resolve)

    def recording_resolve(*args, **kwargs):
        seen.append(signature.bind(*args, **kwargs).arguments["runs"])
        return None, None  # torch computes it

    dispatch.clear_caches()
    monkeypatch.setattr(dispatch, "resolve", recording_resolve)
    try:
        x = torch.randn(2, 50, 16, device=DEVICE)
        wide = torch.randn(2, 50, 32, device=DEVICE)[:, :, :16]
        for view, runs in ((x, True), (wide, False)):
            seen.clear()
            torch.testing.assert_close(fastsoftmax.softmax(view, 1), torch.softmax(view, 1))
            assert seen == [runs]
    finally:
        monkeypatch.undo()
        dispatch.clear_caches()


def test_gpus_of_much_bandwidth_an_sm_take_flat_rows_past_the_h100_bound():
    """On a GPU of more DRAM bandwidth an SM than HIGH_DRAM_GBPS_PER_SM (an H200's 4814 GB/s over
    132 SMs), float32 forward rows of up to 127 and 16-bit backward rows of up to 255 take flat_rows
    where a warp's lanes meet at most FLAT_ROWS_WIDER_MAX_BANK_WAYS words a bank; on an H100's, the
    warp tier keeps them."""
    from dataclasses import replace

    from fastsoftmax.backends.cuda import instances, tiers

    h100 = tiers.H100_LIMITS
    assert not h100.high_bandwidth_per_sm
    for dram_gbps in (4814.0, None):  # a device that reports no memory clock counts as one of much
        h200 = replace(h100, dram_gbps=dram_gbps)
        assert h200.high_bandwidth_per_sm
        for dtype, n, backward, expected in (
            (torch.float32, 100, False, "flat_rows"),
            (torch.float32, 127, False, "flat_rows"),
            (torch.float32, 112, False, "warp"),  # 4 words a bank
            (torch.float32, 128, False, "warp"),
            (torch.float32, 150, False, "warp"),  # past the rows measured
            (torch.float32, 100, True, "warp"),
            (torch.bfloat16, 200, True, "flat_rows"),
            (torch.float16, 255, True, "flat_rows"),
            (torch.bfloat16, 192, True, "warp"),  # 4 words a bank
            (torch.bfloat16, 256, True, "warp"),
            (torch.bfloat16, 300, True, "warp"),
        ):
            assert tiers.choose_tier(1 << 18, n, 1, dtype, backward, h200) == expected, (dtype, n, backward)
            assert tiers.choose_tier(1 << 18, n, 1, dtype, backward, h100) == "warp", (dtype, n, backward)
    assert instances.flat_rows_bank_ways(112, torch.float32, False) > tiers.FLAT_ROWS_WIDER_MAX_BANK_WAYS
    assert instances.flat_rows_bank_ways(192, torch.bfloat16, True) > tiers.FLAT_ROWS_WIDER_MAX_BANK_WAYS


def test_cluster_rows_hold_the_most_a_thread_first_on_gpus_of_much_bandwidth_an_sm():
    """high_bandwidth (a GPU of much DRAM bandwidth an SM): launches of more CTAs than SMs take the
    largest K of at most CLUSTER_HELD_ELEMS_BEFORE_THREADS elements a thread, with fewer threads;
    decode launches (16 CTAs a row, a row or a few) and the rule off keep the fewest."""
    from fastsoftmax.backends.cuda import instances

    def shape(n, rows, dtype=torch.bfloat16, backward=False, high_bandwidth=True):
        return instances.cluster_shape(
            n, dtype, backward, rows=rows, sm_count=H100_SMS, aligned=True, high_bandwidth=high_bandwidth
        )

    for n in (10240, 12288, 16384):
        deep, shallow = shape(n, 4096), shape(n, 4096, high_bandwidth=False)
        assert (deep.ctas, deep.held, deep.threads) == (2, 64, 128), n
        assert (shallow.ctas, shallow.held) == (2, 32) and shallow.threads > 128, n
        assert shape(n, 4096, backward=True).held == 64
    # rows that already held the most keep their launch
    for n in (20480, 32768, 65536, 128256):
        assert shape(n, 4096) == shape(n, 4096, high_bandwidth=False), n
    for n in (16384, 65536):
        assert shape(n, 4096, torch.float32) == shape(n, 4096, torch.float32, high_bandwidth=False), n
    # a launch of no more CTAs than SMs (decode) keeps the fewest, and the kept exponentials with them
    assert shape(128256, 8) == shape(128256, 8, high_bandwidth=False)
    assert shape(128256, 8).held <= instances.CLUSTER_KEPT_MAX_HELD
    assert shape(16384, 66) == shape(16384, 66, high_bandwidth=False)
    assert shape(16384, 67).held == 64
    # a forced K or thread count wins over the rule
    assert shape(16384, 4096, high_bandwidth=True).held == 64
    assert (
        instances.cluster_shape(
            16384, torch.bfloat16, False, rows=4096, sm_count=132, aligned=True, packs=4, high_bandwidth=True
        ).held
        == 32
    )
    assert (
        instances.cluster_shape(
            16384, torch.bfloat16, False, rows=4096, sm_count=132, aligned=True, threads=256, high_bandwidth=True
        ).held
        == 32
    )
    with pytest.raises(ValueError, match="not compiled"):
        instances.cluster_shape(16384, torch.bfloat16, True, rows=4096, sm_count=132, packs=16)


def test_a_model_table_overlays_the_reference_table(tmp_path, monkeypatch):
    """A model's own grid decides near its points; where the reference table measured the problem's
    own shape (an odd length the grid has no kind of) and the own grid is far, the reference decides,
    its points counted OTHER_MODEL_DISTANCE further."""
    row = {"direction": "forward", "layout": "row", "dtype": "bfloat16"}
    default = tmp_path / "dispatch_table.json"
    own = tmp_path / "dispatch_table_nvidia-h200.json"
    default.write_text(
        json.dumps(
            {
                "points": [
                    {**row, "n": 2048, "numel": 1 << 26, "us": {"triton": 200.0, "cuda": 100.0}},
                    {**row, "n": 3000, "numel": 44739 * 3000, "us": {"triton": 300.0, "cuda": 150.0}},
                ]
            }
        )
    )
    own.write_text(
        json.dumps({"points": [{**row, "n": 2048, "numel": 1 << 26, "us": {"triton": 100.0, "cuda": 200.0}}]})
    )
    with monkeypatch.context() as patch:
        patch.setattr(dispatch, "TABLE_PATH", default)
        patch.setattr(torch.cuda, "is_available", lambda: True)
        patch.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA H200")
        dispatch.clear_caches()
        try:
            assert dispatch.table_path(0) == own
            # the own point of 2048 against the reference's exact one
            assert dispatch._table_choice(False, False, torch.bfloat16, 2048, 1 << 26, device_index=0) == "triton"
            assert dispatch._table_choice(False, False, torch.bfloat16, 2048, 1 << 25, device_index=0) == "triton"
            # 3000 is a row of another kind than 2048: the reference's measured 3000 is nearer
            assert dispatch._table_choice(False, False, torch.bfloat16, 3000, 44739 * 3000, device_index=0) == "cuda"
            # without a table of its own the reference alone decides, its points not counted further
            assert dispatch._table_choice(False, False, torch.bfloat16, 2048, 1 << 26, device_index=-1) == "cuda"
        finally:
            dispatch.clear_caches()


def test_a_gpu_model_with_a_table_of_its_own_reads_it(tmp_path, monkeypatch):
    """ "auto" reads dispatch_table_<model>.json beside the default table on a GPU of that model,
    and the default table on any other model, off CUDA and without an index."""
    point = {"direction": "forward", "layout": "row", "dtype": "bfloat16", "n": 2048, "numel": 1 << 26}
    default = tmp_path / "dispatch_table.json"
    default.write_text(json.dumps({"points": [{**point, "us": {"triton": 200.0, "cuda": 100.0}}]}))
    models = {0: "NVIDIA H200", 1: "NVIDIA H100 80GB HBM3"}
    assert dispatch.device_slug(models[0]) == "nvidia-h200"
    assert dispatch.device_slug(models[1]) == "nvidia-h100-80gb-hbm3"
    with monkeypatch.context() as patch:
        patch.setattr(dispatch, "TABLE_PATH", default)
        patch.setattr(torch.cuda, "is_available", lambda: True)
        patch.setattr(torch.cuda, "get_device_name", lambda index=None: models[index])
        dispatch.clear_caches()
        try:
            own = dispatch.device_table_path(models[0])
            assert own == tmp_path / "dispatch_table_nvidia-h200.json"
            for index in (-1, None, 0, 1):  # no model has a table of its own yet
                assert dispatch.table_path(index) == default
            assert dispatch._table_choice(False, False, torch.bfloat16, 2048, 1 << 26, device_index=0) == "cuda"
            own.write_text(json.dumps({"points": [{**point, "us": {"triton": 100.0, "cuda": 200.0}}]}))
            dispatch.clear_caches()
            assert dispatch.table_path(0) == own
            assert dispatch.table_path(1) == dispatch.table_path(-1) == dispatch.table_path(None) == default
            assert dispatch._table_choice(False, False, torch.bfloat16, 2048, 1 << 26, device_index=0) == "triton"
            assert dispatch._table_choice(False, False, torch.bfloat16, 2048, 1 << 26, device_index=1) == "cuda"
            assert dispatch._table_choice(False, False, torch.bfloat16, 2048, 1 << 26) == "cuda"
        finally:
            dispatch.clear_caches()


def test_shipped_h200_table_keeps_the_shapes_measured_on_it(monkeypatch):
    """On an H200 "auto" reads its own table over the H100's: the backends timed there at the main
    suite's row shapes (results 2026-12-02_h200_s41, and the narrow rows again in _s46 and
    2026-12-03_h200_s47), where the grid
    of powers of two alone chose otherwise (bf16 rows of 3000 to Triton at 0.60 of copy, rows of 96 to
    the CUDA backend at 0.80)."""
    from fastsoftmax.benchmark.shapes import DECODE_SHAPES

    own = dispatch.device_table_path("NVIDIA H200")
    assert own.exists() and own != dispatch.TABLE_PATH
    # _table_choice itself keeps nothing between calls: the path stands in for table_path's lookup
    monkeypatch.setattr(dispatch, "table_path", lambda index: own if index == 0 else dispatch.TABLE_PATH)

    def choice(rows, n, dtype, backward=False):
        return dispatch._table_choice(backward, False, dtype, n, rows * n, device_index=0)

    for dtype in (torch.bfloat16, torch.float16):
        assert choice(44739, 3000, dtype) == "cuda"  # block_regs 0.87 against Triton's 0.60
        assert choice(65536, 2048, dtype) == "triton"  # 1.00 against 0.94 as float32 rows (raw: 0.98)
        assert choice(8388608, 16, dtype) == "cuda"  # 0.99 against 0.96
        # the warp tier, one row a group (results 2026-12-02_h200_s46): 0.98-0.99 against 0.60 and 0.96
        assert choice(16777216, 8, dtype) == "cuda"
        assert choice(4194304, 32, dtype) == "cuda"
        assert choice(16777216, 8, dtype, backward=True) == "cuda"  # 1.03 against 0.81
        # 16-bit forward rows over 4 lanes (results 2026-12-03_h200_s47): 64 0.98-0.99 against 0.96
        assert choice(2097152, 64, dtype) == "cuda"
    assert choice(1398101, 96, torch.bfloat16) == "cuda"  # 0.97 against 0.95 (fp16: level, 0.965 and 0.970)
    assert choice(1398101, 96, torch.float32) == "cuda"  # two rows a group: 1.01 against 0.99
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for rows, n in DECODE_SHAPES:
            assert choice(rows, n, dtype) == "cuda", (dtype, rows, n)
    # 16-bit rows off 16-byte boundaries, merged from results 2026-12-02_h200_s42: the backward of
    # block_regs' windows (0.80-0.83 of copy against Triton's 0.66-0.76) except past 8185 columns
    for dtype in (torch.bfloat16, torch.float16):
        for rows, n in ((22000, 3001), (13421, 5001), (26843, 2500)):
            assert choice(rows, n, dtype, backward=True) == "cuda", (dtype, rows, n)
            assert choice(rows, n, dtype) == "cuda", (dtype, rows, n)
        assert choice(8193, 8191, dtype, backward=True) == "triton"  # 0.78 against 0.70-0.73
    # the H100's own choices where the H200's points lie far: odd rows the grid has no kind of, which
    # Triton's realigned kernels ran ahead (results 2026-12-07_h100_s85/h1: bf16 335544 x 200 backward
    # 137.3 against 138.8 us, 44739 x 3000 forward 182.8 against 185.1)
    assert choice(671088, 200, torch.bfloat16, backward=True) == "triton"
    assert dispatch._table_choice(False, False, torch.bfloat16, 3000, 44739 * 3000, device_index=1) == "triton"
