"""The shape set of BENCHMARK.md, its ``--quick`` subset, and the goals each shape is held to.

Pure Python (no torch import) so that the shape set and the goal rules can be tested anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- the shape set, as BENCHMARK.md lists it -------------------------------------------------
BULK_NUMEL = 1 << 27
BULK_COLS = (64, 128, 256, 512, 1000, 1024, 2048, 3000, 4096, 8192, 16384, 32768, 50257, 65536,
             128256, 131072, 262144)
HUGE_ROW_COLS = (1 << 24, 1 << 26, (1 << 24) + 7)
DECODE_SHAPES = ((1, 128256), (8, 128256), (32, 151936), (128, 128256))
# (shape, dim): softmax over a dim that is not the innermost one in memory
NON_LAST_DIM = (
    ((8192, 16384), 0),
    ((65536, 2048), 0),
    ((1048576, 128), 0),
    ((32, 4096, 1024), 1),
    ((128, 1024, 1024), 1),
    ((4096, 64, 512), 1),
)
BACKWARD_NUMEL = 1 << 27
BACKWARD_COLS = (1024, 4096, 16384, 65536, 131072)
HOST_SHAPE = (4, 1024)
HOST_DTYPE = "bfloat16"
HOST_CALLS = 2000

# --- the --quick subset: one of each regime, small enough for < 1 minute on an H100 -----------
QUICK_BULK_NUMEL = 1 << 25
QUICK_BULK_COLS = (1024, 8192, 131072)
QUICK_HUGE_ROW_COLS = (1 << 24,)
QUICK_DECODE_SHAPES = ((1, 128256),)
QUICK_NON_LAST_DIM = (((65536, 2048), 0), ((32, 4096, 1024), 1))
QUICK_BACKWARD_NUMEL = 1 << 25
QUICK_BACKWARD_COLS = (4096, 65536)

# Command-line spelling -> torch attribute name (what the JSON stores).
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
                 "bfloat16": "bfloat16", "float16": "float16", "float32": "float32",
                 "half": "float16", "float": "float32"}
SHORT_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}
ALL_DTYPES = ("bfloat16", "float16", "float32")

# Regimes, in the order they are run and reported.
REGIMES = ("bulk", "huge", "decode", "non_last_dim", "backward")
REGIME_TITLES = {
    "bulk": "bulk rows",
    "huge": "huge single rows",
    "decode": "decode",
    "non_last_dim": "non-last dim",
    "backward": "backward",
    "host": "host overhead",
    "table": "dispatch table",
}


@dataclass(frozen=True)
class Goal:
    name: str
    min_fraction: float  # fraction of the copy bandwidth fastsoftmax must reach


GOAL_SHORT_ROWS = Goal("forward, cols <= 32768", 0.90)
GOAL_LONG_ROWS = Goal("forward, cols > 32768", 0.80)
GOAL_HUGE_ROW = Goal("single row >= 2^24", 0.60)
GOAL_NON_LAST_DIM = Goal("non-last dim", 0.80)
GOAL_BACKWARD = Goal("backward", 0.85)
GOALS = (GOAL_SHORT_ROWS, GOAL_LONG_ROWS, GOAL_HUGE_ROW, GOAL_NON_LAST_DIM, GOAL_BACKWARD)


@dataclass(frozen=True)
class Case:
    """One measured problem: a tensor shape, the dim reduced, a dtype and a direction."""

    regime: str
    shape: tuple[int, ...]
    dim: int
    dtype: str  # torch attribute name: "bfloat16", "float16" or "float32"
    direction: str = "forward"  # or "backward"

    @property
    def numel(self) -> int:
        total = 1
        for size in self.shape:
            total *= size
        return total

    @property
    def n(self) -> int:
        """Length of the reduced dim."""
        return self.shape[self.dim]

    @property
    def tensors_moved(self) -> int:
        # forward reads x and writes y; backward reads y and dy and writes dx
        return 3 if self.direction == "backward" else 2

    @property
    def bytes_moved(self) -> int:
        """The least traffic any implementation needs: the floor BENCHMARK.md measures against."""
        return self.tensors_moved * self.numel * ITEMSIZE[self.dtype]

    @property
    def is_last_dim(self) -> bool:
        return self.dim in (-1, len(self.shape) - 1)

    @property
    def label(self) -> str:
        dims = "x".join(str(s) for s in self.shape)
        where = "" if self.is_last_dim else f" dim {self.dim}"
        return f"{REGIME_TITLES[self.regime]} {SHORT_DTYPE[self.dtype]} {dims}{where}"

    @property
    def key(self) -> str:
        """Identifies the case across rows of one result file (and across runs)."""
        dims = "x".join(str(s) for s in self.shape)
        return f"{self.regime}/{self.direction}/{self.dtype}/{dims}/dim{self.dim}"

    def to_json(self) -> dict:
        return {"regime": self.regime, "shape": list(self.shape), "dim": self.dim,
                "dtype": self.dtype, "direction": self.direction, "n": self.n,
                "numel": self.numel, "bytes": self.bytes_moved}

    @classmethod
    def from_json(cls, data: dict) -> "Case":
        return cls(data["regime"], tuple(data["shape"]), data["dim"], data["dtype"],
                   data.get("direction", "forward"))


def goal_for(case: Case) -> Goal | None:
    """The fraction of copy bandwidth this case must reach, or None for latency-bound decode."""
    if case.regime == "bulk":
        return GOAL_SHORT_ROWS if case.n <= 32768 else GOAL_LONG_ROWS
    if case.regime == "huge":
        return GOAL_HUGE_ROW
    if case.regime == "non_last_dim":
        return GOAL_NON_LAST_DIM
    if case.regime == "backward":
        return GOAL_BACKWARD
    return None


def summary_group(case: Case) -> str:
    """Regime as the summary reports it: bulk is split where its goal changes."""
    if case.regime == "bulk":
        return "bulk, cols <= 32768" if case.n <= 32768 else "bulk, cols > 32768"
    return REGIME_TITLES[case.regime]


SUMMARY_GROUPS = ("bulk, cols <= 32768", "bulk, cols > 32768", "huge single rows", "decode",
                  "non-last dim", "backward")
GROUP_GOALS = {
    "bulk, cols <= 32768": GOAL_SHORT_ROWS,
    "bulk, cols > 32768": GOAL_LONG_ROWS,
    "huge single rows": GOAL_HUGE_ROW,
    "non-last dim": GOAL_NON_LAST_DIM,
    "backward": GOAL_BACKWARD,
}


def parse_dtypes(text: str | None) -> tuple[str, ...]:
    """``"bf16,fp32"`` -> ``("bfloat16", "float32")``, in the canonical order, no duplicates."""
    if not text:
        return ALL_DTYPES
    wanted = set()
    for word in text.split(","):
        word = word.strip().lower()
        if not word:
            continue
        if word not in DTYPE_ALIASES:
            raise ValueError(f"unknown dtype {word!r}: use bf16, fp16 or fp32")
        wanted.add(DTYPE_ALIASES[word])
    return tuple(d for d in ALL_DTYPES if d in wanted)


REGIME_ALIASES = {"bulk": "bulk", "huge": "huge", "decode": "decode", "non_last_dim": "non_last_dim",
                  "non-last-dim": "non_last_dim", "nonlast": "non_last_dim", "backward": "backward",
                  "host": "host"}


def parse_regimes(text: str | None) -> tuple[str, ...]:
    """``"bulk,host"`` -> ``("bulk", "host")``; every regime (and host overhead) when empty."""
    everything = REGIMES + ("host",)
    if not text:
        return everything
    wanted = set()
    for word in text.split(","):
        word = word.strip().lower()
        if not word:
            continue
        if word not in REGIME_ALIASES:
            raise ValueError(f"unknown regime {word!r}: use {', '.join(everything)}")
        wanted.add(REGIME_ALIASES[word])
    return tuple(r for r in everything if r in wanted)


def _bulk(numel: int, cols_list, dtypes, regime="bulk", direction="forward") -> list[Case]:
    return [Case(regime, (numel // cols, cols), -1, dtype, direction)
            for dtype in dtypes for cols in cols_list]


def full_cases(dtypes=ALL_DTYPES) -> list[Case]:
    """Every shape of BENCHMARK.md, every requested dtype."""
    cases = _bulk(BULK_NUMEL, BULK_COLS, dtypes)
    cases += [Case("huge", (1, cols), -1, d) for d in dtypes for cols in HUGE_ROW_COLS]
    cases += [Case("decode", shape, -1, d) for d in dtypes for shape in DECODE_SHAPES]
    cases += [Case("non_last_dim", shape, dim, d) for d in dtypes for shape, dim in NON_LAST_DIM]
    cases += _bulk(BACKWARD_NUMEL, BACKWARD_COLS, dtypes, "backward", "backward")
    return cases


def quick_cases(dtypes=ALL_DTYPES) -> list[Case]:
    """A few bulk cols per dtype at a smaller total; one shape of each other regime, in the
    first requested dtype (bf16 when asked for: the dtype models run in)."""
    lead = dtypes[0] if dtypes else "bfloat16"
    cases = _bulk(QUICK_BULK_NUMEL, QUICK_BULK_COLS, dtypes)
    cases += [Case("huge", (1, cols), -1, lead) for cols in QUICK_HUGE_ROW_COLS]
    cases += [Case("decode", shape, -1, lead) for shape in QUICK_DECODE_SHAPES]
    cases += [Case("non_last_dim", shape, dim, lead) for shape, dim in QUICK_NON_LAST_DIM]
    cases += _bulk(QUICK_BACKWARD_NUMEL, QUICK_BACKWARD_COLS, (lead,), "backward", "backward")
    return cases


def cases_for(quick: bool, dtypes=ALL_DTYPES) -> list[Case]:
    return quick_cases(dtypes) if quick else full_cases(dtypes)
