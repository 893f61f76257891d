"""The shape set of benchmarks/README.md, its ``--quick`` subset, the seeds' figure shapes, user
shapes given with ``--shapes``, and the goals each shape is held to.

Pure Python (no torch import) so that the shape set and the goal rules can be tested anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- the shape set, as benchmarks/README.md lists it -------------------------------------------------
BULK_NUMEL = 1 << 27
# narrow rows (MoE routers over 8-160 experts, widths off the 16-byte grid among them) up to rows of
# 2^20, past what one thread-block cluster holds in registers
BULK_COLS = (
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
BACKWARD_COLS = (16, 100, 1024, 4096, 16384, 50257, 65536, 131072, 262144, 1048576)
HOST_SHAPE = (4, 1024)
HOST_DTYPE = "bfloat16"
HOST_CALLS = 2000
#: rounds of host timing, each implementation once a round (runner.host_overhead)
HOST_ROUNDS = 5

# --- the --quick subset: one of each regime, small enough for < 1 minute on an H100 -----------
QUICK_BULK_NUMEL = 1 << 25
QUICK_BULK_COLS = (1024, 8192, 131072)
QUICK_HUGE_ROW_COLS = (1 << 24,)
QUICK_DECODE_SHAPES = ((1, 128256),)
QUICK_NON_LAST_DIM = (((65536, 2048), 0), ((32, 4096, 1024), 1))
QUICK_BACKWARD_NUMEL = 1 << 25
QUICK_BACKWARD_COLS = (4096, 65536)

# Command-line spelling -> torch attribute name (what the JSON stores).
DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "float16": "float16",
    "float32": "float32",
    "half": "float16",
    "float": "float32",
}
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
    "custom": "your shapes",
    "sweep": "column sweep",
    "vector_matrix": "vector and matrix",
    "attention": "attention rows",
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
        """The least traffic any implementation needs: the floor every figure is measured against."""
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
        return {
            "regime": self.regime,
            "shape": list(self.shape),
            "dim": self.dim,
            "dtype": self.dtype,
            "direction": self.direction,
            "n": self.n,
            "numel": self.numel,
            "bytes": self.bytes_moved,
        }

    @classmethod
    def from_json(cls, data: dict) -> Case:
        return cls(data["regime"], tuple(data["shape"]), data["dim"], data["dtype"], data.get("direction", "forward"))


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
    """Regime as the summary reports it: bulk is split where its goal changes; the seeds' figures
    are split by direction, so forward and backward are never averaged together."""
    if case.regime in ("attention", "custom") and case.direction == "backward":
        return f"{REGIME_TITLES[case.regime]}, backward"
    if case.regime == "bulk":
        return "bulk, cols <= 32768" if case.n <= 32768 else "bulk, cols > 32768"
    return REGIME_TITLES[case.regime]


SUMMARY_GROUPS = (
    "bulk, cols <= 32768",
    "bulk, cols > 32768",
    "huge single rows",
    "decode",
    "non-last dim",
    "backward",
    "your shapes",
)
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


REGIME_ALIASES = {
    "bulk": "bulk",
    "huge": "huge",
    "decode": "decode",
    "non_last_dim": "non_last_dim",
    "non-last-dim": "non_last_dim",
    "nonlast": "non_last_dim",
    "backward": "backward",
    "host": "host",
}


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
    return [Case(regime, (numel // cols, cols), -1, dtype, direction) for dtype in dtypes for cols in cols_list]


def full_cases(dtypes=ALL_DTYPES) -> list[Case]:
    """Every shape of the main set (benchmarks/README.md), every requested dtype."""
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


# --- shapes given on the command line ---------------------------------------------------------


def parse_shapes(text: str | None) -> tuple[tuple[tuple[int, ...], int], ...]:
    """``"4096x50257,8192x16384@0"`` -> ``(((4096, 50257), -1), ((8192, 16384), 0))``: each shape
    is sizes joined by ``x``, optionally ``@dim`` (default the last dim)."""
    if not text:
        return ()
    parsed = []
    for word in text.split(","):
        word = word.strip().lower()
        if not word:
            continue
        sizes_text, _, dim_text = word.partition("@")
        try:
            sizes = tuple(int(size) for size in sizes_text.split("x"))
            dim = int(dim_text) if dim_text else -1
        except ValueError:
            raise ValueError(
                f"bad shape {word!r}: write sizes joined by x, optionally @dim, e.g. 4096x50257@-1"
            ) from None
        if not sizes or any(size < 1 for size in sizes):
            raise ValueError(f"bad shape {word!r}: every size must be a positive integer")
        if not -len(sizes) <= dim < len(sizes):
            raise ValueError(f"bad shape {word!r}: dim {dim} is out of range for {len(sizes)} dims")
        parsed.append((sizes, dim))
    return tuple(parsed)


DIRECTIONS = ("forward", "backward")


def parse_directions(text: str | None) -> tuple[str, ...]:
    if not text:
        return ("forward",)
    wanted = {word.strip().lower() for word in text.split(",") if word.strip()}
    unknown = wanted - set(DIRECTIONS)
    if unknown:
        raise ValueError(f"unknown direction {min(unknown)!r}: use forward, backward")
    return tuple(d for d in DIRECTIONS if d in wanted)


def custom_cases(shape_dims, dtypes=ALL_DTYPES, directions=("forward",)) -> list[Case]:
    return [
        Case("custom", shape, dim, dtype, direction)
        for direction in directions
        for dtype in dtypes
        for shape, dim in shape_dims
    ]


# --- the seeds' figures -------------------------------------------------------------------------

# Seed 002: the Triton tutorial's kernel pads each row to the next power of two, so its bandwidth
# dips just past every power of two. A dense sweep (every 128 columns) shows the saw-tooth; past
# 32768 a log-spaced sweep reaches rows of 2^20. Each point moves ~128 MiB so that it is timed in
# the bandwidth regime without costing more than a few tens of milliseconds.
SWEEP_DTYPE = "float32"
SWEEP_STEP = 128
SWEEP_DENSE_MAX = 32768
SWEEP_LOG_MAX = 1 << 20
SWEEP_LOG_POINTS_PER_OCTAVE = 4
SWEEP_BYTES = 128 << 20
QUICK_SWEEP_STEP = 1024
QUICK_SWEEP_DENSE_MAX = 16384
QUICK_SWEEP_LOG_MAX = 1 << 17
QUICK_SWEEP_BYTES = 16 << 20


def sweep_columns(quick: bool = False) -> list[int]:
    step, dense_max, log_max = (
        (QUICK_SWEEP_STEP, QUICK_SWEEP_DENSE_MAX, QUICK_SWEEP_LOG_MAX)
        if quick
        else (SWEEP_STEP, SWEEP_DENSE_MAX, SWEEP_LOG_MAX)
    )
    columns = list(range(step, dense_max + 1, step))
    octaves = (log_max // dense_max).bit_length() - 1
    steps = octaves * SWEEP_LOG_POINTS_PER_OCTAVE
    for k in range(1, steps + 1):
        # rounded to a multiple of 128 so that every point keeps 16-byte aligned rows
        cols = round(dense_max * 2 ** (k / SWEEP_LOG_POINTS_PER_OCTAVE) / 128) * 128
        if cols > columns[-1]:
            columns.append(cols)
    # just past each power of two is where a kernel that pads rows to the next one loses most
    powers = [1 << k for k in range(dense_max.bit_length() - 1, log_max.bit_length() - 1)]
    return sorted(set(columns) | {p + step for p in powers if p + step <= log_max})


def sweep_cases(quick: bool = False, dtype: str = SWEEP_DTYPE) -> list[Case]:
    moved = QUICK_SWEEP_BYTES if quick else SWEEP_BYTES
    per_row = 2 * ITEMSIZE[dtype]
    return [Case("sweep", (max(1, moved // (per_row * cols)), cols), -1, dtype) for cols in sweep_columns(quick)]


# Seed 003: one vector of 2^24 float32 and a 2^12 x 2^16 float32 matrix reduced along each dim.
VECTOR_LENGTH = 1 << 24
MATRIX_SHAPE = (1 << 12, 1 << 16)
QUICK_VECTOR_LENGTH = 1 << 20
QUICK_MATRIX_SHAPE = (1 << 10, 1 << 12)


def vector_matrix_cases(quick: bool = False, dtype: str = "float32") -> list[Case]:
    length = QUICK_VECTOR_LENGTH if quick else VECTOR_LENGTH
    matrix = QUICK_MATRIX_SHAPE if quick else MATRIX_SHAPE
    return [
        Case("vector_matrix", (length,), 0, dtype),
        Case("vector_matrix", matrix, 0, dtype),
        Case("vector_matrix", matrix, 1, dtype),
    ]


# Seed 004: BERT-base attention scores, 32 x 12 x 128 rows, half precision, forward and backward.
ATTENTION_ROWS = 32 * 12 * 128
ATTENTION_COLS = tuple(1 << k for k in range(5, 16))  # 32 .. 32768
QUICK_ATTENTION_ROWS = 4096
QUICK_ATTENTION_COLS = (32, 256, 1024, 4096)


def attention_cases(quick: bool = False, dtype: str = "float16") -> list[Case]:
    rows = QUICK_ATTENTION_ROWS if quick else ATTENTION_ROWS
    cols_list = QUICK_ATTENTION_COLS if quick else ATTENTION_COLS
    return [Case("attention", (rows, cols), -1, dtype, direction) for direction in DIRECTIONS for cols in cols_list]
