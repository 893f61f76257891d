"""The contract every kernel backend fulfils.

The public API reduces every call to one canonical problem before a backend sees it: a softmax
over axis 1 of a three-dimensional strided view ``(outer, n, inner)``.

* ``inner == 1`` is the row case: ``outer`` rows of ``n`` elements, each row contiguous
  (``stride(1) == 1``), rows ``stride(0)`` elements apart (a sliced tensor keeps its row pitch).
* ``inner > 1`` is the strided case (softmax over a dim that is not the innermost one in memory):
  ``inner`` neighbours along the contiguous axis are reduced side by side, each over ``n``
  elements that lie ``stride(1)`` apart. Outputs have ``stride(2) == 1``; an input may have a
  *step*, ``stride(2) > 1`` (a view such as ``x[..., ::2]``), and is then read where it lies. Such
  calls are tier-chosen with ``aligned=False``; a tier that cannot read a step raises ValueError.

A backend computes on the tensors' own device (which need not be torch's current device), on that
device's current stream, from any thread.

The output views (``y`` forward, ``dx`` backward) have the same shape and meet the same rules, but
their strides may differ from the input's. All tensors of one call share a dtype (float32,
float16 or bfloat16) and a device; ``outer * n * inner > 0`` (empty tensors never reach a backend).

A backend owns a set of named *tiers* (kernel strategies). The dispatcher asks the backend which
tier suits a problem (``choose_tier``) unless a caller forced one through
``fastsoftmax.dispatch.forced``; a forced tier that cannot handle the problem raises ValueError.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class Backend(Protocol):
    name: str
    #: every tier name this backend chooses from, in the order a reader should meet them
    tiers: tuple[str, ...]

    def unavailable_reason(self, device: torch.device) -> str | None:
        """None when the backend can run on ``device``; otherwise a sentence saying why not and
        what to install. Must be cheap after the first call (cache it)."""

    def choose_tier(
        self,
        outer: int,
        n: int,
        inner: int,
        dtype: torch.dtype,
        backward: bool,
        device_index: int | None = None,
        aligned: bool = True,
        window: bool = True,
        stepped: bool = False,
        log: bool = False,
    ) -> str:
        """The tier this backend would run for the problem on CUDA device ``device_index`` (None:
        the current device; -1: no GPU, as under the interpreter); ``aligned``: every tensor of
        the call starts on a 16-byte boundary and has unit stride along inner; ``window``: every
        input's rows start at one 16-byte phase (the inputs' pointers share it, their row strides
        are whole 16-byte pieces) and every tensor has unit stride along inner. ``stepped``: an
        input steps along inner (not ``aligned``); ``window`` then says whether every input steps
        by 2 and the output by 1 with every pointer and row stride on a 16-byte boundary. ``log``:
        the problem is log-softmax's (its backward's reduction reads dy alone)."""

    def supports(
        self,
        tier: str,
        outer: int,
        n: int,
        inner: int,
        dtype: torch.dtype,
        backward: bool,
        device_index: int | None = None,
    ) -> bool:
        """Whether ``tier`` can compute this problem (used to validate forced tiers)."""

    def realigns(self, tier: str, n: int, dtype: torch.dtype, backward: bool) -> bool:
        """Whether ``tier`` computes rows of n (problems of ``inner == 1``) wherever their tensors start: a row
        problem's plan chosen on 16-byte boundaries then serves calls of its geometry off them."""

    def forward(self, x: torch.Tensor, y: torch.Tensor, log: bool, tier: str) -> None:
        """Write softmax (or log-softmax when ``log``) of ``x`` over axis 1 into ``y``."""

    def backward(self, y: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, log: bool, tier: str) -> None:
        """Write the input gradient into ``dx`` given the forward output ``y`` and the output
        gradient ``dy``: ``dx = y * (dy - sum(dy * y))`` for softmax and
        ``dx = dy - exp(y) * sum(dy)`` for log-softmax, sums over axis 1."""

    def prepare(self, tier: str, shape, strides, dtype: torch.dtype, device_index: int, backward: bool):
        """The host path of repeated calls: ``run(x, y, log)`` (forward) or ``run(y, dy, dx, log)``
        (backward) for full tensors whose canonical views have exactly this ``shape`` and these
        ``strides`` (one stride tuple per tensor, in the order of ``run``'s arguments), on device
        ``device_index`` (-1: no GPU), computing what ``forward``/``backward`` with ``tier`` would.
        A canonical view starts at its tensor's first element, so the tensor's data pointer is the
        view's; ``run`` builds no views and decides per call only what may differ between calls of
        one geometry (the pointers' alignment, the log flag). A backend whose kernels write another
        type than they read (the Triton backend) takes the output's as ``out_dtype``."""


#: DRAM bandwidth an SM (GB/s) past which a GPU counts as one of much bandwidth an SM: rules measured
#: on an H100 (3352 GB/s over 132 SMs, 25 an SM) and an H200 (4814, 36) that differ take the H200's
#: past it (the CUDA backend's strided.wide_axis_staged_ctas, strided.STEPPED_STRIDED_PAST_N,
#: instances.cluster_shape's high_bandwidth, tiers.takes_flat_rows; the Triton backend's two-piece
#: forward tiles); the bound lies anywhere between the two. A device that reports no memory clock
#: counts as one of much bandwidth an SM.
HIGH_DRAM_GBPS_PER_SM = 30.0


def dram_gbps(memory_clock_khz: int, bus_bits: int) -> float | None:
    """Peak DRAM bandwidth in GB/s (double data rate over the bus) from the driver's memory clock and
    bus width, or None where the driver reports neither."""
    return 2 * memory_clock_khz * bus_bits / 8 / 1e6 if memory_clock_khz > 0 and bus_bits > 0 else None


def high_dram_bandwidth_per_sm(dram_gbps: float | None, sms: int) -> bool:
    """Whether a GPU has more DRAM bandwidth an SM than HIGH_DRAM_GBPS_PER_SM."""
    return dram_gbps is None or dram_gbps / sms > HIGH_DRAM_GBPS_PER_SM
