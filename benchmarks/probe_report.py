"""What a probe says: each line printed as it comes and kept, then written to ``--out`` at the end."""

from __future__ import annotations

import pathlib


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, line: str) -> None:
        self.lines.append(line)
        print(line, flush=True)

    def gpu_header(self) -> float:
        """Says the GPU, its copy bandwidth and torch's version; returns the bandwidth, bytes a second
        (what a probe's fractions of copy divide by)."""
        import torch

        from fastsoftmax.benchmark.timing import copy_bandwidth_gbps

        copy = copy_bandwidth_gbps() * 1e9
        self.say(f"{torch.cuda.get_device_name()}, copy bandwidth {copy / 1e9:.0f} GB/s; torch {torch.__version__}")
        return copy

    def write(self, path: str | None) -> None:
        """The lines into the file ``path`` (nothing where it is None)."""
        if path:
            pathlib.Path(path).write_text("\n".join(self.lines) + "\n")
