"""The result file: one JSON document per run, rewritten after every shape so that a run cut
short (a timeout, a crash) still leaves everything measured until then.

Schema (``"schema": 1``)::

    {
      "schema": 1, "suite": "main", "quick": bool, "complete": bool,
      "device": str, "date": ISO-8601 str, "versions": {str: str},
      "environment": {...},                # SM count, memory, fastsoftmax commit, argv
      "copy_gbps": float | null,            # bytes read + written per second of a 512 MiB copy
      "peers": {name: version or why missing},
      "goals": [{"name", "min_fraction"}],
      "rows": [row, ...],
      "summary": {...}                      # added when the run ends (see report.summarize)
    }

A row is one implementation on one case::

    {"case": key, "regime", "direction", "shape": [int], "dim", "dtype", "n", "numel", "bytes",
     "impl": str, "kind": "fastsoftmax"|"peer",
     "status": "ok"|"wrong"|"refused"|"error"|"skipped",
     "max_abs_err": float|null, "err_ratio": float|null,   # from the float64 check
     "ms": float|null, "gpu_us": float|null, "gbps": float|null, "frac_copy": float|null,
     "message": str}

and a host-overhead row is ``{"regime": "host", "impl", "kind", "status", "host_us", "shape",
"dtype", "calls", "message"}``.
"""

from __future__ import annotations

import csv
import datetime as _dt
import gzip
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import zlib
from pathlib import Path

from fastsoftmax.dispatch import device_slug

SCHEMA_VERSION = 1
STATUSES = ("ok", "wrong", "refused", "error", "skipped")
CASE_ROW_KEYS = (
    "case",
    "regime",
    "direction",
    "shape",
    "dim",
    "dtype",
    "n",
    "numel",
    "bytes",
    "impl",
    "kind",
    "status",
    "max_abs_err",
    "err_ratio",
    "ms",
    "gpu_us",
    "gbps",
    "frac_copy",
    "message",
)
HOST_ROW_KEYS = ("regime", "impl", "kind", "status", "host_us", "shape", "dtype", "calls", "message")
TOP_KEYS = ("schema", "suite", "quick", "complete", "device", "date", "versions", "copy_gbps", "peers", "goals", "rows")


def now_iso() -> str:
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


def result_path(out_dir, suite: str, device: str, date_iso: str, quick: bool) -> Path:
    """``benchmarks/results/main-quick_nvidia-h100-80gb-hbm3_2026-05-09T14-03-22.json``"""
    stamp = date_iso[:19].replace(":", "-")
    name = f"{suite}{'-quick' if quick else ''}_{device_slug(device)}_{stamp}.json"
    return Path(out_dir) / name


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except Exception:  # noqa: BLE001
        return None


def _driver_version() -> str | None:
    try:
        from cuda.bindings import driver  # type: ignore

        err, version = driver.cuDriverGetVersion()
        if int(err) == 0:
            return f"{version // 1000}.{(version % 1000) // 10}"
    except Exception:  # noqa: BLE001, S110
        pass
    try:
        text = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
        return text.splitlines()[0] if text else None
    except Exception:  # noqa: BLE001
        return None


def _git_commit() -> str | None:
    try:
        here = Path(__file__).resolve().parent
        text = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=False
        )
        if text.returncode != 0:
            return None
        return text.stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


def collect_versions() -> dict:
    """Versions that decide the figures. Missing pieces are None, never an exception."""
    versions = {"python": platform.python_version()}
    try:
        import torch

        versions["torch"] = torch.__version__
        versions["torch_cuda"] = torch.version.cuda
    except Exception:  # noqa: BLE001
        versions["torch"] = None
    try:
        import triton

        versions["triton"] = triton.__version__
    except Exception:  # noqa: BLE001
        versions["triton"] = None
    versions["cuda_core"] = _dist_version("cuda-core")
    versions["cuda_bindings"] = _dist_version("cuda-bindings")
    versions["fastsoftmax"] = _dist_version("fastsoftmax")
    if versions["fastsoftmax"] is None:  # run from a checkout, not installed
        try:
            import fastsoftmax

            versions["fastsoftmax"] = getattr(fastsoftmax, "__version__", None)
        except Exception:  # noqa: BLE001, S110
            pass
    versions["driver"] = _driver_version()
    return versions


def collect_environment() -> dict:
    env = {"argv": sys.argv[1:], "fastsoftmax_commit": _git_commit()}
    try:
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            env["sm_count"] = props.multi_processor_count
            env["memory_gib"] = round(props.total_memory / 2**30, 1)
            env["capability"] = f"{props.major}.{props.minor}"
    except Exception:  # noqa: BLE001, S110
        pass
    return env


def _clean(value):
    """JSON has no NaN or infinity: store them as strings so the file stays standard JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


class ResultFile:
    """The document of one run, saved atomically after every change the caller commits."""

    def __init__(self, path, document: dict):
        self.path = Path(path)
        self.document = document

    @classmethod
    def start(cls, out_dir, suite: str, device: str, quick: bool, goals=(), extra: dict | None = None):
        date = now_iso()
        document = {
            "schema": SCHEMA_VERSION,
            "suite": suite,
            "quick": bool(quick),
            "complete": False,
            "device": device,
            "date": date,
            "versions": collect_versions(),
            "environment": collect_environment(),
            "copy_gbps": None,
            "peers": {},
            "goals": [{"name": g.name, "min_fraction": g.min_fraction} for g in goals],
            "rows": [],
        }
        document.update(extra or {})
        return cls(result_path(out_dir, suite, device, date, quick), document)

    @property
    def rows(self) -> list:
        return self.document["rows"]

    def add_rows(self, rows) -> None:
        self.rows.extend(rows)

    def save(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with open(tmp, "w") as f:
            json.dump(_clean(self.document), f, indent=1)
            f.write("\n")
        os.replace(tmp, self.path)
        write_csv(self.rows, self.path.with_suffix(".csv"))
        return self.path


def write_csv(rows, path) -> Path:
    """The rows as CSV beside the JSON, for a spreadsheet: one line per implementation and shape.
    Shapes are written as ``AxB``; the columns are the case-row keys present, then any others seen."""
    path = Path(path)
    keys = [k for k in CASE_ROW_KEYS if any(k in row for row in rows)]
    for row in rows:
        keys += [k for k in row if k not in keys]
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            flat = {k: ("x".join(map(str, v)) if isinstance(v, (list, tuple)) else v) for k, v in row.items()}
            writer.writerow(_clean(flat))
    os.replace(tmp, path)
    return path


def read_json(path):
    """The JSON of a result file, gzip-compressed (a name ending ``.gz``, as the recorded runs under
    benchmarks/results are kept) or plain. A file that cannot be opened raises OSError; one whose
    bytes are no whole gzip stream or no JSON raises ValueError naming it."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:  # not gzip, cut short, or damaged
        raise ValueError(f"{path}: not a whole gzip stream ({exc or type(exc).__name__})") from None
    except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
        raise ValueError(f"{path}: not JSON ({exc})") from None


def load(path) -> dict:
    document = read_json(path)
    problems = validate(document)
    if problems:
        raise ValueError(f"{path}: not a fastsoftmax result file: " + "; ".join(problems[:5]))
    return document


def load_resumable(path) -> dict:
    """The document of an earlier main-suite run for ``--resume``, or ValueError saying why it is
    not one; read before the new run starts, so that a wrong path costs no GPU time."""
    try:
        document = read_json(path)
    except OSError as exc:
        raise ValueError(f"--resume {path}: cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:  # not JSON, or not a whole gzip stream (read_json names which)
        raise ValueError(f"--resume {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("rows"), list):
        raise ValueError(f"--resume {path}: not a fastsoftmax result file (no list of rows)")
    if document.get("suite", "main") != "main":
        raise ValueError(f"--resume {path}: a result of the {document['suite']!r} suite, not of the main suite")
    return document


def validate(document) -> list[str]:
    """Every way ``document`` departs from the schema above (empty when it conforms)."""
    problems = []
    if not isinstance(document, dict):
        return ["top level is not an object"]
    for key in TOP_KEYS:
        if key not in document:
            problems.append(f"missing key {key!r}")
    if document.get("schema") != SCHEMA_VERSION:
        problems.append(f"schema {document.get('schema')!r} != {SCHEMA_VERSION}")
    for i, row in enumerate(document.get("rows", [])):
        keys = HOST_ROW_KEYS if row.get("regime") == "host" else CASE_ROW_KEYS
        missing = [k for k in keys if k not in row]
        if missing:
            problems.append(f"row {i} lacks {missing}")
        if row.get("status") not in STATUSES:
            problems.append(f"row {i} has status {row.get('status')!r}")
    return problems
