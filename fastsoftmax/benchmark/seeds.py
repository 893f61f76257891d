"""``fastsoftmax bench seeds``: each write-up's claim measured on this GPU, fastsoftmax beside it.

=========  =============  ========================================================================
seed       figure         what is measured
=========  =============  ========================================================================
000        ``ladder``     the kernel ladder, float32 rows of 1024 to 65536 columns, GFLOP/s at
                          5 flops per element beside the fraction of copy bandwidth
001        ``hardware``   the fixed-point hardware model's accuracy (``fastsoftmax hw-report
                          --quick``, on the CPU)
002        ``sweep``      GB/s over a dense sweep of columns: the Triton tutorial's kernel, which
                          pads rows to the next power of two, torch.softmax and fastsoftmax
003        ``vector``     a 2^24 vector and a 2^12 x 2^16 matrix along each dim: the unfused torch
                          sequence against fused kernels (fastsoftmax, torch, torch.compile) and cuDNN
004        ``attention``  49152 rows (BERT-base attention) x 32 .. 32768 columns, fp16, forward and
                          backward: fastsoftmax, torch and cuDNN under the copy ceiling
=========  =============  ========================================================================

Each GPU figure writes ``<figure>_<device>_<date>.json`` (the main suite's schema) and its CSV,
saved after every shape, then ``seed<NNN>_<figure>.png`` and ``seed<NNN>_<figure>.md``; the
ladder writes ``ladder.json``, the hardware model ``hw_report.json`` (it runs in a child process
while the GPU figures run). One figure failing is reported in one line (the traceback goes to
``seeds_errors.log``) and the next one runs. At the end the report page is written to
``<out>/report``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import traceback
from pathlib import Path

from fastsoftmax.benchmark import figures
from fastsoftmax.benchmark.runner import describe

FIGURES = ("ladder", "hardware", "sweep", "vector_matrix", "attention")
SEED_OF = {"ladder": "000", "hardware": "001", "sweep": "002", "vector_matrix": "003", "attention": "004"}
FIGURE_ALIASES = {
    "ladder": "ladder",
    "000": "ladder",
    "0": "ladder",
    "hardware": "hardware",
    "hw": "hardware",
    "001": "hardware",
    "1": "hardware",
    "sweep": "sweep",
    "002": "sweep",
    "2": "sweep",
    "vector": "vector_matrix",
    "vector_matrix": "vector_matrix",
    "matrix": "vector_matrix",
    "003": "vector_matrix",
    "3": "vector_matrix",
    "attention": "attention",
    "oneflow": "attention",
    "004": "attention",
    "4": "attention",
}
GPU_FIGURES = ("ladder", "sweep", "vector_matrix", "attention")
# Run order: the sweep, the longest and the only one whose every shape stands on its own, goes
# last, so that a run cut short loses sweep points rather than a figure; the hardware model runs
# beside them all and is collected at the end.
RUN_ORDER = ("vector_matrix", "attention", "ladder", "sweep", "hardware")
# Wall-clock budgets: past them a figure stops, keeps what it measured and says so, so that one
# slow peer cannot take the whole run past the device's time limit.
BUDGET_S = {"sweep": 180.0, "vector_matrix": 150.0, "attention": 150.0}

# Short timings for the sweep: ~280 shapes, and its points only need to show a shape, not three
# significant digits.
SWEEP_TIMING = {"warmup_ms": 5.0, "rep_ms": 20.0}
FIGURE_TIMING = {"warmup_ms": 10.0, "rep_ms": 50.0}
QUICK_TIMING = {"warmup_ms": 3.0, "rep_ms": 10.0}


def parse_figures(text: str | None) -> tuple[str, ...]:
    if not text:
        return FIGURES
    wanted = set()
    for word in text.split(","):
        word = word.strip().lower()
        if not word:
            continue
        if word not in FIGURE_ALIASES:
            raise ValueError(f"unknown figure {word!r}: use {', '.join(FIGURES)} (or the seed numbers 000-004)")
        wanted.add(FIGURE_ALIASES[word])
    return tuple(f for f in FIGURES if f in wanted)


def figure_stem(figure: str) -> str:
    return f"seed{SEED_OF[figure]}_{figure}"


def write_figure(document: dict, kind: str, out_dir: Path, write=print) -> list[Path]:
    """The PNG and the Markdown table of one figure; the table even without matplotlib."""
    out_dir = Path(out_dir)
    written = []
    stem = figure_stem(kind)
    table = figures.TABLES[kind](document)
    if table:
        path = out_dir / f"{stem}.md"
        path.write_text("\n".join(table) + "\n")
        written.append(path)
    try:
        png = figures.DRAWERS[kind](document, out_dir / f"{stem}.png")
        if png:
            written.append(png)
    except figures.MatplotlibMissing as exc:
        write(str(exc))
    return written


# --- one GPU figure -------------------------------------------------------------------------------


def _impls_for(kind: str, compile_peer: bool):
    from fastsoftmax.benchmark import peers

    chosen = [peers.fastsoftmax_impl("auto"), peers.torch_impl()]
    status = {"torch": _torch_version()}
    if kind == "sweep":
        usable, status["triton-tutorial"] = peers.tutorial_status()
        if usable:
            chosen.append(peers.tutorial_impl())
        return chosen, status
    if kind == "vector_matrix":
        chosen.insert(0, peers.torch_unfused_impl())
        if compile_peer:
            chosen.append(peers.torch_compile_impl())
        status["torch.compile"] = _torch_version() if compile_peer else "off"
    usable, status["cudnn"] = peers.cudnn_status()
    if usable:
        chosen += [peers.cudnn_impl("cudnn"), peers.cudnn_impl("cudnn[fast]")]
    return chosen, status


def _torch_version() -> str:
    import torch

    return torch.__version__


def _cases_for(kind: str, quick: bool):
    from fastsoftmax.benchmark import shapes

    return {
        "sweep": shapes.sweep_cases,
        "vector_matrix": shapes.vector_matrix_cases,
        "attention": shapes.attention_cases,
    }[kind](quick)


def _case_line(case, rows) -> str:
    cells = []
    for row in rows:
        if row["status"] == "ok":
            cells.append(f"{row['impl']} {row['gbps']:.0f}")
        else:
            cells.append(f"{row['impl']} {row['status'].upper()}")
    label = case.label + (" backward" if case.direction == "backward" else "")
    return f"{label:44} GB/s: " + ", ".join(cells)


def measure(
    kind: str,
    args,
    copy_gbps: float,
    *,
    device: str = "cuda",
    cases=None,
    impls=None,
    runner_options=None,
    write=print,
    budget_s: float | None = None,
) -> Path:
    """Run one GPU figure's shapes; returns the result file. The keyword arguments let tests run it
    on the CPU with tiny cases and fake timers."""
    import torch

    from fastsoftmax.benchmark import report
    from fastsoftmax.benchmark.main_suite import progress_bar
    from fastsoftmax.benchmark.results import ResultFile
    from fastsoftmax.benchmark.runner import ContextLost, Runner

    quick = bool(getattr(args, "quick", False))
    compile_peer = getattr(args, "compile", None)
    compile_peer = (not quick) if compile_peer is None else compile_peer
    status = {}
    if impls is None:
        impls, status = _impls_for(kind, compile_peer)
    cases = _cases_for(kind, quick) if cases is None else cases
    on_cuda = torch.device(device).type == "cuda"
    device_name = torch.cuda.get_device_name() if on_cuda else str(device)
    result = ResultFile.start(
        args.out, kind, device_name, quick, extra={"figure": f"seed {SEED_OF[kind]}", "args": {"compile": compile_peer}}
    )
    result.document["copy_gbps"] = copy_gbps
    result.document["peers"] = status
    for name, text in status.items():
        if name != "torch":
            write(f"  peer {name}: {text}")
    result.save()
    timing = QUICK_TIMING if quick else (SWEEP_TIMING if kind == "sweep" else FIGURE_TIMING)
    runner = Runner(impls, copy_gbps, device=device, **{**timing, **(runner_options or {})})
    bar, bar_write = progress_bar(cases, description=figure_stem(kind))
    lost = None
    budget_s = BUDGET_S.get(kind) if budget_s is None else budget_s
    started = time.perf_counter()
    for done, case in enumerate(bar):
        if budget_s is not None and time.perf_counter() - started > budget_s:
            result.document["aborted"] = f"time budget of {budget_s:.0f} s reached after {done} of {len(cases)} shapes"
            write(f"  stopped: {result.document['aborted']}")
            break
        try:
            rows = runner.run_case(case)
        except ContextLost as exc:
            lost = str(exc)
            break
        except Exception as exc:  # noqa: BLE001 - a bug of the harness must not end the figure either
            rows = runner.all_rows(case, "error", "benchmark harness: " + describe(exc))
        result.add_rows(rows)
        result.save()
        bar_write(_case_line(case, rows))
    if hasattr(bar, "close"):
        bar.close()
    result.document["summary"] = report.summarize(result.document)
    result.document["complete"] = lost is None and "aborted" not in result.document
    if lost:
        result.document["aborted"] = f"CUDA context lost: {lost}"
        write(f"  STOPPED: the CUDA context is unusable after a fault ({lost})")
    result.save()
    return result.path


# --- the command ----------------------------------------------------------------------------------


def run(args, *, has_gpu: bool | None = None) -> int:
    import torch

    wanted = parse_figures(getattr(args, "figures", None))
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    has_gpu = torch.cuda.is_available() if has_gpu is None else has_gpu
    started = time.perf_counter()
    produced: list[Path] = []
    failed: list[str] = []
    skipped: list[str] = []
    copy_gbps = None
    # The hardware model runs on the CPU: in a process of its own, while the GPU figures run.
    hardware_job = None
    if "hardware" in wanted:
        try:
            hardware_job = _start_hardware(out_dir)
        except Exception as exc:  # noqa: BLE001 - reported with the figure below
            hardware_job = exc
    for figure in [f for f in RUN_ORDER if f in wanted]:
        began = time.perf_counter()
        print(f"\n== seed {SEED_OF[figure]}: {figure}")
        if figure in GPU_FIGURES and not has_gpu:
            print(f"  skipped: seed {SEED_OF[figure]} measures a CUDA device and none is present")
            skipped.append(figure)
            continue
        try:
            if figure == "hardware":
                produced += _finish_hardware(hardware_job, out_dir)
            elif figure == "ladder":
                produced += _ladder(args, out_dir)
            else:
                if copy_gbps is None:
                    from fastsoftmax.benchmark.timing import copy_bandwidth_gbps

                    copy_gbps = copy_bandwidth_gbps()
                    print(f"  copy bandwidth (512 MiB device-to-device, read + write): {copy_gbps:.0f} GB/s")
                path = measure(figure, args, copy_gbps)
                produced.append(path)
                from fastsoftmax.benchmark import results

                produced += write_figure(results.load(path), figure, out_dir)
        except Exception as exc:  # noqa: BLE001
            failed.append(figure)
            print(f"  seed {SEED_OF[figure]} ({figure}) failed: {describe(exc)} (traceback in seeds_errors.log)")
            with open(out_dir / "seeds_errors.log", "a") as log:
                log.write(f"--- {figure}\n{traceback.format_exc()}\n")
            if figure in GPU_FIGURES and has_gpu and not _context_alive():
                print("  the CUDA context is unusable: no further GPU figure can run")
                has_gpu = False
        print(f"  ({time.perf_counter() - began:.0f} s)")
    documents = [p for p in produced if p.suffix == ".json"]
    if documents:
        from fastsoftmax.benchmark import page

        try:
            html, markdown = page.build([str(p) for p in documents], out_dir / "report")
            produced += [html, markdown]
        except Exception as exc:  # noqa: BLE001
            print(f"report page not written: {describe(exc)}")
    done = len(wanted) - len(failed) - len(skipped)
    print(
        f"\nseeds: {done} figure(s) measured, {len(skipped)} skipped, {len(failed)} failed"
        f"{' (' + ', '.join(failed) + ')' if failed else ''} in {time.perf_counter() - started:.0f} s"
    )
    for path in produced:
        print(f"  {path}")
    return 1 if failed else 0


def _context_alive() -> bool:
    try:
        import torch

        torch.ones(1, device="cuda").add_(1).cpu()
        return True
    except Exception:  # noqa: BLE001
        return False


HARDWARE_TIMEOUT_S = 600
HARDWARE_SUMMARY_LINES = 20


def _start_hardware(out_dir: Path):
    """``fastsoftmax hw-report --quick`` in a child process, its output in hw_report.log; its
    hw_report.json lands beside the other figures' results, so ``report OUT/*.json`` finds it."""
    with open(out_dir / "hw_report.log", "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "fastsoftmax", "hw-report", "--quick", "--out", str(out_dir)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _finish_hardware(job, out_dir: Path) -> list[Path]:
    if isinstance(job, BaseException):
        raise job
    try:
        status = job.wait(timeout=HARDWARE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        job.kill()
        raise RuntimeError(f"hw-report took more than {HARDWARE_TIMEOUT_S} s and was stopped") from None
    log = (out_dir / "hw_report.log").read_text(errors="replace").splitlines()
    if status != 0:
        raise RuntimeError(
            f"hw-report exited with status {status}: {log[-1] if log else 'no output'} (hw_report.log has the rest)"
        )
    print("\n".join("  " + line for line in log[-HARDWARE_SUMMARY_LINES:]))
    return [p for p in (out_dir / "hw_report.json", out_dir / "hw_report.png") if p.exists()]


def _ladder(args, out_dir: Path) -> list[Path]:
    from fastsoftmax.benchmark import ladder

    document = ladder.run(argparse.Namespace(quick=bool(getattr(args, "quick", False)), out=str(out_dir)))
    return [out_dir / "ladder.json", *write_figure(document, "ladder", out_dir)]
