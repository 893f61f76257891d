"""Module wrappers: drop-in replacements for torch.nn.Softmax and torch.nn.LogSoftmax."""

from __future__ import annotations

import torch

from . import functional


class Softmax(torch.nn.Module):
    """``torch.nn.Softmax`` computed by fastsoftmax."""

    def __init__(self, dim: int = -1, backend: str = "auto"):
        super().__init__()
        self.dim = dim
        self.backend = backend

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional.softmax(x, self.dim, backend=self.backend)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, backend={self.backend!r}"


class LogSoftmax(Softmax):
    """``torch.nn.LogSoftmax`` computed by fastsoftmax."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional.log_softmax(x, self.dim, backend=self.backend)
