"""Module wrappers: drop-in replacements for torch.nn.Softmax and torch.nn.LogSoftmax."""

from __future__ import annotations

import warnings

import torch

from . import functional


def _implicit_dim(name: str, rank: int) -> int:
    """torch.nn.Softmax's dim when none was given (deprecated in torch, kept for drop-in use): 0 for
    tensors of 0, 1 or 3 dims, else 1, with torch's warning."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        stacklevel=4,
    )
    return 0 if rank in (0, 1, 3) else 1


class Softmax(torch.nn.Module):
    """``torch.nn.Softmax`` computed by fastsoftmax; ``dim=None`` picks the dim as torch does."""

    _name = "softmax"

    def __init__(self, dim: int | None = None, backend: str = "auto"):
        super().__init__()
        self.dim = dim
        self.backend = backend

    def _dim(self, x: torch.Tensor) -> int:
        return self.dim if self.dim is not None else _implicit_dim(self._name, x.dim())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional.softmax(x, self._dim(x), backend=self.backend)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, backend={self.backend!r}"


class LogSoftmax(Softmax):
    """``torch.nn.LogSoftmax`` computed by fastsoftmax."""

    _name = "log_softmax"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional.log_softmax(x, self._dim(x), backend=self.backend)
