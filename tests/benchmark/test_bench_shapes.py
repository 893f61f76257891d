"""The benchmark's shape set is the one benchmarks/README.md documents, every shape is held to the
right goal, and the seeds' figures measure the shapes their write-ups do."""

import re
from pathlib import Path

import pytest

from fastsoftmax.benchmark import shapes
from fastsoftmax.benchmark.shapes import Case, goal_for, parse_dtypes, summary_group

REPO = Path(__file__).resolve().parents[2]


def _benchmark_readme() -> str:
    return (REPO / "benchmarks" / "README.md").read_text()


def test_constants_are_the_documented_shape_set():
    assert shapes.BULK_NUMEL == 2**27
    assert shapes.BULK_COLS == (
        8,
        16,
        32,
        64,
        96,
        100,
        127,
        128,
        160,
        256,
        512,
        1000,
        1024,
        2048,
        3000,
        4096,
        8192,
        16384,
        32768,
        50257,
        65536,
        128256,
        131072,
        262144,
        524288,
        699051,
        1048576,
    )
    assert shapes.HUGE_ROW_COLS == (2**24, 2**26, 2**24 + 7)
    assert shapes.DECODE_SHAPES == ((1, 128256), (8, 128256), (32, 151936), (128, 128256))
    assert shapes.NON_LAST_DIM == (
        ((8192, 16384), 0),
        ((65536, 2048), 0),
        ((1048576, 128), 0),
        ((32, 4096, 1024), 1),
        ((128, 1024, 1024), 1),
        ((4096, 64, 512), 1),
    )
    assert shapes.BACKWARD_COLS == (16, 100, 1024, 4096, 16384, 50257, 65536, 131072, 262144, 1048576)
    assert shapes.BACKWARD_NUMEL == 2**27
    assert (shapes.HOST_SHAPE, shapes.HOST_DTYPE, shapes.HOST_CALLS) == ((4, 1024), "bfloat16", 2000)


def test_constants_match_the_protocol_in_benchmarks_readme():
    flat = " ".join(_benchmark_readme().split())
    bulk = re.search(r"for cols = ([\d, ]+)\.", flat).group(1)
    assert tuple(int(c) for c in bulk.split(",")) == shapes.BULK_COLS
    decode = re.search(r"Decode, .*?: ([\dx, ]+)\.", flat).group(1)
    assert tuple(tuple(int(v) for v in s.split("x")) for s in decode.split(", ")) == shapes.DECODE_SHAPES
    non_last = re.search(r"not the innermost: (.*?)\. ", flat).group(1)
    parsed = [
        (tuple(int(v) for v in m.group(1).split(",")), int(m.group(2)))
        for m in re.finditer(r"\(([\d, ]+)\) dim (\d)", non_last)
    ]
    assert tuple(parsed) == shapes.NON_LAST_DIM
    backward = re.search(r"Backward: cols ([\d, ]+) \(total 2\^(\d+)\)", flat)
    assert tuple(int(c) for c in backward.group(1).split(",")) == shapes.BACKWARD_COLS
    assert 2 ** int(backward.group(2)) == shapes.BACKWARD_NUMEL
    assert "1 x 2^24" in flat and "1 x 2^26" in flat and "1 x (2^24 + 7)" in flat
    assert "4x1024 bf16" in flat and "2000 back-to-back" in flat
    for goal in shapes.GOALS:
        assert f"{goal.min_fraction:.2f}" in flat


def test_full_set_covers_every_regime_and_dtype():
    cases = shapes.full_cases()
    assert len(cases) == 3 * (27 + 3 + 4 + 6 + 10)
    assert len({c.key for c in cases}) == len(cases)
    for case in cases:
        if case.regime == "bulk":
            assert case.shape == (2**27 // case.n, case.n) and case.dim == -1
        if case.regime == "backward":
            assert case.direction == "backward" and case.shape == (2**27 // case.n, case.n)
    assert {c.regime for c in cases} == set(shapes.REGIMES)
    assert {c.dtype for c in cases} == {"bfloat16", "float16", "float32"}


def test_quick_set_is_a_small_sample_of_every_regime():
    cases = shapes.quick_cases()
    assert {c.regime for c in cases} == set(shapes.REGIMES)
    assert len(cases) <= 20
    bulk = [c for c in cases if c.regime == "bulk"]
    assert {c.dtype for c in bulk} == {"bfloat16", "float16", "float32"}
    assert all(c.numel == 2**25 for c in bulk)
    # the single shapes of the other regimes run in bf16, the dtype models use
    assert all(c.dtype == "bfloat16" for c in cases if c.regime != "bulk")
    assert len([c for c in cases if c.regime == "non_last_dim"]) == 2
    assert len([c for c in cases if c.regime == "backward"]) == 2


def test_dtype_filter():
    assert parse_dtypes("fp32,bf16") == ("bfloat16", "float32")
    assert parse_dtypes(None) == ("bfloat16", "float16", "float32")
    assert {c.dtype for c in shapes.full_cases(parse_dtypes("fp16"))} == {"float16"}
    assert {c.dtype for c in shapes.quick_cases(("float32",))} == {"float32"}
    with pytest.raises(ValueError):
        parse_dtypes("int8")


def test_bytes_moved_counts_one_read_one_write_forward_two_reads_backward():
    assert Case("bulk", (4, 1024), -1, "bfloat16").bytes_moved == 2 * 4 * 1024 * 2
    assert Case("backward", (4, 1024), -1, "float32", "backward").bytes_moved == 3 * 4 * 1024 * 4


@pytest.mark.parametrize(
    "case, goal",
    [
        (Case("bulk", (4096, 32768), -1, "bfloat16"), 0.90),
        (Case("bulk", (2**27 // 64, 64), -1, "float32"), 0.90),
        (Case("bulk", (2670, 50257), -1, "bfloat16"), 0.80),
        (Case("bulk", (512, 262144), -1, "float16"), 0.80),
        (Case("huge", (1, 2**24), -1, "bfloat16"), 0.60),
        (Case("non_last_dim", (65536, 2048), 0, "bfloat16"), 0.80),
        (Case("backward", (2**17, 1024), -1, "bfloat16", "backward"), 0.85),
        (Case("decode", (1, 128256), -1, "bfloat16"), None),
    ],
)
def test_goals(case, goal):
    found = goal_for(case)
    assert (found.min_fraction if found else None) == goal
    if found:
        assert shapes.GROUP_GOALS[summary_group(case)] == found


def test_labels_name_the_dim_only_when_it_is_not_the_last():
    assert Case("bulk", (8, 1024), -1, "bfloat16").label == "bulk rows bf16 8x1024"
    assert Case("non_last_dim", (32, 4096, 1024), 1, "float32").label == "non-last dim fp32 32x4096x1024 dim 1"
    case = Case("non_last_dim", (32, 4096, 1024), 1, "float32")
    assert Case.from_json(case.to_json()) == case


def test_regime_filter():
    assert shapes.parse_regimes(None) == shapes.REGIMES + ("host",)
    assert shapes.parse_regimes("host,nonlast,bulk") == ("bulk", "non_last_dim", "host")
    with pytest.raises(ValueError):
        shapes.parse_regimes("everything")
