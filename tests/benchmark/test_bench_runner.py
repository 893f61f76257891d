"""The runner on the CPU with fake timers: every output is checked before it is timed, and no
implementation's failure stops the run."""

import pytest
import torch
from bench_fakes import correct_impl, cpu_runner, raising_impl, refusing_impl, small_case, wrong_impl

from fastsoftmax.benchmark import checks
from fastsoftmax.benchmark.peers import Impl, Refused, liger_impl, quack_impl, quack_refusal
from fastsoftmax.benchmark.runner import estimate_bytes, make_inputs, make_reference


def _by_impl(rows):
    return {r["impl"]: r for r in rows}


def test_forward_rows_record_check_timing_and_failures():
    impls = [
        correct_impl(),
        wrong_impl("fastsoftmax[broken]"),
        raising_impl("fastsoftmax[cuda]", "fastsoftmax"),
        raising_impl("quack", "peer", declines_by_raising=True),
        refusing_impl("liger"),
        correct_impl("torch", "peer"),
        raising_impl("torch.compile", "peer"),
    ]
    case = small_case()
    rows = _by_impl(cpu_runner(impls, ms=0.5).run_case(case))

    good = rows["fastsoftmax"]
    assert good["status"] == "ok" and good["err_ratio"] <= 1
    assert good["ms"] == 0.5 and good["gpu_us"] == 500
    assert good["gbps"] == pytest.approx(case.bytes_moved / 0.5e-3 / 1e9)
    assert good["frac_copy"] == pytest.approx(good["gbps"] / 1000.0)

    wrong = rows["fastsoftmax[broken]"]
    assert wrong["status"] == "wrong" and wrong["ms"] is None and wrong["max_abs_err"] > 0.1

    assert rows["fastsoftmax[cuda]"]["status"] == "error"  # fastsoftmax must handle every shape
    assert "multiple of 8" in rows["fastsoftmax[cuda]"]["message"]
    assert rows["quack"]["status"] == "refused"  # a peer raising declines the shape
    assert "multiple of 8" in rows["quack"]["message"]
    assert rows["liger"]["status"] == "refused" and rows["liger"]["message"] == "Refused: last dim only"
    assert rows["torch"]["status"] == "ok"
    assert rows["torch.compile"]["status"] == "error"  # a compile failure is an error, recorded
    for row in rows.values():
        assert row["case"] == case.key and row["shape"] == [8, 100]


def test_a_peer_not_finite_is_wrong_and_untimed():
    """A peer outside fastsoftmax's error bars is still timed (the baseline users run, rounding
    differently); one whose output is NaN where the reference is finite is a wrong answer: reported,
    never timed."""

    def nan_peer(case):
        return lambda x: torch.full_like(x, float("nan"))

    off = Impl("off", "peer", lambda case: lambda x: torch.softmax(x, case.dim) * 1.5)
    rows = _by_impl(cpu_runner([correct_impl(), off, Impl("nan", "peer", nan_peer)], ms=0.5).run_case(small_case()))
    assert rows["off"]["status"] == "ok" and rows["off"]["ms"] == 0.5, rows["off"]
    assert rows["off"]["message"].startswith("outside fastsoftmax's error bars") and rows["off"]["err_ratio"] > 1
    assert rows["nan"]["status"] == "wrong" and rows["nan"]["ms"] is None, rows["nan"]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_backward_and_non_last_dim_are_checked_against_float64(dtype):
    runner = cpu_runner([correct_impl(), wrong_impl()])
    rows = _by_impl(runner.run_case(small_case("backward", dtype)))
    assert rows["fastsoftmax"]["status"] == "ok"
    assert rows["broken"]["status"] == "wrong"
    rows = _by_impl(runner.run_case(small_case("forward", dtype, shape=(3, 40, 5), dim=1, regime="non_last_dim")))
    assert rows["fastsoftmax"]["status"] == "ok"
    assert rows["broken"]["status"] == "wrong"


def test_shapes_that_do_not_fit_are_skipped_and_recorded():
    runner = cpu_runner([correct_impl(), correct_impl("torch", "peer")], free_bytes=lambda: 1 << 20)
    rows = runner.run_case(small_case())
    assert [r["status"] for r in rows] == ["skipped", "skipped"]
    assert "GiB free" in rows[0]["message"]


def test_host_overhead_rows():
    rows = cpu_runner([correct_impl(), wrong_impl(), raising_impl("liger", "peer", True)]).host_overhead()
    rows = _by_impl(rows)
    assert rows["fastsoftmax"]["host_us"] == 5.0 and rows["fastsoftmax"]["calls"] == 2000
    assert rows["broken"]["status"] == "wrong" and rows["broken"]["host_us"] is None
    assert rows["liger"]["status"] == "refused"


def test_host_overhead_alternates_implementations_and_keeps_the_median():
    """Each implementation is timed once a round, the order rotated round by round, and keeps the
    median of its rounds: a slow round (or a slow neighbour) does not set its figure."""
    called = []

    def recording_impl(name, kind):
        def make(case):
            def fn(x):
                called.append(name)
                return torch.softmax(x, case.dim)

            return fn

        return Impl(name, kind, make)

    samples = {"fastsoftmax": [9.0, 5.0, 6.0, 5.5, 30.0], "torch": [4.0, 4.5, 50.0, 4.2, 4.1]}
    order = []

    def timer(call):
        call()
        order.append(called[-1])
        return samples[called[-1]][order.count(called[-1]) - 1]

    runner = cpu_runner([recording_impl("fastsoftmax", "fastsoftmax"), recording_impl("torch", "peer")])
    runner.host_timer = timer
    rows = _by_impl(runner.host_overhead())
    assert order == ["fastsoftmax", "torch", "torch", "fastsoftmax"] * 2 + ["fastsoftmax", "torch"]
    assert rows["fastsoftmax"]["host_us"] == 6.0 and rows["torch"]["host_us"] == 4.2
    assert rows["fastsoftmax"]["rounds"] == 5


def test_estimate_covers_the_reference():
    case = small_case(shape=(1024, 1024))
    assert estimate_bytes(case) > case.numel * (8 + 4)


def test_check_flags_nan_and_small_errors():
    case = small_case(dtype="float16")
    (x,) = make_inputs(case, "cpu")
    reference = make_reference(case, (x,))
    y = torch.softmax(x, -1)
    assert checks.check(y, reference).passed
    bad = y.clone()
    bad[3, 7] = float("nan")
    result = checks.check(bad, reference)
    assert not result.passed and result.bad_elements == 1
    off = y.clone()
    # ~20 half-precision ulps on the row's largest output: a small one (fresh random data) can sit
    # below the absolute floor of the error bar
    top = int(off[0].float().argmax())
    off[0, top] = off[0, top] * 1.02
    assert not checks.check(off, reference).passed
    assert not checks.check(y[:4], reference).passed  # wrong shape


def test_inputs_are_fresh_randn_times_three():
    (x,) = make_inputs(small_case(shape=(64, 1024)), "cpu")
    assert 2.5 < x.std().item() < 3.5
    _dy, y = make_inputs(small_case("backward", shape=(64, 1024)), "cpu")
    assert torch.allclose(y.sum(-1), torch.ones(64), atol=1e-4)


class _FakeQuack:
    @staticmethod
    def softmax_fwd(x):
        return torch.softmax(x, -1)

    @staticmethod
    def softmax_bwd(dy, y):
        return torch._softmax_backward_data(dy, y, -1, y.dtype)


def test_quack_and_liger_refuse_what_they_do_not_compute():
    quack = quack_impl(_FakeQuack)
    with pytest.raises(Refused):
        quack.make(small_case(shape=(3, 40, 5), dim=1, regime="non_last_dim"))
    with pytest.raises(Refused):
        quack.make(small_case(shape=(2, 3, 40)))  # 3-D, even over the last dim
    rows = _by_impl(cpu_runner([quack]).run_case(small_case()))
    assert rows["quack"]["status"] == "ok"
    # rows longer than one cluster's shared memory are refused before Quack compiles anything
    with pytest.raises(Refused, match="shared memory of one cluster"):
        quack.make(small_case(shape=(1, 1 << 24), regime="huge"))
    assert quack_refusal(small_case(shape=(1, 1 << 24), regime="huge")) is not None
    assert quack_refusal(small_case(shape=(512, 262144), regime="bulk")) is None
    liger = liger_impl(object())  # a liger without the expected entry points
    with pytest.raises(Refused):
        liger.make(small_case())
    with pytest.raises(Refused):
        liger.make(small_case(shape=(3, 40, 5), dim=1, regime="non_last_dim"))
