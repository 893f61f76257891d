"""The no-GPU path: a small correctness demo on the CPU, with the Triton kernels run by Triton's
interpreter. It shows that the kernels compute softmax correctly; it measures no speed.

The interpreter is chosen when ``triton.jit`` decorates a kernel, i.e. when fastsoftmax's Triton
backend is imported, so ``TRITON_INTERPRET=1`` must be in the environment before that.
``ensure_interpreter`` says whether this process still qualifies; the command line re-executes
itself with the variable set when it does not.
"""

from __future__ import annotations

import os
import sys
import warnings

import torch

INTERPRET_ENV = "TRITON_INTERPRET"
NO_GPU_MESSAGE = (
    "No CUDA device is present: fastsoftmax's benchmark measures NVIDIA GPUs and cannot run here.\n"
    "Running a small correctness demo instead: fastsoftmax's Triton kernels under the Triton\n"
    "interpreter (TRITON_INTERPRET=1) on the CPU, against a float64 reference and torch.softmax."
)

# (shape, dim, direction): small, so that the interpreter finishes in seconds
DEMO_CASES = (
    ((4, 64), -1, "forward"),
    ((3, 1000), -1, "forward"),
    ((2, 37, 5), 1, "forward"),
    ((4, 128), -1, "backward"),
)


def ensure_interpreter() -> bool:
    """Set TRITON_INTERPRET=1 for this process if triton has not been imported yet. Returns
    whether Triton kernels created from now on will be interpreted."""
    if os.environ.get(INTERPRET_ENV) == "1":
        return True
    if "triton" in sys.modules:
        return False
    os.environ[INTERPRET_ENV] = "1"
    return True


def reexec_command() -> tuple[list[str], dict]:
    env = dict(os.environ)
    env[INTERPRET_ENV] = "1"
    return [sys.executable, "-m", "fastsoftmax", "bench", "--demo"], env


def _demo_backends() -> list[str]:
    """Triton first (the point of the demo), then whatever else runs on the CPU."""
    try:
        import fastsoftmax

        available = list(fastsoftmax.available_backends(torch.device("cpu")))
    except Exception:  # noqa: BLE001
        available = []
    backends = ["triton"] + [b for b in available if b not in ("triton", "torch", "cuda")]
    return backends + ["auto"]


def _max_err(out, expected) -> float:
    return float((out.to(torch.float64) - expected).abs().max().item())


def run_demo(cases=DEMO_CASES, dtypes=(torch.float32,), write=print) -> int:
    write(f"{'shape':>14} {'dim':>4} {'dtype':>8} {'direction':>9}  {'implementation':20} {'max |err| vs float64':>20}")
    failures = 0
    for shape, dim, direction in cases:
        for dtype in dtypes:
            torch.manual_seed(0)
            x = torch.randn(shape, dtype=dtype) * 3
            label = f"{'x'.join(map(str, shape)):>14} {dim:>4} {str(dtype).replace('torch.', ''):>8} {direction:>9}"
            if direction == "forward":
                expected = torch.softmax(x.to(torch.float64), dim)
                candidates = {"torch.softmax": lambda x=x, dim=dim: torch.softmax(x, dim)}
            else:
                y = torch.softmax(x.float(), dim).to(dtype)
                dy = torch.randn(shape, dtype=dtype)
                y64, dy64 = y.to(torch.float64), dy.to(torch.float64)
                expected = y64 * (dy64 - (y64 * dy64).sum(dim, keepdim=True))
                candidates = {
                    "torch": lambda dy=dy, y=y, dim=dim, dtype=dtype: torch._softmax_backward_data(dy, y, dim, dtype)
                }
            for backend in _demo_backends():
                name = "fastsoftmax" if backend == "auto" else f"fastsoftmax[{backend}]"
                candidates[name] = _fastsoftmax_call(
                    backend,
                    direction,
                    x,
                    dim,
                    dy if direction == "backward" else None,
                    y if direction == "backward" else None,
                )
            for name, call in candidates.items():
                try:
                    with warnings.catch_warnings():
                        # the interpreter evaluates masked-off lanes too, and numpy warns about them
                        warnings.simplefilter("ignore", RuntimeWarning)
                        output = call()
                    err = _max_err(output, expected)
                    text = f"{err:20.2e}"
                except Exception as exc:  # noqa: BLE001
                    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    text = f"  failed: {type(exc).__name__}: {first_line}"[:160]
                    failures += name.startswith("fastsoftmax")
                write(f"{label}  {name:20} {text}")
    if failures:
        write(f"{failures} fastsoftmax call(s) failed on the CPU (see above).")
    return 0


def _fastsoftmax_call(backend, direction, x, dim, dy, y):
    def call():
        import fastsoftmax

        if direction == "backward":
            return fastsoftmax.softmax_backward(dy, y, dim, backend=backend)
        return fastsoftmax.softmax(x, dim, backend=backend)

    return call
