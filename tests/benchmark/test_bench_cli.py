"""``fastsoftmax bench`` parsing, the no-GPU path, and the dispatch-table grid."""

import argparse

import pytest
import torch

from fastsoftmax.benchmark import cli, demo, table


def _parse(*argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_and_flags():
    args = _parse()
    assert (args.suite, args.quick, args.out, args.no_peers, args.compile) == (
        "main",
        False,
        "benchmarks/results",
        False,
        None,
    )
    assert args.dtypes == "bf16,fp16,fp32" and args.backends == "auto,triton,cuda"
    args = _parse("table", "--quick", "--out", "x", "--dtypes", "bf16", "--table-out", "t.json", "--no-compile")
    assert (args.suite, args.quick, args.out, args.table_out, args.compile) == ("table", True, "x", "t.json", False)
    assert _parse("ladder").suite == "ladder"
    with pytest.raises(SystemExit):
        _parse("nonsense")


def test_top_level_command_line_knows_bench(capsys):
    from fastsoftmax import cli as top

    with pytest.raises(SystemExit):
        top.main(["bench", "--help"])
    assert "--quick" in capsys.readouterr().out


def test_without_a_gpu_it_says_so_and_runs_the_demo(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    ran = []
    monkeypatch.setattr(demo, "ensure_interpreter", lambda: True)
    monkeypatch.setattr(demo, "run_demo", lambda: ran.append(True) or 0)
    assert cli.run(_parse("--quick")) == 0
    out = capsys.readouterr().out
    assert "No CUDA device is present" in out and "Triton interpreter" in out
    assert ran == [True]


def test_without_the_interpreter_it_reexecutes_itself(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(demo, "ensure_interpreter", lambda: False)
    seen = {}

    class Done:
        returncode = 0

    def fake_run(command, env, **options):
        seen.update(command=command, env=env)
        return Done()

    monkeypatch.setattr(cli.subprocess, "run", fake_run)
    assert cli.run(_parse()) == 0
    assert seen["command"][-3:] == ["fastsoftmax", "bench", "--demo"]
    assert seen["env"]["TRITON_INTERPRET"] == "1"


def test_demo_on_one_tiny_shape(monkeypatch):
    fastsoftmax = pytest.importorskip("fastsoftmax")
    if not hasattr(fastsoftmax, "softmax") or torch.cuda.is_available():
        pytest.skip("needs the public API and no GPU")
    if not demo.ensure_interpreter():
        pytest.skip("triton was imported before the interpreter could be chosen")
    lines = []
    assert demo.run_demo(cases=(((2, 16), -1, "forward"),), write=lines.append) == 0
    text = "\n".join(lines)
    assert "fastsoftmax[triton]" in text and "torch.softmax" in text
    assert "failed" not in text
    errors = [float(line.split()[-1]) for line in lines[1:]]
    assert max(errors) < 1e-6


def test_table_grid_shapes_and_cost_rule():
    case = table.point_case("forward", "row", "bfloat16", 1024, "bulk")
    assert case.shape == (2**26 // 1024, 1024) and case.numel == 2**26 and case.dim == -1
    case = table.point_case("backward", "strided", "float32", 4096, "bulk")
    assert case.shape == (2**26 // (4096 * 256), 4096, 256) and case.dim == 1 and case.direction == "backward"
    assert table.point_case("forward", "strided", "float16", 262144, "bulk").shape == (1, 262144, 256)
    assert table.point_case("forward", "row", "float16", 64, "small").shape == (4, 64)
    assert table.point_case("forward", "strided", "float16", 64, "small").shape == (1, 64, 4)
    points = list(table.grid())
    # the powers of two at both sizes and layouts, and two edge lengths an octave in the row layout at the bulk size
    assert len(points) == 2 * 2 * 3 * 13 * 2 + 2 * 3 * 2 * len(table.EDGE_OCTAVES)
    assert table.N_GRID[0] == 64 and table.N_GRID[-1] == 262144
    # host overhead is charged only where it is not hidden behind the GPU
    assert table.combine(3.0, 5.0, "small") == 8.0
    assert table.combine(300.0, 5.0, "bulk") == 300.0


def test_table_summary_names_the_winner():
    document = {
        "points": [
            {
                "direction": "forward",
                "layout": "row",
                "dtype": "bfloat16",
                "n": 64,
                "size": "small",
                "us": {"triton": 9.0, "cuda": 7.0},
            },
            {"direction": "forward", "layout": "row", "dtype": "bfloat16", "n": 128, "size": "small", "us": {}},
        ]
    }
    assert table.format_table(document) == "forward  row     bfloat16 small 64:cuda 128:-"


def test_main_suite_end_to_end_on_the_cpu(tmp_path, capsys):
    """The whole main suite, on the CPU with two tiny cases and fake timers: printed lines, the
    summary, the saved JSON and the plot."""
    from bench_fakes import small_case

    from fastsoftmax.benchmark import main_suite, results

    args = _parse("--quick", "--out", str(tmp_path), "--dtypes", "fp32")
    cases = [small_case(shape=(4, 64)), small_case("backward", shape=(4, 64))]
    options = {"timer": lambda fn: (fn(), 0.01)[1], "host_timer": lambda fn: 7.0, "host_calls": 10}
    assert main_suite.run(args, device="cpu", cases=cases, copy_gbps=100.0, runner_options=options) == 0
    out = capsys.readouterr().out
    assert "copy bandwidth" in out and "Summary" in out and "host overhead" in out
    saved = list(tmp_path.glob("main-quick_cpu_*.json"))
    assert len(saved) == 1
    document = results.load(saved[0])
    assert document["complete"] is True and document["copy_gbps"] == 100.0
    assert document["peers"]["torch.compile"] == "off"
    impls = {r["impl"] for r in document["rows"]}
    assert {"fastsoftmax", "torch"} <= impls
    statuses = {(r.get("case"), r["impl"]): r["status"] for r in document["rows"]}
    assert statuses[(cases[0].key, "fastsoftmax")] == "ok"
    assert statuses[(cases[1].key, "torch")] == "ok"
    assert "summary" in document


def test_a_typo_in_a_list_is_refused_before_anything_runs(capsys):
    assert cli.run(_parse("--dtypes", "bf16,int8")) == 2
    assert cli.run(_parse("--regimes", "bulk,everything")) == 2
    assert "unknown" in capsys.readouterr().err


def test_ladder_suite_is_handed_the_arguments(monkeypatch):
    import sys
    import types

    seen = {}
    fake = types.ModuleType("fastsoftmax.benchmark.ladder")
    fake.run = lambda args: seen.update(quick=args.quick, out=args.out) or {"steps": []}
    monkeypatch.setitem(sys.modules, "fastsoftmax.benchmark.ladder", fake)
    import fastsoftmax.benchmark as package

    monkeypatch.setattr(package, "ladder", fake, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert cli.run(_parse("ladder", "--quick", "--out", "somewhere")) == 0
    assert seen == {"quick": True, "out": "somewhere"}


def test_a_run_stopped_by_its_time_limit_is_resumed_where_it_stopped(tmp_path, capsys):
    """--time-limit stops before a shape and saves the run as incomplete; --resume keeps what that
    run measured and measures only the rest, so a run split over time-limited device calls ends
    as one complete result."""
    import json

    from bench_fakes import small_case

    from fastsoftmax.benchmark import main_suite

    cases = [small_case(shape=(4, 64)), small_case(shape=(4, 96)), small_case("backward", shape=(4, 64))]
    options = {"timer": lambda fn: (fn(), 0.01)[1], "host_timer": lambda fn: 7.0, "host_calls": 10}
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    args = _parse("--quick", "--out", str(first_dir), "--dtypes", "fp32", "--time-limit", "0")
    assert main_suite.run(args, device="cpu", cases=cases, copy_gbps=100.0, runner_options=options) == 0
    assert "RUN STOPPED: time limit" in capsys.readouterr().out
    (stopped,) = first_dir.glob("main-quick_cpu_*.json")
    document = json.loads(stopped.read_text())
    assert document["complete"] is False and "time limit" in document["stopped"]
    assert {r["case"] for r in document["rows"]} == set()

    # a run that measured the first shape only (its rows marked), then resumed with all three
    partial_dir = tmp_path / "partial"
    args = _parse("--quick", "--out", str(partial_dir), "--dtypes", "fp32", "--regimes", "bulk")
    assert main_suite.run(args, device="cpu", cases=cases[:1], copy_gbps=100.0, runner_options=options) == 0
    (stopped,) = partial_dir.glob("main-quick_cpu_*.json")
    document = json.loads(stopped.read_text())
    document["rows"] = [dict(row, gpu_us=123.0) for row in document["rows"]]
    stopped.write_text(json.dumps(document))
    args = _parse("--quick", "--out", str(second_dir), "--dtypes", "fp32", "--resume", str(stopped))
    assert main_suite.run(args, device="cpu", cases=cases, copy_gbps=100.0, runner_options=options) == 0
    (resumed,) = second_dir.glob("main-quick_cpu_*.json")
    document = json.loads(resumed.read_text())
    assert document["complete"] is True and document["resumed_from"] == stopped.name
    assert {r["case"] for r in document["rows"] if r.get("case")} == {c.key for c in cases}
    kept = [r for r in document["rows"] if r.get("case") == cases[0].key]
    assert kept and all(r["gpu_us"] == 123.0 for r in kept)  # copied, not measured again


def test_resume_refuses_a_run_of_another_device(tmp_path, capsys):
    import json

    from fastsoftmax.benchmark import main_suite

    other = tmp_path / "other.json"
    other.write_text(json.dumps({"device": "GPU Y", "rows": []}))
    args = _parse("--quick", "--out", str(tmp_path), "--resume", str(other))
    assert main_suite.run(args, device="cpu", cases=[], copy_gbps=100.0) == 2
    error = capsys.readouterr().err
    assert "GPU Y" in error and "Traceback" not in error and not list(tmp_path.glob("main_*.json"))


def _nothing_may_run(monkeypatch, gpu: bool) -> list:
    """The GPU or the CPU path of bench with the demo and the main suite replaced by recorders."""
    from fastsoftmax.benchmark import main_suite

    ran = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    monkeypatch.setattr(demo, "ensure_interpreter", lambda: True)
    monkeypatch.setattr(demo, "run_demo", lambda: ran.append("demo") or 0)
    monkeypatch.setattr(main_suite, "run", lambda args: ran.append("main") or 0)
    return ran


@pytest.mark.parametrize("gpu", [False, True], ids=["no_device", "cuda_device"])
def test_an_unknown_backend_is_refused_before_anything_runs(monkeypatch, capsys, gpu):
    from fastsoftmax import dispatch

    ran = _nothing_may_run(monkeypatch, gpu)
    for backends in ("nonesuch", "auto,triton,nonesuch", "quack", "fastsoftmax[triton]"):
        assert cli.run(_parse("--backends", backends)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "unknown backend" in err
        assert all(name in err for name in dispatch.BACKENDS)
    assert ran == []
    # every name the library's backend= takes, spaced or not, still runs
    assert cli.run(_parse("--backends", " , ".join(dispatch.BACKENDS))) == 0
    assert cli.run(_parse("--backends", "cuda,triton")) == 0
    assert ran == ["main" if gpu else "demo"] * 2


@pytest.mark.parametrize("gpu", [False, True], ids=["no_device", "cuda_device"])
def test_a_resume_file_is_checked_before_anything_runs(tmp_path, monkeypatch, capsys, gpu):
    import json

    ran = _nothing_may_run(monkeypatch, gpu)
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "table.json").write_text(json.dumps({"suite": "table", "points": [], "rows": []}))
    wrong = {
        "missing.json": "No such file",
        "text.json": "not JSON",
        "list.json": "not a fastsoftmax result file",
        "table.json": "'table' suite",
        ".": "Is a directory",
    }
    for name, reason in wrong.items():
        path = tmp_path / name
        assert cli.run(_parse("--resume", str(path))) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err and reason in err
    assert ran == []
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"suite": "main", "device": "GPU X", "rows": []}))
    assert cli.run(_parse("--resume", str(earlier))) == 0
    assert ran == ["main" if gpu else "demo"]
