"""Measure one case at a time: make inputs, check every implementation against float64, time the
ones that pass. Nothing an implementation does can stop the run: every exception becomes a row.

The device, the timers and the free-memory probe are parameters so that the logic runs on the CPU
in tests with fake timers.
"""

from __future__ import annotations

import gc
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch

from fastsoftmax.benchmark import checks
from fastsoftmax.benchmark.peers import Impl, Refused
from fastsoftmax.benchmark.shapes import HOST_CALLS, HOST_DTYPE, HOST_ROUNDS, HOST_SHAPE, ITEMSIZE, Case

# Working memory a case needs besides its own tensors: the float64 reference and float32
# tolerance it keeps, the float64 temporaries that build them, and room for one output in flight.
_REFERENCE_BYTES_PER_ELEMENT = 48
_SLACK_BYTES = 512 << 20
# Past this size a float64 reference of the whole tensor would need more memory than the tensors
# themselves (seed 004's 49152 x 32768 rows: 75 GiB), so such row-major cases are checked on a
# sample of rows, evenly spaced with the first and last included. Every main-suite shape is smaller.
FULL_CHECK_ELEMENTS = 1 << 28
CHECKED_ROWS = 1024
# A call slower than this (cuDNN on one row of 2^24 elements takes tens of milliseconds, on 49152
# rows of 32768 possibly seconds) is timed on that one call: the median of a full timing run would
# cost minutes and say nothing more about an implementation that far off.
SLOW_CALL_MS = 100.0


def peer_output_wrong(result: checks.CheckResult) -> bool:
    """A peer whose output is not finite where the reference is gives a wrong answer, not a less
    accurate one: it is reported and not timed, so that no ratio is taken against it. (Quack's 16-bit
    forward of 32 x 151936 returned NaN everywhere, its cluster of 16 CTAs leaving the last one no
    columns, and had been timed as the decode baseline.) A finite output past fastsoftmax's error
    bars is still timed: the backward of torch and Liger in bf16 lands there, by rounding alone."""
    return not math.isfinite(result.max_abs_err)


class ContextLost(RuntimeError):
    """The CUDA context is unusable (a kernel faulted): nothing after this can be measured."""


def checked_rows(case: Case) -> list[int] | None:
    """The rows the float64 check covers, or None for all of them."""
    if case.numel <= FULL_CHECK_ELEMENTS or len(case.shape) != 2 or not case.is_last_dim:
        return None
    rows = case.shape[0]
    if rows <= CHECKED_ROWS:
        return None
    step = (rows - 1) / (CHECKED_ROWS - 1)
    return sorted({round(i * step) for i in range(CHECKED_ROWS)})


def estimate_bytes(case: Case) -> int:
    inputs = 2 if case.direction == "backward" else 1
    sampled = checked_rows(case)
    checked = case.numel if sampled is None else len(sampled) * case.n
    # the backward's inputs are built from a float32 softmax of a float32 copy
    staging = 8 * case.numel if case.direction == "backward" and sampled is not None else 0
    return (
        case.numel * ITEMSIZE[case.dtype] * (inputs + 2)
        + checked * _REFERENCE_BYTES_PER_ELEMENT
        + staging
        + _SLACK_BYTES
    )


def describe(exc: BaseException, limit: int = 400) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:limit]


def bound_call(fn, inputs):
    """``fn`` applied to ``inputs``, as the argument-free callable the timers take."""
    return lambda: fn(*inputs)


def base_row(case: Case, impl: Impl) -> dict:
    return {
        "case": case.key,
        **case.to_json(),
        "impl": impl.name,
        "kind": impl.kind,
        "status": "ok",
        "max_abs_err": None,
        "err_ratio": None,
        "ms": None,
        "gpu_us": None,
        "gbps": None,
        "frac_copy": None,
        "message": "",
    }


def make_inputs(case: Case, device) -> tuple:
    """Fresh ``randn * 3`` (never zeros) for the forward; for the backward, a softmax output y of
    such an input and an upstream gradient dy ~ randn. Returned in the order ``fn`` takes them."""
    dtype = getattr(torch, case.dtype)
    x = torch.randn(case.shape, device=device, dtype=dtype) * 3
    if case.direction == "forward":
        return (x,)
    y = torch.softmax(x.float(), case.dim).to(dtype)
    del x
    dy = torch.randn(case.shape, device=device, dtype=dtype)
    return (dy, y)


def make_reference(case: Case, inputs, rows=None) -> checks.Reference:
    """The float64 reference of ``inputs``, or of the given rows of them only."""
    if rows is not None:
        inputs = tuple(t[rows] for t in inputs)
    if case.direction == "backward":
        dy, y = inputs
        return checks.backward_reference(dy, y, case.dim, case.dtype)
    return checks.forward_reference(inputs[0], case.dim, case.dtype)


@dataclass
class Runner:
    impls: list[Impl]
    copy_gbps: float
    device: str = "cuda"
    timer: Callable[[Callable], float] | None = None  # fn -> median milliseconds
    host_timer: Callable[[Callable], float] | None = None  # fn -> microseconds per call
    single_timer: Callable[[Callable], float] | None = None  # fn -> milliseconds of one call
    free_bytes: Callable[[], int | None] | None = None
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    host_calls: int = HOST_CALLS
    seed: int = 0

    def __post_init__(self):
        self._cases_run = 0
        if self.timer is None:
            from fastsoftmax.benchmark.timing import median_ms

            self.timer = lambda fn: median_ms(fn, warmup_ms=self.warmup_ms, rep_ms=self.rep_ms)
        if self.host_timer is None:
            from fastsoftmax.benchmark.timing import host_us_per_call

            self.host_timer = lambda fn: host_us_per_call(fn, calls=self.host_calls)
        if self.single_timer is None and self._on_cuda:
            from fastsoftmax.benchmark.timing import single_call_ms

            self.single_timer = single_call_ms
        if self.free_bytes is None:
            self.free_bytes = self._cuda_free_bytes if self._on_cuda else (lambda: None)

    @property
    def _on_cuda(self) -> bool:
        return torch.device(self.device).type == "cuda"

    def _sync(self) -> None:
        if self._on_cuda:
            torch.cuda.synchronize()

    def _cuda_free_bytes(self) -> int:
        free, _total = torch.cuda.mem_get_info()
        # memory the caching allocator holds but does not use is free for our purposes
        stats = torch.cuda.memory_stats()
        cached = stats.get("reserved_bytes.all.current", 0) - stats.get("allocated_bytes.all.current", 0)
        return free + max(0, cached)

    def _release(self) -> None:
        gc.collect()
        if self._on_cuda:
            torch.cuda.empty_cache()

    def _assert_context_alive(self) -> None:
        """After an error, make sure the device still works; a faulted kernel poisons the CUDA
        context and every later measurement would be an error too."""
        if not self._on_cuda:
            return
        try:
            torch.ones(1, device=self.device).add_(1).cpu()
            torch.cuda.synchronize()
        except Exception as exc:
            raise ContextLost(describe(exc)) from exc

    # --- one case -----------------------------------------------------------------------------

    def run_case(self, case: Case) -> list[dict]:
        torch.manual_seed(self.seed + self._cases_run)
        self._cases_run += 1
        need = estimate_bytes(case)
        free = self.free_bytes()
        if free is not None and need > free:
            return self.all_rows(case, "skipped", f"needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free")
        inputs = reference = rows = None
        try:
            inputs = make_inputs(case, self.device)
            sampled = checked_rows(case)
            rows = None if sampled is None else torch.tensor(sampled, device=inputs[0].device)
            reference = make_reference(case, inputs, rows)
            self._sync()
        except Exception as exc:  # noqa: BLE001
            inputs = reference = None
            self._release()
            self._assert_context_alive()
            status = "skipped" if isinstance(exc, torch.cuda.OutOfMemoryError) else "error"
            return self.all_rows(case, status, "preparing inputs: " + describe(exc))
        try:
            return [self._run_impl(case, impl, inputs, reference, rows) for impl in self.impls]
        finally:
            del inputs, reference, rows
            self._release()

    def all_rows(self, case: Case, status: str, message: str) -> list[dict]:
        rows = []
        for impl in self.impls:
            row = base_row(case, impl)
            row.update(status=status, message=message)
            rows.append(row)
        return rows

    def _failure(self, row: dict, impl: Impl, exc: BaseException, stage: str) -> dict:
        # fastsoftmax must handle every shape: anything it raises is an error
        if isinstance(exc, Refused) or impl.declines_by_raising and not isinstance(exc, torch.cuda.OutOfMemoryError):
            row["status"] = "refused"
        else:
            row["status"] = "error"
        row["message"] = f"{stage}: {describe(exc)}" if stage else describe(exc)
        self._release()
        self._assert_context_alive()
        return row

    def _run_impl(self, case: Case, impl: Impl, inputs, reference, rows=None) -> dict:
        row = base_row(case, impl)
        try:
            fn = impl.make(case)
        except Exception as exc:  # noqa: BLE001
            return self._failure(row, impl, exc, "")
        try:
            output = fn(*inputs)
            self._sync()
        except Exception as exc:  # noqa: BLE001
            return self._failure(row, impl, exc, "first call")
        try:
            result = checks.check(
                output
                if rows is None or not isinstance(output, torch.Tensor) or output.shape != inputs[0].shape
                else output[rows],
                reference,
            )
        except Exception as exc:  # noqa: BLE001
            return self._failure(row, impl, exc, "check")
        finally:
            del output
        row["max_abs_err"] = result.max_abs_err
        row["err_ratio"] = result.worst_ratio
        if not result.passed:
            if impl.is_fastsoftmax or peer_output_wrong(result):
                # reported, never timed as a success
                row["status"] = "wrong"
                row["message"] = result.message
                return row
            # a peer less accurate than fastsoftmax is held to is still the baseline users run:
            # time it, and say how far off it is
            row["message"] = f"outside fastsoftmax's error bars: {result.message}"
        try:
            ms = float(self.single_timer(bound_call(fn, inputs))) if self.single_timer is not None else 0.0
            if ms > SLOW_CALL_MS:
                note = f"timed on one call ({ms:.0f} ms)"
                row["message"] = f"{row['message']}; {note}" if row["message"] else note
            else:
                ms = float(self.timer(bound_call(fn, inputs)))
            self._sync()
        except Exception as exc:  # noqa: BLE001
            return self._failure(row, impl, exc, "timing")
        row["ms"] = ms
        row["gpu_us"] = ms * 1e3
        row["gbps"] = case.bytes_moved / (ms * 1e-3) / 1e9
        row["frac_copy"] = row["gbps"] / self.copy_gbps if self.copy_gbps else None
        return row

    # --- host overhead ------------------------------------------------------------------------

    def host_overhead(self, shape=HOST_SHAPE, dtype=HOST_DTYPE) -> list[dict]:
        """Wall time per call of back-to-back calls on a tiny tensor: what Python and the launch
        cost a caller, which the GPU timings above hide. Every implementation is timed in each of
        HOST_ROUNDS rounds, in an order rotated round by round, and keeps its median: timed once
        each, one after another, whichever came first or followed a slow one moved by several
        microseconds between runs."""
        case = Case("host", tuple(shape), -1, dtype)
        torch.manual_seed(self.seed)
        inputs = make_inputs(case, self.device)
        reference = make_reference(case, inputs)
        rows, timed = [], []
        for impl in self.impls:
            row = {
                "regime": "host",
                "impl": impl.name,
                "kind": impl.kind,
                "status": "ok",
                "host_us": None,
                "shape": list(shape),
                "dtype": dtype,
                "calls": self.host_calls,
                "rounds": HOST_ROUNDS,
                "message": "",
            }
            try:
                fn = impl.make(case)
                output = fn(*inputs)
                self._sync()
                result = checks.check(output, reference)
                del output
                if not result.passed:
                    row.update(status="wrong", message=result.message)
                else:
                    timed.append((row, impl, bound_call(fn, inputs), []))
            except Exception as exc:  # noqa: BLE001
                self._failure(row, impl, exc, "")
            rows.append(row)
        for round_ in range(HOST_ROUNDS):
            shift = round_ % len(timed) if timed else 0
            for row, impl, call, samples in timed[shift:] + timed[:shift]:
                if row["status"] != "ok":
                    continue
                try:
                    samples.append(float(self.host_timer(call)))
                except Exception as exc:  # noqa: BLE001
                    self._failure(row, impl, exc, "")
        for row, _, _, samples in timed:
            if row["status"] == "ok" and samples:
                row["host_us"] = statistics.median(samples)
        del inputs, reference
        self._release()
        return rows
