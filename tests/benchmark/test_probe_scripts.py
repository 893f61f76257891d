"""The command lines of benchmarks/' probes that once read sys.argv by hand: --help answers without a
GPU, and the invocations recorded under benchmarks/results/ still parse as they did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_scripts import BENCHMARKS, load_benchmark_script

#: script -> words its --help must show (its arguments), for the probes that once read sys.argv by hand
HELP_NAMES = {
    "backend_preference_probe": ["JOBS"],
    "broadcast_order_probe": [],
    "host_small_probe": [],
    "row_tier_ab": ["DTYPES", "VARIANTS", "--backward"],
    "scalar_tile_probe": ["CASES", "DTYPES", "VARIANTS", "BACKEND"],
}

#: runs each script named on its command line with --help, as __main__, and prints one JSON line a
#: script: its exit code and what it printed (one process: the imports are paid once)
_HELP_DRIVER = """
import contextlib, io, json, runpy, sys
for path in sys.argv[1:]:
    sys.argv = [path, "--help"]
    out, err, code = io.StringIO(), io.StringIO(), None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exit:
            code = exit.code
    print(json.dumps({"path": path, "code": code, "out": out.getvalue(), "err": err.getvalue()}))
"""


def _gpu_probes() -> list[str]:
    """The scripts of benchmarks/ that need a GPU (they call gpu_required.require_gpu)."""
    return sorted(
        path.stem
        for path in BENCHMARKS.glob("*.py")
        if path.stem != "gpu_required" and "require_gpu()" in path.read_text()
    )


def test_help_prints_the_usage_without_a_gpu():
    # as run by hand, from the repository with it on PYTHONPATH; no GPU in sight even on a GPU machine,
    # so that --help is seen to come before the probe's GPU check
    names = _gpu_probes()
    assert set(HELP_NAMES) <= set(names)
    env = dict(os.environ, PYTHONPATH=f"{BENCHMARKS}{os.pathsep}{BENCHMARKS.parent}", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(
        [sys.executable, "-c", _HELP_DRIVER, *(str(BENCHMARKS / f"{name}.py") for name in names)],
        cwd=BENCHMARKS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = {Path(entry["path"]).stem: entry for entry in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == names
    for name, entry in answers.items():
        assert entry["code"] in (0, None) and entry["out"].startswith(f"usage: {name}.py"), (name, entry)
        assert "needs a CUDA GPU" not in entry["err"], name
        assert all(word in entry["out"] for word in HELP_NAMES.get(name, [])), name


def test_recorded_invocations_parse_as_before():
    probe = load_benchmark_script("scalar_tile_probe")
    args = probe.parse_args(["(16,21,513,513) d1", "bfloat16"])  # results/2026-12-03_h200_s53/calls
    assert (args.cases, args.dtypes, args.variants, args.backend) == ("(16,21,513,513) d1", "bfloat16", None, None)
    args = probe.parse_args(
        [
            "(16,21,513,513) d1;(8,150,127,127) d1;(16,21,512,512) d1",
            "bfloat16,float32",
            "base;one-piece;32-bit;32-bit,one-piece",
            "triton",
        ]
    )
    assert args.variants == "base;one-piece;32-bit;32-bit,one-piece" and args.backend == "triton"
    args = probe.parse_args([])
    assert (args.cases, args.dtypes) == ("(16,21,513,513) d1", "bfloat16,float32")

    probe = load_benchmark_script("backend_preference_probe")
    jobs = "(4194304,4) d0:float32:fwd;65536x2048:bfloat16:bwd"
    assert probe.parse_args([jobs]).jobs == jobs
    with pytest.raises(SystemExit):
        probe.parse_args([])  # the jobs are required, as they always were
    assert probe.parse_args([jobs, "--explicit"]).explicit and not probe.parse_args([jobs]).explicit

    probe = load_benchmark_script("row_tier_ab")
    args = probe.parse_args(["bfloat16,float32"])
    assert args.n == [5, 9, 13, 21, 37, 50, 60, 63, 72, 74, 100, 127, 150, 160] and not args.backward
    assert args.variants.split(";") == ["flat_rows", "flat_rows@flat_rows_tight=False", "warp"]
    # --backward anywhere among the positional arguments, as the hand-made parsing allowed
    for argv in (
        ["bfloat16", "--backward", "72,74", "warp;flat_rows@flat_rows_tight=False"],
        ["--backward", "bfloat16", "72,74", "warp;flat_rows@flat_rows_tight=False"],
        ["bfloat16", "72,74", "warp;flat_rows@flat_rows_tight=False", "--backward"],
    ):
        args = probe.parse_args(argv)
        assert (args.dtypes, args.n, args.backward) == ("bfloat16", [72, 74], True)
        assert args.variants == "warp;flat_rows@flat_rows_tight=False"


def test_scalar_tile_probe_names_an_unknown_case_or_variant():
    probe = load_benchmark_script("scalar_tile_probe")
    with pytest.raises(SystemExit, match="unknown case 'nonesuch'"):
        probe.main(probe.parse_args(["nonesuch", "bfloat16"]))
    with pytest.raises(SystemExit, match="unknown variant 'nonesuch'; known: base"):
        probe.main(probe.parse_args(["(16,21,513,513) d1", "bfloat16", "base;nonesuch"]))


def test_backend_preference_probe_checks_outputs_against_float64(monkeypatch):
    """--explicit's check before timing: a right forward and backward pass, a wrong output stops the
    probe with its name; a contiguous "(a,b,c) dK" label is a case of its own."""
    import torch

    monkeypatch.syspath_prepend(str(BENCHMARKS))  # cases_of imports its sibling scripts by name, as run

    from fastsoftmax.benchmark.layouts import public_call

    probe = load_benchmark_script("backend_preference_probe")
    kernel_breakdown = load_benchmark_script("kernel_breakdown")
    (case,) = kernel_breakdown.cases_of("(3,40,8) d1")
    assert (case.shape, case.dim) == ((3, 40, 8), 1)
    x = case.make(torch.float32, "cpu")
    y = torch.softmax(x, 1)
    dy = torch.randn_like(y)
    probe._checked(lambda x: torch.softmax(x, 1), (x,), 1, False, "right")
    probe._checked(lambda dy, y: torch._softmax_backward_data(dy, y, 1, torch.float32), (dy, y), 1, True, "right")
    with pytest.raises(SystemExit, match="wrong is off by"):
        probe._checked(lambda x: torch.softmax(x, 2), (x,), 1, False, "wrong")
    with pytest.raises(SystemExit, match="wrong is off by"):
        probe._checked(lambda dy, y: dy, (dy, y), 1, True, "wrong")
    # the public call with a backend named, as --explicit times it
    torch.testing.assert_close(public_call(1, False, backend="torch")(x), y)
