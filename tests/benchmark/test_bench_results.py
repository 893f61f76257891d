"""The result file round-trips, the summary finds what misses its goal, and the README table and
the plot render from a fabricated result."""

import gzip
import json

import pytest
from bench_fakes import correct_impl, cpu_runner, fabricated_document, small_case, wrong_impl

from fastsoftmax import dispatch
from fastsoftmax.benchmark import page, readme_table, report, results, table
from fastsoftmax.benchmark.shapes import GOALS, Case


def test_result_file_round_trip(tmp_path):
    runner = cpu_runner([correct_impl(), wrong_impl(), correct_impl("torch", "peer")])
    result = results.ResultFile.start(tmp_path / "out", "main", "NVIDIA Fictional GPU", quick=True, goals=GOALS)
    result.document["copy_gbps"] = 1000.0
    result.add_rows(runner.run_case(small_case()))
    result.add_rows(runner.host_overhead())
    first = result.save()
    assert first.parent == tmp_path / "out" and first.name.startswith("main-quick_nvidia-fictional-gpu_")
    result.add_rows(runner.run_case(small_case("backward")))
    result.document["rows"][0]["err_ratio"] = float("nan")  # JSON has no NaN: stored as a string
    result.document["summary"] = report.summarize(result.document)
    result.save()
    loaded = results.load(first)
    assert results.validate(loaded) == []
    assert loaded["rows"][0]["err_ratio"] == "nan"
    assert len(loaded["rows"]) == len(result.rows)
    assert loaded["device"] == "NVIDIA Fictional GPU" and loaded["quick"] is True
    assert {"torch", "triton", "cuda_core", "driver"} <= set(loaded["versions"])
    assert json.loads(first.read_text())["goals"][0] == {"name": GOALS[0].name, "min_fraction": GOALS[0].min_fraction}
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_recorded_runs_read_gzip_compressed(tmp_path, capsys):
    """Runs kept under benchmarks/results as .json.gz load as their plain twins do, in every reader;
    a damaged one is refused by name."""
    document = fabricated_document()
    plain = tmp_path / "run.json"
    plain.write_text(json.dumps(document))
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert results.load(packed) == results.load(plain) == json.loads(plain.read_text())
    assert results.load_resumable(packed)["rows"] == document["rows"]
    inputs = page.load_inputs([packed])
    assert not inputs.skipped and inputs.documents["main"][0][1]["rows"] == document["rows"]
    assert readme_table.main([str(packed)]) == 0 and "| bulk" in capsys.readouterr().out
    assert table.table_out_path("device", [str(packed)]) == dispatch.device_table_path(document["device"])
    # bytes that are no gzip stream, a stream cut short, a damaged one: refused by name, as a file that
    # is no JSON is
    whole = packed.read_bytes()
    damaged = whole[:12] + bytes(b ^ 0xFF for b in whole[12:-8]) + whole[-8:]
    for name, data in (("plain.json.gz", b"{}"), ("cut.json.gz", whole[: len(whole) // 2]), ("bad.json.gz", damaged)):
        broken = tmp_path / name
        broken.write_bytes(data)
        assert page.load_inputs([broken]).skipped[0].count(str(broken)) == 1
        with pytest.raises(ValueError, match=f"{name}: not a whole gzip stream"):
            results.load_resumable(broken)
        assert readme_table.main([str(broken)]) == 1 and name in capsys.readouterr().err
    missing = tmp_path / "absent.json.gz"
    assert page.load_inputs([missing]).skipped == [f"{missing}: cannot read it: No such file or directory"]


def test_validate_reports_missing_keys_and_bad_statuses():
    document = fabricated_document()
    assert results.validate(document) == []
    broken = dict(document, rows=[dict(document["rows"][0], status="fast")])
    del broken["copy_gbps"]
    problems = results.validate(broken)
    assert any("copy_gbps" in p for p in problems) and any("'fast'" in p for p in problems)
    assert results.validate([]) == ["top level is not an object"]


def test_load_refuses_a_file_that_is_not_a_result(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"points": []}))
    with pytest.raises(ValueError, match="not a fastsoftmax result file"):
        results.load(path)


def test_result_path_has_device_and_date():
    path = results.result_path(
        "benchmarks/results", "main", "NVIDIA H100 80GB HBM3", "2026-05-09T14:03:22+00:00", False
    )
    assert str(path) == "benchmarks/results/main_nvidia-h100-80gb-hbm3_2026-05-09T14-03-22.json"


def test_summary_geomeans_speedups_and_goals():
    document = fabricated_document()
    summary = document["summary"]
    entry = next(
        e
        for e in summary["geomean_frac_copy"]
        if e["group"] == "bulk, cols <= 32768" and e["dtype"] == "bfloat16" and e["impl"] == "fastsoftmax"
    )
    assert entry["frac_copy"] == pytest.approx(0.95) and entry["count"] == 2
    speedup = next(e for e in summary["speedup_vs_torch"] if e["group"] == "backward" and e["impl"] == "fastsoftmax")
    assert speedup["speedup"] == pytest.approx(0.95 / 0.6)
    below = [b for b in summary["below_goal"] if b["impl"] == "fastsoftmax"]
    assert {b["label"] for b in below} == {"non-last dim bf16 65536x2048 dim 0", "non-last dim bf16 32x4096x1024 dim 1"}
    assert summary["host_us"]["fastsoftmax"] == 6.0
    assert summary["status_counts"]["quack"]["refused"] == 2
    text = report.format_summary(summary, 3000.0)
    assert "below its goals: 2 shape(s)" in text and "x1.58" in text


def test_wrong_or_failed_outputs_count_as_below_goal():
    rows = cpu_runner([wrong_impl("fastsoftmax"), correct_impl("torch", "peer")]).run_case(small_case())
    summary = report.summarize({"rows": rows})
    assert [b["status"] for b in summary["below_goal"]] == ["wrong"]
    assert "1 WRONG output(s)" in report.format_summary(summary)


def test_geomean():
    assert report.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert report.geomean([None, 0.0, float("nan")]) is None


def test_case_lines_show_bandwidth_fraction_and_speedups():
    case = Case("decode", (1, 128256), -1, "bfloat16")
    rows = [r for r in fabricated_document()["rows"] if r.get("case") == case.key]
    text = report.format_case(case, rows)
    assert text.splitlines()[0] == "decode bf16 1x128256"
    line = next(entry for entry in text.splitlines() if entry.strip().startswith("fastsoftmax "))
    assert "GB/s" in line and "0.95 of copy" in line and " us" in line and "x1.58 vs torch" in line
    assert "goal" in report.format_case(Case("bulk", (32768, 1024), -1, "bfloat16"), [])


def test_readme_table_renders_a_fabricated_result(tmp_path, capsys):
    document = fabricated_document()
    text = readme_table.render(document)
    assert "NVIDIA Fictional 80GB" in text and "3000 GB/s" in text
    # fastsoftmax as users call it ("auto") against every peer; explicit backends stay out
    assert "| regime | dtype | fastsoftmax | torch.softmax | speed-up | quack | goal |" in text
    assert "| bulk, cols <= 32768 | bf16 | 0.95 | 0.60 | x1.58 | 0.99 | 0.90 |" in text
    assert "| non-last dim | bf16 | 0.50 | 0.60 | x0.83 | - | 0.80 |" in text
    decode_us = 2 * 128256 * 2 / (0.95 * 3000e9) * 1e6
    assert f"| 1x128256 | bf16 | {decode_us:.1f} us |" in text
    assert "| torch.softmax | 9.5 |" in text
    path = tmp_path / "result.json"
    path.write_text(json.dumps(document))
    assert readme_table.main([str(path)]) == 0
    assert capsys.readouterr().out == text
    path.write_text("{}")
    assert readme_table.main([str(path)]) == 1
    # a run of some regimes says which it left out
    assert "full shape set" in text
    partial = readme_table.render({**document, "args": {"regimes": ["bulk", "decode", "backward"]}})
    assert "the shape set of benchmarks/README.md but for its huge, non_last_dim regimes" in partial


def test_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    from fastsoftmax.benchmark import plot

    document = fabricated_document()
    series = plot.bulk_series(document)
    assert [cols for cols, _ in series["bfloat16"]["fastsoftmax"]] == [1024, 8192, 131072]
    path = plot.save_plot(document, tmp_path / "figure.png")
    assert path.stat().st_size > 10_000
    assert plot.save_plot({"rows": []}, tmp_path / "empty.png") is None


def test_readme_table_combines_runs_of_one_device(tmp_path, capsys):
    document = fabricated_document()
    bulk = dict(document, rows=[r for r in document["rows"] if r.get("regime") == "bulk"], copy_gbps=2900.0)
    rest = dict(document, rows=[r for r in document["rows"] if r.get("regime") != "bulk"], copy_gbps=3100.0)
    paths = []
    for i, part in enumerate((bulk, rest)):
        paths.append(tmp_path / f"part{i}.json")
        paths[-1].write_text(json.dumps(part))
    assert readme_table.main([str(p) for p in paths]) == 0
    text = capsys.readouterr().out
    assert "3000 GB/s** (mean of 2 runs)" in text
    # the runs' days, first to last
    late = dict(rest, date="2099-01-02T00:00:00+00:00")
    assert readme_table.combine([bulk, late])["dates"] == sorted([str(bulk["date"]), late["date"]])
    assert f"{str(bulk['date'])[:10]} to 2099-01-02," in readme_table.render(readme_table.combine([bulk, late]))
    assert "| bulk, cols > 32768 | fp32 |" in text and "| backward | bf16 |" in text
    other = dict(document, device="Another GPU")
    with pytest.raises(ValueError):
        readme_table.combine([document, other])
    # the header names the regimes no run timed, from every run's, not from the first's alone
    named = [dict(bulk, args={"regimes": ["bulk"]}), dict(rest, args={"regimes": ["decode", "backward"]})]
    assert "but for its huge, non_last_dim regimes" in readme_table.render(readme_table.combine(named))
    every = [named[0], dict(rest, args={})]  # a run that named no regimes timed them all
    assert "full shape set" in readme_table.render(readme_table.combine(every))


def test_readme_table_keeps_the_latest_run_of_a_case_measured_twice():
    document = fabricated_document()
    again = dict(document, rows=[dict(r, frac_copy=0.5) for r in document["rows"] if r.get("regime") == "bulk"])
    combined = readme_table.combine([document, again])
    assert len(combined["rows"]) == len(document["rows"])
    bulk = [r for r in combined["rows"] if r.get("regime") == "bulk"]
    assert bulk and all(r["frac_copy"] == 0.5 for r in bulk)
    others = [r for r in combined["rows"] if r.get("regime") != "bulk"]
    assert others == [r for r in document["rows"] if r.get("regime") != "bulk"]
    # a case timed again by fewer implementations takes all its rows from the later run, so that no
    # ratio mixes two runs
    case = next(r["case"] for r in document["rows"] if r.get("regime") == "bulk")
    alone = dict(document, rows=[r for r in again["rows"] if r["case"] == case and r["impl"] == "fastsoftmax"])
    rows = [r for r in readme_table.combine([document, alone])["rows"] if r.get("case") == case]
    assert [r["impl"] for r in rows] == ["fastsoftmax"] and rows[0]["frac_copy"] == 0.5
