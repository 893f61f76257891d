"""The seeds' figures and the report page, on the CPU: the shapes each figure measures, a figure run
with fake timers, every plot rendered from recorded or fabricated results, and the page (HTML and
Markdown) with every link and image resolving."""

import argparse
import base64
import itertools
import json
import re
import sys
from pathlib import Path

import pytest
import torch
from bench_fakes import (
    correct_impl,
    fabricated_document,
    fabricated_figure_document,
    fabricated_ladder_document,
    wrong_impl,
)

from fastsoftmax.benchmark import cli, figures, page, peers, readme_table, results, runner, seeds, shapes
from fastsoftmax.benchmark.shapes import Case

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "benchmarks" / "results" / "2026-11-22_h100_s3"


def _parse(*argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


# --- command line -------------------------------------------------------------------------------


def test_every_new_option_parses():
    args = _parse("seeds", "--figures", "sweep,004", "--quick", "--out", "o", "--no-compile")
    assert (args.suite, args.figures, args.quick, args.out, args.compile) == ("seeds", "sweep,004", True, "o", False)
    args = _parse(
        "--shapes",
        "4096x50257,8192x16384@0",
        "--directions",
        "forward,backward",
        "--peers",
        "cudnn,compile",
        "--regimes",
        "bulk",
        "--backends",
        "auto",
    )
    assert args.shapes == "4096x50257,8192x16384@0" and args.directions == "forward,backward"
    assert args.peers == "cudnn,compile" and args.suite == "main"
    assert _parse("--seeds").seeds and _parse("--sweep").sweep and _parse("sweep").suite == "sweep"
    assert _parse("table", "--merge-main", "r.json").merge_main == "r.json"
    assert parse_report("a.json", "b.json", "--out", "r", "--readme-section").readme_section == ""
    assert parse_report("a.json", "--readme-section", "x.md").readme_section == "x.md"
    assert parse_report("a.json").readme_section is None


def parse_report(*argv):
    parser = argparse.ArgumentParser()
    page.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_top_level_command_line_knows_report(capsys):
    from fastsoftmax import cli as top

    with pytest.raises(SystemExit):
        top.main(["report", "--help"])
    assert "--readme-section" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["--shapes", "4096y50257"],
        ["--shapes", "4x8@2"],
        ["--peers", "cudnn,nvidia"],
        ["seeds", "--figures", "everything"],
        ["--directions", "sideways"],
    ],
)
def test_a_typo_is_refused_in_one_line_before_anything_runs(argv, capsys):
    assert cli.run(_parse(*argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastsoftmax bench: ") and len(err.strip().splitlines()) == 1


def test_seeds_without_a_gpu_skip_the_gpu_figures(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.run(_parse("seeds", "--figures", "sweep,vector,attention,ladder", "--out", str(tmp_path))) == 0
    out = capsys.readouterr().out
    assert out.count("skipped: seed") == 4 and "Traceback" not in out
    assert cli.run(_parse("--sweep", "--out", str(tmp_path))) == 0
    assert "seed 002" in capsys.readouterr().out


def test_a_failing_figure_is_one_line_and_the_rest_still_run(monkeypatch, tmp_path, capsys):
    calls = []

    def broken(job, out_dir):
        raise RuntimeError("the model exploded")

    monkeypatch.setattr(seeds, "_start_hardware", lambda out_dir: None)
    monkeypatch.setattr(seeds, "_finish_hardware", broken)
    monkeypatch.setattr(seeds, "_ladder", lambda args, out_dir: calls.append("ladder") or [])
    args = argparse.Namespace(figures="hardware,ladder", out=str(tmp_path), quick=True, compile=None)
    monkeypatch.setattr(seeds, "_context_alive", lambda: True)
    assert seeds.run(args, has_gpu=True) == 1
    out = capsys.readouterr().out
    assert "seed 001 (hardware) failed: RuntimeError: the model exploded" in out
    assert calls == ["ladder"]
    assert "Traceback" in (tmp_path / "seeds_errors.log").read_text()


# --- shapes ---------------------------------------------------------------------------------------


def test_user_shapes_and_directions():
    assert shapes.parse_shapes("4096x50257, 8192x16384@0,7@-1") == (((4096, 50257), -1), ((8192, 16384), 0), ((7,), -1))
    assert shapes.parse_directions("backward,forward") == ("forward", "backward")
    cases = shapes.custom_cases(shapes.parse_shapes("8x16@0"), ("float32",), ("forward", "backward"))
    assert [(c.regime, c.shape, c.dim, c.direction) for c in cases] == [
        ("custom", (8, 16), 0, "forward"),
        ("custom", (8, 16), 0, "backward"),
    ]
    assert shapes.summary_group(cases[1]) == "your shapes, backward"


def test_the_sweep_is_dense_then_log_spaced_and_moves_128_mib_per_point():
    columns = shapes.sweep_columns()
    assert columns[:3] == [128, 256, 384] and 32768 in columns and columns[-1] == 2**20
    assert all(b - a == 128 for a, b in itertools.pairwise(columns) if b <= 32768)
    assert {2**k + 128 for k in range(15, 20)} <= set(columns)
    assert len(columns) < 300
    for case in shapes.sweep_cases():
        assert case.dtype == "float32" and case.dim == -1
        assert 64 << 20 <= case.bytes_moved <= 256 << 20
    quick = shapes.sweep_cases(quick=True)
    assert len(quick) < 40 and all(c.bytes_moved <= 16 << 20 for c in quick)


def test_the_vector_the_matrix_and_the_attention_rows():
    vector, by_column, by_row = shapes.vector_matrix_cases()
    assert vector.shape == (2**24,) and vector.dim == 0
    assert by_column.shape == by_row.shape == (2**12, 2**16) and (by_column.dim, by_row.dim) == (0, 1)
    attention = shapes.attention_cases()
    assert {c.shape[0] for c in attention} == {49152} and {c.dtype for c in attention} == {"float16"}
    assert sorted({c.n for c in attention}) == [2**k for k in range(5, 16)]
    assert {c.direction for c in attention} == {"forward", "backward"} and len(attention) == 22
    largest = max(attention, key=lambda c: c.numel)
    # 3.2 GB a tensor: the float64 check covers a sample of rows, so the case fits on an 80 GB GPU
    assert largest.numel * 2 == 49152 * 32768 * 2
    assert runner.estimate_bytes(largest) < 40 << 30


def test_large_cases_are_checked_on_a_sample_of_rows(monkeypatch):
    monkeypatch.setattr(runner, "FULL_CHECK_ELEMENTS", 1000)
    monkeypatch.setattr(runner, "CHECKED_ROWS", 8)
    case = Case("attention", (64, 32), -1, "float32")
    sampled = runner.checked_rows(case)
    assert sampled[0] == 0 and sampled[-1] == 63 and len(sampled) == 8
    assert runner.checked_rows(Case("attention", (4, 32), -1, "float32")) is None
    assert runner.checked_rows(Case("non_last_dim", (64, 32), 0, "float32")) is None
    from bench_fakes import cpu_runner

    for direction in ("forward", "backward"):
        rows = {
            r["impl"]: r
            for r in cpu_runner([correct_impl(), wrong_impl("fastsoftmax[broken]")]).run_case(
                Case("attention", (64, 32), -1, "float32", direction)
            )
        }
        assert rows["fastsoftmax"]["status"] == "ok" and rows["fastsoftmax[broken]"]["status"] == "wrong"


# --- peers ----------------------------------------------------------------------------------------


def test_peer_names_and_loading_without_optional_packages():
    assert peers.parse_peers("tutorial, compile,cudnn") == ("torch.compile", "cudnn", "triton-tutorial")
    assert peers.parse_peers("none") == () and peers.parse_peers(None) is None
    assert set(peers.parse_peers("all")) == set(peers.OPTIONAL_PEERS)
    loaded = peers.load_peers(names=("cudnn", "triton-tutorial", "torch-unfused"), compile_peer=False)
    names = [i.name for i in loaded.impls]
    assert names[0] == "torch" and "torch-unfused" in names
    assert set(loaded.status) >= {"torch", "torch.compile", "cudnn", "triton-tutorial"}
    assert "quack" not in loaded.status  # not asked for: not imported
    quiet = peers.load_peers(optional=False)
    assert [i.name for i in quiet.impls] == ["torch"] and quiet.status["cudnn"] == "off (--no-peers)"


def test_compile_and_peers_flags_together():
    # (--peers, --compile/--no-compile, --quick) -> (torch.compile may be timed, the peers by name)
    assert peers.chosen_peers(None, None, False) == (True, None)
    assert peers.chosen_peers(None, None, True) == (False, None)  # --quick: no compiling by default
    assert peers.chosen_peers("compile", None, True) == (True, ("torch.compile",))  # named: on
    assert peers.chosen_peers("quack", None, False) == (True, ("quack",))  # not named: not loaded
    # an explicit --compile beside --peers times torch.compile too, rather than leaving it out
    assert peers.chosen_peers("quack", True, False) == (True, ("torch.compile", "quack"))
    assert peers.chosen_peers("quack,compile", False, False) == (False, ("torch.compile", "quack"))
    loaded = peers.load_peers(names=peers.chosen_peers("cudnn", True, True)[1], compile_peer=True)
    assert "torch.compile" in [i.name for i in loaded.impls]


def test_the_tutorial_kernel_and_the_unfused_sequence_compute_softmax():
    if not torch.cuda.is_available():
        import os

        if os.environ.get("TRITON_INTERPRET") != "1":
            pytest.skip("needs the Triton interpreter or a GPU")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    case = Case("sweep", (5, 300), -1, "float32")
    x = torch.randn(case.shape, device=device) * 3
    expected = torch.softmax(x.double(), -1)
    for impl in (peers.tutorial_impl(), peers.torch_unfused_impl()):
        y = impl.make(case)(x)
        assert (y.double() - expected).abs().max().item() < 1e-6
    with pytest.raises(peers.Refused):
        peers.tutorial_impl().make(Case("sweep", (2, 2**17), -1, "float32"))
    with pytest.raises(peers.Refused):
        peers.tutorial_impl().make(Case("non_last_dim", (4, 8), 0, "float32"))
    with pytest.raises(peers.Refused):
        peers.torch_unfused_impl().make(Case("backward", (4, 8), -1, "float32", "backward"))


# --- a figure run, on the CPU -----------------------------------------------------------------------


def test_a_figure_run_writes_json_csv_png_and_table(tmp_path):
    pytest.importorskip("matplotlib")
    args = argparse.Namespace(out=str(tmp_path), quick=True, compile=False)
    cases = [Case("sweep", (4, 128), -1, "float32"), Case("sweep", (4, 256), -1, "float32")]
    impls = [correct_impl(), correct_impl("torch", "peer"), peers.torch_unfused_impl()]
    lines = []
    path = seeds.measure(
        "sweep",
        args,
        100.0,
        device="cpu",
        cases=cases,
        impls=impls,
        runner_options={"timer": lambda fn: (fn(), 0.01)[1]},
        write=lines.append,
    )
    document = results.load(path)
    assert document["suite"] == "sweep" and document["complete"] and len(document["rows"]) == 6
    assert path.with_suffix(".csv").read_text().splitlines()[0].startswith("case,regime,direction,shape")
    written = seeds.write_figure(document, "sweep", tmp_path)
    assert {p.name for p in written} == {"seed002_sweep.md", "seed002_sweep.png"}

    late = seeds.measure(
        "attention", args, 100.0, device="cpu", cases=cases, impls=impls, budget_s=0.0, write=lines.append
    )
    document = results.load(late)
    assert document["complete"] is False and "time budget" in document["aborted"] and not document["rows"]
    assert any(line.startswith("  stopped: time budget") for line in lines)


# --- plots --------------------------------------------------------------------------------------------


def _assert_real_png(path):
    import matplotlib.image

    image = matplotlib.image.imread(str(path))
    height, width = image.shape[:2]
    assert width >= 800 and height >= 350
    assert image[..., :3].std() > 0.05  # not blank


@pytest.mark.parametrize("kind", ["sweep", "vector_matrix", "attention", "ladder", "main"])
def test_each_figure_renders_a_png(kind, tmp_path):
    pytest.importorskip("matplotlib")
    document = {"ladder": fabricated_ladder_document, "main": fabricated_document}.get(
        kind, lambda: fabricated_figure_document(kind)
    )()
    path = figures.DRAWERS[kind](document, tmp_path / f"{kind}.png")
    _assert_real_png(path)
    assert figures.DRAWERS[kind]({"rows": [], "results": []}, tmp_path / "empty.png") is None
    if kind in figures.TABLES:
        table = figures.TABLES[kind](document)
        assert table and table[0].startswith(("|", "forward"))


def test_the_sweep_finds_the_tutorial_kernels_dips():
    found = {d["impl"]: d for d in figures.dips(fabricated_figure_document("sweep", quick=False))}
    assert found["triton-tutorial"]["drop"] > 0.25
    assert found["triton-tutorial"]["after"] == found["triton-tutorial"]["power"] + 128
    assert found["fastsoftmax"]["drop"] < found["triton-tutorial"]["drop"] + 0.1


def test_recorded_ladder_renders(tmp_path):
    pytest.importorskip("matplotlib")
    document = results.read_json(RECORDED / "ladder.json.gz")
    _assert_real_png(figures.draw_ladder(document, tmp_path / "ladder.png"))
    assert any("GFLOP/s" in line for line in figures.ladder_table(document))


# --- the report page ----------------------------------------------------------------------------------


def _write_fabricated_seeds(directory: Path) -> list[str]:
    paths = []
    for kind in ("sweep", "vector_matrix", "attention"):
        document = fabricated_figure_document(kind)
        document["device"] = "NVIDIA H100 80GB HBM3"
        paths.append(directory / f"{kind}.json")
        paths[-1].write_text(json.dumps(document))
    return [str(p) for p in paths]


def test_report_from_recorded_results_resolves_every_link_and_image(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    inputs = sorted(str(p) for p in RECORDED.glob("*.json.gz")) + _write_fabricated_seeds(tmp_path)
    out = tmp_path / "report"
    assert page.run(argparse.Namespace(results=inputs, out=str(out), readme_section="")) == 0
    markdown = (out / "report.md").read_text()
    assert "# fastsoftmax on NVIDIA H100 80GB HBM3" in markdown
    # losses come before wins, and the recorded run's known loss is named
    assert markdown.index("Where a peer beats fastsoftmax") < markdown.index("Where fastsoftmax wins")
    assert "2670x50257" in markdown.split("Where fastsoftmax wins")[0]
    assert "2964 GB/s" in markdown or "2959 GB/s" in markdown
    for target in re.findall(r"\]\(([^)]+)\)", markdown):
        assert not target.startswith("http") and (out / target).is_file(), target
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert len(images) >= 5
    for image in images:
        _assert_real_png(out / image)
    text = (out / "report.html").read_text()
    sources = re.findall(r"src='([^']+)'", text)
    assert len(sources) == len(images)
    for source in sources:
        assert source.startswith("data:image/png;base64,")
        assert base64.b64decode(source.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert not re.findall(r"href=", text)
    section = (out / "readme_section.md").read_text()
    main = page.main_document(page.load_inputs(inputs))
    assert section == readme_table.render(main)
    assert "| bulk, cols <= 32768 | bf16 |" in section
    assert "skipped" in capsys.readouterr().out  # the dispatch tables are not result files


def test_report_without_matplotlib_still_writes_the_tables(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    inputs = _write_fabricated_seeds(tmp_path) + [str(RECORDED / "ladder.json.gz")]
    html_path, markdown_path = page.build(inputs, tmp_path / "report")
    markdown = markdown_path.read_text()
    assert "![" not in markdown and "| triton-tutorial |" in markdown and "| 1_naive |" in markdown
    assert "GFLOP/s" in markdown
    out = capsys.readouterr().out
    assert out.count("pip install matplotlib") == 1 and "Traceback" not in out
    assert "<table>" in html_path.read_text()


def test_report_refuses_files_that_are_not_results(tmp_path, capsys):
    bogus = tmp_path / "bogus.json"
    bogus.write_text("{}")
    assert (
        page.run(
            argparse.Namespace(
                results=[str(bogus), str(tmp_path / "absent.json")], out=str(tmp_path / "r"), readme_section=None
            )
        )
        == 1
    )
    assert "no fastsoftmax result file" in capsys.readouterr().err


def test_a_later_run_replaces_an_earlier_one_shape_by_shape(tmp_path):
    early = fabricated_document()
    late = fabricated_document()
    late["date"] = "2026-05-10T00:00:00+00:00"
    for row in late["rows"]:
        if row.get("frac_copy"):
            row["frac_copy"] = 0.5
    inputs = page.Inputs()
    inputs.documents["main"] = [(Path("a"), early), (Path("b"), late)]
    combined = page.main_document(inputs)
    assert len(combined["rows"]) == len(late["rows"])
    assert {r["frac_copy"] for r in combined["rows"] if r.get("frac_copy")} == {0.5}
    # the page names the runs its figures come from: here the later one only
    header = page.render_markdown(page.build_page(inputs, tmp_path / "figures")[0], tmp_path).split("Versions:")[0]
    assert "Runs: 2026-05-10 00:00." in header
    # a later run of some shapes only: both runs named
    late["rows"] = [r for r in late["rows"] if r.get("regime") == "bulk"]
    header = page.render_markdown(page.build_page(inputs, tmp_path / "figures")[0], tmp_path).split("Versions:")[0]
    assert "2026-05-10 00:00" in header and str(early["date"])[:16].replace("T", " ") in header
    # the ceiling of runs joined is their mean, each run's own beside it where they differ
    early["copy_gbps"], late["copy_gbps"] = 2900.0, 3100.0
    text = page.render_markdown(page.build_page(inputs, tmp_path / "figures")[0], tmp_path)
    assert "main shape set **3000 GB/s** (the mean of its runs'" in text
    assert "2900 on " + str(early["date"])[:16].replace("T", " ") in text and "3100 on 2026-05-10 00:00" in text
    late["copy_gbps"] = 2900.0
    assert "the mean of its runs'" not in page.render_markdown(page.build_page(inputs, tmp_path / "f2")[0], tmp_path)


def test_hw_report_without_matplotlib_says_what_to_install(tmp_path, monkeypatch, capsys):
    from fastsoftmax.hardware import report as hardware_report

    original = hardware_report.input_sets

    def tiny_sets(rng, quick):
        return [hardware_report.InputSet(s.name, s.description, s.rows[:2, :64]) for s in original(rng, quick)[:2]]

    monkeypatch.setattr(hardware_report, "input_sets", tiny_sets)
    monkeypatch.setattr(hardware_report, "QUICK_WIDTHS", (8, 12))
    monkeypatch.setattr(hardware_report, "ablation", lambda sets: [])
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert hardware_report.run(argparse.Namespace(quick=True, out=tmp_path, seed=0)) == 0
    out = capsys.readouterr().out
    assert "matplotlib is not installed (pip install matplotlib" in out
    assert (tmp_path / "hw_report.json").is_file() and not (tmp_path / "hw_report.png").exists()


def test_main_suite_times_the_shapes_given(tmp_path, capsys):
    from fastsoftmax.benchmark import main_suite

    args = _parse(
        "--shapes",
        "4x64,6x5@0",
        "--directions",
        "forward,backward",
        "--peers",
        "unfused",
        "--dtypes",
        "fp32",
        "--backends",
        "auto",
        "--out",
        str(tmp_path),
        "--quick",
    )
    options = {"timer": lambda fn: (fn(), 0.01)[1], "host_timer": lambda fn: 7.0}
    assert main_suite.run(args, device="cpu", copy_gbps=100.0, runner_options=options) == 0
    document = results.load(next(tmp_path.glob("main-quick_cpu_*.json")))
    cases = {(tuple(r["shape"]), r["dim"], r["direction"]) for r in document["rows"]}
    assert cases == {
        ((4, 64), -1, "forward"),
        ((6, 5), 0, "forward"),
        ((4, 64), -1, "backward"),
        ((6, 5), 0, "backward"),
    }
    assert {r["regime"] for r in document["rows"]} == {"custom"}  # no host overhead unless asked for
    statuses = {(r["impl"], r["direction"]): r["status"] for r in document["rows"]}
    assert statuses[("fastsoftmax", "forward")] == "ok" and statuses[("torch-unfused", "backward")] == "refused"
    assert next(tmp_path.glob("main-quick_cpu_*.csv")).read_text().count("\n") == len(document["rows"]) + 1
    assert "your shapes" in capsys.readouterr().out
