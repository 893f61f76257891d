"""``fastsoftmax bench table --merge-main``: a main-suite run's shapes become table points, and the
dispatcher then picks the faster backend at exactly those shapes."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fastsoftmax import dispatch
from fastsoftmax.benchmark import table


def _row(impl, regime, shape, dim, dtype, gpu_us, direction="forward", status="ok"):
    return {
        "impl": impl,
        "regime": regime,
        "shape": list(shape),
        "dim": dim,
        "dtype": dtype,
        "direction": direction,
        "gpu_us": gpu_us,
        "status": status,
    }


def _result(device="GPU X"):
    rows = [
        # one long row: triton's kernel is faster and both launch paths are far shorter
        _row("fastsoftmax[triton]", "huge", (1, 1 << 24), -1, "bfloat16", 40.0),
        _row("fastsoftmax[cuda]", "huge", (1, 1 << 24), -1, "bfloat16", 50.0),
        # decode: triton's kernel is faster, but its 30 us launch path sets the pace
        _row("fastsoftmax[triton]", "decode", (1, 128256), -1, "bfloat16", 9.0),
        _row("fastsoftmax[cuda]", "decode", (1, 128256), -1, "bfloat16", 10.0),
        # over dim 0 of a matrix: the strided layout, n = 8192
        _row("fastsoftmax[triton]", "non_last_dim", (8192, 16384), 0, "float32", 300.0),
        _row("fastsoftmax[cuda]", "non_last_dim", (8192, 16384), 0, "float32", 200.0),
        # only one backend ran correctly: no point
        _row("fastsoftmax[triton]", "bulk", (44739, 3000), -1, "float16", 200.0),
        _row("fastsoftmax[cuda]", "bulk", (44739, 3000), -1, "float16", 190.0, status="wrong"),
        # other implementations are ignored
        _row("torch", "bulk", (4, 7), -1, "float16", 1.0),
        {"impl": "fastsoftmax[triton]", "regime": "host", "status": "ok", "host_us": 30.0},
        {"impl": "fastsoftmax[cuda]", "regime": "host", "status": "ok", "host_us": 12.0},
    ]
    return {"device": device, "date": "2026-01-01", "rows": rows}


def test_main_points_take_the_slower_of_gpu_and_host():
    points = {(p["layout"], p["n"], p["numel"]): p for p in table.main_points(_result())}
    assert set(points) == {("row", 1 << 24, 1 << 24), ("row", 128256, 128256), ("strided", 8192, 8192 * 16384)}
    assert points[("row", 1 << 24, 1 << 24)]["us"] == {"triton": 40.0, "cuda": 50.0}
    assert points[("row", 128256, 128256)]["us"] == {"triton": 30.0, "cuda": 12.0}
    assert points[("strided", 8192, 8192 * 16384)]["dtype"] == "float32"


@pytest.fixture
def merged_table(tmp_path, monkeypatch):
    path = tmp_path / "table.json"
    grid_point = {
        "direction": "forward",
        "layout": "row",
        "dtype": "bfloat16",
        "n": 262144,
        "numel": 1 << 26,
        "size": "bulk",
        "us": {"triton": 100.0, "cuda": 90.0},
    }
    path.write_text(json.dumps({"device": "GPU X", "points": [grid_point]}))
    run = tmp_path / "main.json"
    run.write_text(json.dumps(_result()))
    assert table.merge_main(path, run) == 0
    assert table.merge_main(path, run) == 0  # merging again replaces, never duplicates
    monkeypatch.setattr(dispatch, "TABLE_PATH", path)
    dispatch.clear_caches()
    yield json.loads(path.read_text())
    dispatch.clear_caches()


def test_merged_points_decide_their_shapes(merged_table):
    assert sum(p["size"] == "main" for p in merged_table["points"]) == 3
    # without the merged point the nearest grid point (cuda) would have decided this shape
    assert dispatch._table_choice(False, False, torch.bfloat16, 1 << 24, 1 << 24) == "triton"
    assert dispatch._table_choice(False, False, torch.bfloat16, 128256, 128256) == "cuda"
    assert dispatch._table_choice(False, True, torch.float32, 8192, 8192 * 16384) == "cuda"
    assert dispatch._table_choice(False, False, torch.bfloat16, 262144, 1 << 26) == "cuda"


def test_merge_refuses_another_device(tmp_path):
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"device": "GPU Y", "points": []}))
    run = tmp_path / "main.json"
    run.write_text(json.dumps(_result("GPU X")))
    assert table.merge_main(path, run) == 1
    assert json.loads(path.read_text())["points"] == []


def test_runs_split_over_regimes_merge_into_one_set_of_points(tmp_path):
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"device": "GPU X", "points": []}))
    first, second = _result(), _result()
    first["rows"] = [r for r in first["rows"] if r["regime"] != "non_last_dim"]
    second["rows"] = [r for r in second["rows"] if r["regime"] in ("non_last_dim", "huge")]
    for r in second["rows"]:
        if r["regime"] == "huge":
            r["gpu_us"] *= 2  # timed again by the later run: its point wins
    runs = []
    for index, result in enumerate((first, second)):
        runs.append(tmp_path / f"run{index}.json")
        runs[-1].write_text(json.dumps(result))
    assert table.merge_main(path, *runs) == 0
    document = json.loads(path.read_text())
    points = {(p["layout"], p["n"]): p for p in document["points"]}
    assert set(points) == {("row", 1 << 24), ("row", 128256), ("strided", 8192)}
    assert points[("row", 1 << 24)]["us"] == {"triton": 80.0, "cuda": 100.0}
    assert [run["file"] for run in document["merged_main"]["runs"]] == ["run0.json", "run1.json"]


def test_the_device_table_is_named_after_the_model(tmp_path, monkeypatch):
    """``--table-out device``: the model's own table beside the default (dispatch.device_table_path);
    merged runs name the model, and runs of several models (or none) are refused."""
    monkeypatch.setattr(dispatch, "TABLE_PATH", tmp_path / "dispatch_table.json")
    runs = []
    for k, device in enumerate(("NVIDIA H200", "NVIDIA H200", "NVIDIA H100 80GB HBM3")):
        runs.append(tmp_path / f"main{k}.json")
        runs[-1].write_text(json.dumps(_result(device)))
    assert table.table_out_path("device", runs[:2]) == tmp_path / "dispatch_table_nvidia-h200.json"
    assert str(table.table_out_path("elsewhere.json")) == "elsewhere.json"
    assert table.table_out_path(None) == table.default_table_path()
    with pytest.raises(ValueError, match="no one GPU model"):
        table.table_out_path("device", runs)
    unnamed = tmp_path / "unnamed.json"
    unnamed.write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="no one GPU model"):
        table.table_out_path("device", [unnamed])


def test_merge_refuses_runs_with_nothing_to_merge_and_unreadable_files(tmp_path, capsys):
    # a run of "auto" alone has no per-backend rows: merging it must not drop the table's points
    path = tmp_path / "table.json"
    kept = {"direction": "forward", "size": "main", "dtype": "bfloat16", "shape": [8, 8], "us": {"cuda": 1.0}}
    path.write_text(json.dumps({"device": "GPU X", "points": [kept]}))
    empty = tmp_path / "auto_only.json"
    empty.write_text(json.dumps({**_result(), "rows": []}))
    assert table.merge_main(path, empty) == 1
    assert "the table is left as it was" in capsys.readouterr().err
    assert json.loads(path.read_text())["points"] == [kept]
    assert table.merge_main(path, tmp_path / "missing.json") == 1
    assert "cannot read" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert table.merge_main(path, broken) == 1
    assert json.loads(path.read_text())["points"] == [kept]


def _main_point(shape, us, host=None, dtype="bfloat16"):
    return {
        "direction": "forward",
        "layout": "row",
        "dtype": dtype,
        "n": shape[-1],
        "numel": shape[0] * shape[-1],
        "size": "main",
        "shape": list(shape),
        "dim": len(shape) - 1,
        "gpu_us": dict(us),
        "host_us": host or {},
        "us": dict(us),
        "errors": {},
    }


@pytest.fixture
def fake_gpu(monkeypatch):
    """table's GPU side on the CPU: a device name, both backends, and times a shape's columns set."""
    import fastsoftmax

    timed = []
    available = ["triton", "cuda"]

    def measure(case, size, backends, timer, host_timer):
        assert set(backends) <= set(available)
        timed.append(case.shape)
        if case.shape[-1] == 404:
            raise MemoryError("inputs that do not fit")
        gpu = {name: float(case.shape[-1]) + (1.0 if name == "triton" else 0.0) for name in backends}
        errors = {}
        if case.shape[-1] == 500:  # the CUDA backend's output wrong there now
            errors["cuda"] = "wrong output"
            del gpu["cuda"]
        return {"gpu_us": gpu, "host_us": {}, "us": dict(gpu), "errors": errors}

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "GPU X")
    monkeypatch.setattr(fastsoftmax, "available_backends", lambda *args: list(available))
    monkeypatch.setattr(table, "measure_point", measure)
    return timed, available


def _retiming_table(tmp_path, points, earlier=None, **options):
    """A table of ``points`` (its last retiming's record ``earlier``) at tmp_path/table.json, as written,
    and bench table's arguments for retiming it: no time limit unless ``options`` say otherwise."""
    path = tmp_path / "table.json"
    document = {"device": "GPU X", "backends": ["triton", "cuda"], "points": points}
    if earlier is not None:
        document["retimed_main"] = earlier
    path.write_text(json.dumps(document))
    args = type("Args", (), {"table_out": str(path), "time_limit": None, **options})()
    return path, document, args


def test_retiming_takes_the_nearest_ties_first_and_keeps_host_times(tmp_path, fake_gpu):
    grid_point = {"direction": "forward", "layout": "row", "dtype": "bfloat16", "n": 64, "numel": 1 << 26}
    grid_point.update(size="bulk", us={"triton": 5.0, "cuda": 6.0})
    points = [
        _main_point((4, 300), {"triton": 100.0, "cuda": 400.0}),  # two octaves apart
        _main_point((4, 200), {"triton": 100.0, "cuda": 101.0}, host={"triton": 250.0}),  # level
        _main_point((4, 100), {"cuda": 100.0}),  # one backend alone: last
    ]
    path, document, args = _retiming_table(tmp_path, [grid_point, *points], time_limit=0.0)
    timed, _ = fake_gpu
    assert table.retime_main(args) == 0
    assert timed == [] and json.loads(path.read_text()) == document  # nothing timed, nothing written
    args.time_limit = None
    assert table.retime_main(args) == 0
    assert timed == [(4, 200), (4, 300), (4, 100)]
    retimed = json.loads(path.read_text())
    by_cols = {p["n"]: p for p in retimed["points"] if p["size"] == "main"}
    assert by_cols[200]["gpu_us"] == {"triton": 201.0, "cuda": 200.0}
    assert by_cols[200]["us"] == {"triton": 250.0, "cuda": 200.0}  # the host's pace where it is slower
    assert by_cols[100]["us"] == {"triton": 101.0, "cuda": 100.0}
    assert retimed["points"][0] == grid_point
    assert retimed["retimed_main"]["points"] == retimed["retimed_main"]["of"] == 3
    assert {p["retimed"] for p in by_cols.values()} == {retimed["retimed_main"]["date"]}
    run = tmp_path / "main.json"
    run.write_text(json.dumps(_result()))
    assert table.merge_main(path, run) == 0  # merged points replace the retimed ones, and their record goes
    assert "retimed_main" not in json.loads(path.read_text())
    path.write_text(json.dumps({**document, "device": "GPU Y"}))
    assert table.retime_main(args) == 1


def test_retiming_since_a_date_continues_a_cut_run(tmp_path, fake_gpu, capsys):
    # --retime-since: the points retimed at that date or later are left out ("last": the table's last
    # retiming), and the new record keeps the earlier one
    points = [
        {**_main_point((4, 300), {"triton": 100.0, "cuda": 400.0}), "retimed": "2026-12-07T11:46:28+00:00"},
        {**_main_point((4, 200), {"triton": 100.0, "cuda": 101.0}), "retimed": "2026-12-06T22:42:50+00:00"},
        _main_point((4, 100), {"triton": 100.0, "cuda": 130.0}),
    ]
    earlier = {"date": "2026-12-07T11:46:28+00:00", "points": 1, "of": 3, "complete": False}
    path, document, args = _retiming_table(tmp_path, points, earlier, retime_since="last")
    timed, _ = fake_gpu
    assert table.retime_main(args) == 0
    assert timed == [(4, 200), (4, 100)]  # nearest ties first
    retimed = json.loads(path.read_text())
    assert retimed["retimed_main"]["earlier"] == earlier and retimed["retimed_main"]["of"] == 2
    assert retimed["points"][0] == points[0]  # retimed since: untouched
    assert retimed["retimed_main"]["since"] == "2026-12-07T11:46:28+00:00"
    # a continuation of that run, cut too, goes on from where the first began: the point it timed
    # (stamped now) and the one h1 did are left out, the one retimed before both is timed again
    retimed["points"][1]["retimed"] = "2026-12-06T22:42:50+00:00"
    retimed["retimed_main"]["points"] = 1
    path.write_text(json.dumps(retimed))
    timed.clear()
    assert table.retime_main(args) == 0 and timed == [(4, 200)]
    assert json.loads(path.read_text())["retimed_main"]["since"] == "2026-12-07T11:46:28+00:00"
    timed.clear()
    args.retime_since = "2000-01-01"  # every point retimed since: nothing to time
    assert table.retime_main(args) == 1 and timed == []
    for since, why in (("12/07/2026", "not an ISO date"), ("last", "records no retiming")):
        path.write_text(json.dumps({k: v for k, v in document.items() if k != "retimed_main"}))
        args.retime_since = since
        assert table.retime_main(args) == 1 and timed == []
        assert why in capsys.readouterr().err


def test_retiming_given_lengths_times_only_their_points(tmp_path, fake_gpu, capsys):
    # --retime-lengths: only the main points of those reduced-axis lengths, the record naming them and
    # keeping the earlier one; a length no main point has leaves nothing to time
    points = [_main_point((4, n), {"triton": 100.0, "cuda": 90.0 + n / 100}) for n in (300, 200, 100)]
    earlier = {"date": "2026-12-07T11:46:28+00:00", "points": 3, "of": 3, "complete": True}
    path, document, args = _retiming_table(tmp_path, points, earlier, retime_lengths="100,300")
    timed, _ = fake_gpu
    assert table.retime_main(args) == 0
    assert timed == [(4, 300), (4, 100)]
    retimed = json.loads(path.read_text())
    assert retimed["retimed_main"]["lengths"] == [100, 300] and retimed["retimed_main"]["earlier"] == earlier
    assert retimed["points"][1] == points[1]  # rows of 200: untouched
    timed.clear()
    args.retime_lengths = "7"
    assert table.retime_main(args) == 1 and timed == []
    args.retime_lengths = "edges"
    assert table.retime_main(args) == 1 and timed == []
    assert "--retime-lengths 'edges': a comma list of integers" in capsys.readouterr().err


def test_retiming_keeps_what_it_did_not_time(tmp_path, fake_gpu, capsys):
    """A backend not available here keeps its time; one that now fails loses it (its error noted); a
    point whose inputs cannot be made keeps its times beside the error; a table without main points, or
    a run that meets no backend to time, is refused."""
    _, available = fake_gpu
    points = [
        _main_point((4, 300), {"triton": 100.0, "cuda": 400.0}),
        _main_point((4, 404), {"triton": 100.0, "cuda": 90.0}),
        _main_point((4, 500), {"triton": 100.0, "cuda": 90.0}),
    ]
    path, _, args = _retiming_table(tmp_path, points)
    available.remove("cuda")
    assert table.retime_main(args) == 0
    by_cols = {p["n"]: p for p in json.loads(path.read_text())["points"]}
    assert by_cols[300]["us"] == {"triton": 301.0, "cuda": 400.0}
    assert by_cols[404]["us"] == {"triton": 100.0, "cuda": 90.0} and "MemoryError" in by_cols[404]["errors"]["*"]
    assert "retimed" not in by_cols[404] and "retimed" in by_cols[300]
    available.append("cuda")
    assert table.retime_main(args) == 0
    by_cols = {p["n"]: p for p in json.loads(path.read_text())["points"]}
    assert by_cols[500]["us"] == {"triton": 501.0} and by_cols[500]["errors"] == {"cuda": "wrong output"}
    assert by_cols[300]["us"] == {"triton": 301.0, "cuda": 300.0}
    path.write_text(json.dumps({"device": "GPU X", "points": []}))
    assert table.retime_main(args) == 1
    available.clear()
    path.write_text(json.dumps({"device": "GPU X", "points": points}))
    assert table.retime_main(args) == 1
    assert "nothing timed" in capsys.readouterr().err


def test_retiming_goes_with_the_table_suite_alone(capsys):
    from fastsoftmax.benchmark import cli

    for argv in (("table", "--retime-main", "--merge-main", "r.json"), ("--retime-main",)):
        parser = argparse.ArgumentParser()
        cli.add_arguments(parser)
        assert cli.run(parser.parse_args(list(argv))) == 2
    assert "--retime-main goes with the table suite alone" in capsys.readouterr().err
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.run(parser.parse_args(["table", "--retime-since", "last"])) == 2
    assert "--retime-since goes with --retime-main" in capsys.readouterr().err
    assert cli.run(parser.parse_args(["table", "--retime-lengths", "72,150"])) == 2
    assert "--retime-lengths goes with --retime-main" in capsys.readouterr().err
    assert cli.run(parser.parse_args(["table", "--retime-main", "--retime-lengths", "72,x"])) == 2
    assert "--retime-lengths '72,x': a comma list of integers" in capsys.readouterr().err


def test_measuring_the_grid_again_keeps_the_main_points(tmp_path, fake_gpu, monkeypatch, capsys):
    path = tmp_path / "table.json"
    main_point = _main_point((4, 300), {"triton": 100.0, "cuda": 400.0})
    merged = {"runs": [{"file": "main.json"}], "points": 1}
    path.write_text(json.dumps({"device": "GPU X", "points": [main_point], "merged_main": merged}))
    monkeypatch.setattr(table, "grid", lambda *args, **where: iter([("forward", "row", "bfloat16", 64, "bulk")]))
    args = type("Args", (), {"table_out": str(path), "backends": None, "dtypes": None, "quick": False})()
    assert table.run(args) == 0
    document = json.loads(path.read_text())
    assert [p["size"] for p in document["points"]] == ["bulk", "main"]
    assert document["points"][0]["us"] == {"triton": 65.0, "cuda": 64.0}
    assert document["points"][1] == main_point and document["merged_main"] == merged
    path.write_text(json.dumps({"device": "GPU Y", "points": [main_point], "merged_main": merged}))
    assert table.run(args) == 0
    assert [p["size"] for p in json.loads(path.read_text())["points"]] == ["bulk"]
    assert "1 points of 'GPU Y'" in capsys.readouterr().err
    path.write_text("{not json")
    assert table.run(args) == 0
    assert "cannot be read" in capsys.readouterr().err


def test_the_grid_measures_rows_one_past_each_power_of_two():
    # 2^k + 1 (the CUDA backend's warp tier rounds it up) and the first length past a whole 16-byte vector
    # (Triton's realigned body), in the row layout at the bulk size only
    assert table.edge_lengths("bfloat16")[:4] == (65, 73, 129, 137)
    assert table.edge_lengths("float32")[-2:] == (32769, 32773)
    points = list(table.grid(("bfloat16", "float32")))
    edges = [p for p in points if p[3] & (p[3] - 1)]
    assert {(layout, size) for _, layout, _, _, size in edges} == {("row", "bulk")}
    assert len(edges) == 2 * 2 * 2 * len(table.EDGE_OCTAVES)
    assert len(list(table.grid(("bfloat16",), edges=False))) == len(points) // 2 - 2 * 2 * len(table.EDGE_OCTAVES)


def test_row_lengths_are_measured_into_the_table_keeping_its_other_points(tmp_path, fake_gpu, capsys):
    timed, _ = fake_gpu
    path = tmp_path / "table.json"
    grid_point = {"direction": "forward", "layout": "row", "dtype": "bfloat16", "n": 64, "size": "bulk", "us": {}}
    stale = dict(grid_point, n=513, us={"triton": 1.0, "cuda": 2.0})
    main_point = _main_point((4, 513), {"triton": 100.0, "cuda": 400.0})
    path.write_text(json.dumps({"device": "GPU X", "date": "then", "points": [grid_point, stale, main_point]}))
    args = type("Args", (), {"table_out": str(path), "backends": None, "dtypes": "bf16", "quick": False})()
    args.row_lengths = "513,600"
    assert table.run(args) == 0
    document = json.loads(path.read_text())
    assert [shape[-1] for shape in timed] == [513, 600, 513, 600]
    assert document["date"] == "then" and document["measured_rows"]["complete"]
    assert document["measured_rows"]["lengths"] == [513, 600] and "earlier" not in document["measured_rows"]
    assert document["points"][:1] == [grid_point] and document["points"][-1] == main_point
    rows = {(p["direction"], p["n"]): p["us"] for p in document["points"][1:-1]}
    assert rows == {(d, n): {"triton": n + 1.0, "cuda": float(n)} for d in ("forward", "backward") for n in (513, 600)}
    args.row_lengths = "600"
    assert table.run(args) == 0
    document = json.loads(path.read_text())
    assert document["measured_rows"]["earlier"]["lengths"] == [513, 600]  # the record of the run before
    assert len(document["points"]) == 6
    path.write_text(json.dumps({"device": "GPU Y", "points": [grid_point]}))
    assert table.run(args) == 1
    assert "no table of this 'GPU X'" in capsys.readouterr().err
    assert json.loads(path.read_text())["points"] == [grid_point]
    path.unlink()
    assert table.run(args) == 1 and not path.exists()


def test_rows_measured_alone_survive_the_grid_and_a_cut_run(tmp_path, fake_gpu, monkeypatch):
    from fastsoftmax.benchmark.runner import ContextLost

    timed, _ = fake_gpu
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"device": "GPU X", "points": []}))
    args = type("Args", (), {"table_out": str(path), "backends": None, "dtypes": "bf16", "quick": False})()
    args.row_lengths = "700,513,700"  # a length named twice is measured once
    assert table.run(args) == 0
    assert [shape[-1] for shape in timed] == [700, 513, 700, 513]
    rows = json.loads(path.read_text())["points"]
    # measuring the grid again replaces its points and keeps the rows measured alone, and their record
    args.row_lengths = None
    monkeypatch.setattr(table, "grid", lambda *args, **where: iter([("forward", "row", "bfloat16", 64, "bulk")]))
    assert table.run(args) == 0
    document = json.loads(path.read_text())
    assert document["points"][:4] == rows and document["points"][4]["n"] == 64
    assert document["measured_rows"]["lengths"] == [700, 513]
    # a run cut short keeps the earlier times of the points it did not reach
    measure = table.measure_point

    def lost_at_513(case, *rest):
        if case.shape[-1] == 513:
            raise ContextLost("gone")
        return measure(case, *rest)

    monkeypatch.setattr(table, "measure_point", lost_at_513)
    args.row_lengths = "700,513"
    assert table.run(args) == 0
    document = json.loads(path.read_text())
    assert document["measured_rows"]["aborted"] == "CUDA context lost: gone"
    assert not document["measured_rows"]["complete"]
    assert sorted(p["n"] for p in document["points"]) == [64, 513, 513, 700, 700]
    assert [p for p in document["points"] if p["n"] == 513] == [p for p in rows if p["n"] == 513]


def test_row_lengths_go_with_the_table_suite_alone(capsys):
    from fastsoftmax.benchmark import cli

    for argv in (
        ("--row-lengths", "edges"),
        ("table", "--row-lengths", "9,x"),
        ("table", "--row-lengths", "1"),
        ("table", "--row-lengths", "9", "--retime-main"),
        ("table", "--row-lengths", "9", "--merge-main", "run.json"),
    ):
        parser = argparse.ArgumentParser()
        cli.add_arguments(parser)
        assert cli.run(parser.parse_args(list(argv))) == 2
    err = capsys.readouterr().err
    assert "--row-lengths goes with the table suite alone, not --retime-main or --merge-main" in err
    assert "a comma list of integers" in err and "rows of at least 2 elements" in err


def test_dispatch_heldout_judges_the_choices_against_held_out_points(tmp_path):
    # a table whose one point, 999, sends bf16 rows to Triton, and a point to add at 1025 where the CUDA
    # backend is 20% faster. Held out: 1001 and 3001 / 3005, where Triton is faster, 1027, where the CUDA
    # backend is, and 999 (the table holds it: left out) and 1001 twice (the last kept)
    def point(n, triton, cuda):
        shape = [(1 << 26) // n, n]
        us = {"triton": triton, "cuda": cuda}
        return dict(direction="forward", layout="row", dtype="bfloat16", n=n, size="bulk", shape=shape, us=us)

    def write(name, points):
        (tmp_path / name).write_text(
            json.dumps({"device": "GPU X", "points": [dict(p, numel=1 << 26) for p in points]})
        )
        return str(tmp_path / name)

    table = write("table.json", [point(999, 90.0, 100.0)])
    added = write("added.json", [point(1025, 120.0, 100.0)])
    held = [point(999, 1.0, 2.0), point(1001, 80.0, 99.0), point(1001, 90.0, 99.0), point(1027, 110.0, 100.0)]
    held += [point(3001, 100.0, 110.0), point(3005, 100.0, 110.0)]
    script = Path(__file__).parents[2] / "benchmarks" / "dispatch_heldout.py"
    command = [sys.executable, str(script), "--table", table, "--add", added, "--heldout", write("held.json", held)]
    done = subprocess.run(
        [*command, "--distances", "0,1", "--alone", "--leave-one-out"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("4 held-out row points")
    # as given, 1027 takes 999's Triton; with 1025 added, 1027 is right and 3001 / 3005 take its CUDA backend
    assert "as given, ROW_OCTAVE_DISTANCE 1: chosen over fastest 1.0241 (geomean), 1 lose more than 2%" in done.stdout
    assert "with 1 point added, ROW_OCTAVE_DISTANCE 1: chosen over fastest 1.0488 (geomean), 2 lose" in done.stdout
    assert "    bfloat16 forward 65344 x 1027: x1.10 (cuda 100.0, triton 110.0 us)" in lines
    # each beside the others: 3001 goes by 3005's point and 3005 by 3001's
    for distance in (0, 1):
        assert f"the other held-out points added, ROW_OCTAVE_DISTANCE {distance}: chosen over fastest 1.0000" in (
            done.stdout
        )
    done = subprocess.run([*command[:-1], table], capture_output=True, text=True)  # the table's own points
    assert done.returncode != 0 and "no held-out row point is left" in done.stderr
