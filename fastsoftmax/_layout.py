"""Reduce any (tensor, dim) to the canonical problem the kernels see: softmax over axis 1 of a 3D
view ``(outer, n, inner)`` whose last axis has stride 1, or for inputs a step (see
``backends/base.py``).

The view is taken in *memory order*: the tensor's dims sorted by stride, so a permuted-contiguous
tensor (``x.t()``, a channels-last image, ``x.transpose(0, 1)``) or a broadcast one (``expand``)
needs no copy. Dims that sit
outside the reduced dim in memory fold into ``outer``; those inside fold into ``inner``. An input
that skips elements along its innermost axis (``x[..., ::2]``) folds with a *step*, an inner stride
over 1, which the strided kernels read where it lies; outputs are always allocated with unit inner
stride. Only layouts that cannot be folded that way (overlapping strides, a row read with a step)
are copied to a contiguous tensor first; a broadcast input among them is not copied but
computed over one slice, the result copied out (``functional._replicated_plan``, with
``broadcast_dims``, ``first_slice``, ``read_in_place``, ``copy_broadcast`` and ``fill_from_first``
from here).
"""

from __future__ import annotations

import torch

#: Allocates a kernel's output. One name, looked up at each call, so that tests can poison every
#: output (fill it with NaN before the kernel runs) and see any element a kernel forgot to write;
#: torch's own function itself, not a wrapper, since it is on the path of every repeated call.
new_empty_like = torch.empty_like


def _fold(sizes: list[int], strides: list[int]) -> tuple[int, int] | None:
    """Collapse dims (already in memory order) into one (size, stride), or None if they do not
    tile memory evenly. An empty list folds to (1, 1)."""
    size, stride = 1, 1
    for dim_size, dim_stride in zip(reversed(sizes), reversed(strides)):
        if dim_size == 1:
            continue
        if size == 1:
            size, stride = dim_size, dim_stride
        elif dim_stride == stride * size:
            size *= dim_size
        else:
            return None
    return size, stride


def memory_order(x: torch.Tensor) -> list[int]:
    """Dims of ``x`` from the largest stride to the smallest (ties keep the logical order, so a
    contiguous tensor maps to the identity), broadcast dims (stride 0) first: outermost, they fold
    into ``outer`` with stride 0, so an expanded input is read where it lies instead of copied."""
    return sorted(range(x.dim()), key=lambda d: (x.stride(d) != 0, -x.stride(d)))


def broadcast_dims(dim: int, *tensors: torch.Tensor) -> tuple[int, ...]:
    """The dims other than ``dim`` along which every one of ``tensors`` is broadcast (stride 0,
    size over 1): a softmax over ``dim`` repeats along them."""
    first = tensors[0]
    return tuple(
        d for d in range(first.dim()) if d != dim and first.size(d) > 1 and all(t.stride(d) == 0 for t in tensors)
    )


def first_slice(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """``x`` narrowed to index 0 along each of ``dims`` (a view)."""
    for d in dims:
        x = x.narrow(d, 0, 1)
    return x


#: inputs that skip elements along the innermost axis are read where they lie (a step along inner)
#: rather than copied dense first; a switch for A/B measurements of the two (see benchmarks/)
READ_STEPS_IN_PLACE = True


def canonical_view(x: torch.Tensor, dim: int, order: list[int], allow_step: bool = False) -> torch.Tensor | None:
    """The ``(outer, n, inner)`` view of ``x`` for a softmax over ``dim``, following the dim order
    ``order``; None when that layout cannot be expressed with a unit inner stride, or (``allow_step``,
    for inputs) with a constant one."""
    position = order.index(dim)
    sizes = [x.size(d) for d in order]
    strides = [x.stride(d) for d in order]
    outer = _fold(sizes[:position], strides[:position])
    inner = _fold(sizes[position + 1 :], strides[position + 1 :])
    if outer is None or inner is None:
        return None
    (outer_size, outer_stride), (inner_size, inner_stride) = outer, inner
    n, n_stride = x.size(dim), x.stride(dim)
    if (
        inner_size > 1
        and inner_stride != 1
        and not (allow_step and 1 < inner_stride and inner_size * inner_stride < 2**31)
    ):
        # (a step's column offsets stay 32-bit integers in the kernels)
        return None
    if inner_size == 1 and n > 1 and n_stride != 1:
        # Reduce along a strided axis with nothing contiguous beside it: treat it as the
        # strided case with a single inner element rather than demand a unit row stride.
        return None
    inner_stride = inner_stride if inner_size > 1 else 1
    return x.as_strided((outer_size, n, inner_size), (outer_stride, n_stride if n > 1 else 1, inner_stride))


def input_view(x: torch.Tensor, dim: int, order: list[int]) -> torch.Tensor | None:
    """``canonical_view`` of an input: a step along inner allowed where ``READ_STEPS_IN_PLACE``."""
    return canonical_view(x, dim, order, READ_STEPS_IN_PLACE)


def steps_on_boundaries(stride: int, itemsize: int, count: int) -> bool:
    """Whether each of ``count`` steps of ``stride`` elements starts at the 16-byte phase of the first
    (a stride of whole 16-byte pieces, where there is more than one step)."""
    return count == 1 or stride * itemsize % 16 == 0


def rows_on_boundaries(s0: int, s1: int, itemsize: int, outer: int, n: int) -> bool:
    """Whether every (o, k) row of an (outer, n, inner) view of these outer and reduced strides starts
    at the 16-byte phase of its first (row strides of whole 16-byte pieces, where there are rows)."""
    return steps_on_boundaries(s0, itemsize, outer) and steps_on_boundaries(s1, itemsize, n)


#: a row of at most this many bytes over a contiguous n x inner block is staged as part of one run
FLAT_RUN_MAX_ROW_BYTES = 128


def flat_run(s0: int, s1: int, inner: int, itemsize: int, outer: int) -> bool:
    """Whether each outer index of an (outer, n, inner) view is one contiguous run of short rows (at
    most FLAT_RUN_MAX_ROW_BYTES each) starting on its 16-byte boundary: staged as whole runs in
    16-byte pieces, whatever phase each row starts at (inner = 3 in 16-bit types)."""
    return s1 == inner and inner * itemsize <= FLAT_RUN_MAX_ROW_BYTES and (outer == 1 or s0 * itemsize % 16 == 0)


def unit_inner(*views: torch.Tensor) -> bool:
    """Whether every canonical view reads its inner axis with unit stride (no step)."""
    return all(v.stride(2) == 1 for v in views)


def copy_broadcast(out: torch.Tensor, part: torch.Tensor) -> torch.Tensor:
    """``out`` filled with ``part`` expanded to its shape. torch copies from a broadcast source
    element by element, so 16-bit data moves as 8- or 4-byte words where both tensors' innermost
    runs allow (H100: a 512 MiB bfloat16 output in 0.23 ms against 0.65 as bfloat16); the bytes are
    the same whatever the word."""
    src = part.expand(out.shape)
    for word in (torch.int64, torch.int32):
        if word.itemsize > out.element_size() and _viewable_as(out, word) and _viewable_as(src, word):
            out.view(word).copy_(src.view(word))
            return out
    return out.copy_(src)


def fill_from_first(out: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """``out`` with its first slice along ``dims`` (index 0 along each, already written) copied to
    every other index along them, one dim at a time, each copy from a part of ``out`` that the copy
    does not write."""
    for i, d in enumerate(dims):
        if out.size(d) > 1:
            done = first_slice(out, dims[i:])
            copy_broadcast(first_slice(out, dims[i + 1 :]).narrow(d, 1, out.size(d) - 1), done)
    return out


def _viewable_as(x: torch.Tensor, word: torch.dtype) -> bool:
    """Whether ``x.view(word)`` is valid: whole words along a unit-stride last dim, and every other
    dim's stride a whole number of words."""
    ratio = word.itemsize // x.element_size()
    if x.dim() == 0 or x.stride(-1) != 1 or x.size(-1) % ratio or x.storage_offset() % ratio:
        return False
    return all(stride % ratio == 0 for stride in x.stride()[:-1])


def read_in_place(dim: int, *inputs: torch.Tensor) -> bool:
    """Whether ``canonical_pair`` (one input) or ``canonical_backward`` (``dy, y``) reads every
    input where it lies: the last input and its output fold in its memory order, and so do the
    others in that order."""
    order = memory_order(inputs[-1])
    if any(input_view(t, dim, order) is None for t in inputs):
        return False
    return canonical_view(torch.empty_like(inputs[-1], device="meta"), dim, order) is not None


def canonical_pair(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None):
    """Return ``(x3, y3, y, copied)``: the canonical view of the input, and of a new output ``y``
    (full shape; of ``dtype`` if given, else of x's) laid out like the input. A layout that cannot
    be folded is copied to a contiguous tensor first (``copied``), and the output is then
    contiguous. The input's view may have a step along inner (``READ_STEPS_IN_PLACE``); the
    output's never has."""
    copied = False
    if not x.is_contiguous():
        order = memory_order(x)
        x3 = input_view(x, dim, order)
        if x3 is not None:
            y = new_empty_like(x, dtype=dtype)
            y3 = canonical_view(y, dim, order)
            if y3 is not None:
                return x3, y3, y, False
        x, copied = x.contiguous(), True
    n = x.size(dim)
    inner = 1
    for size in x.shape[dim + 1 :]:
        inner *= size
    shape = (x.numel() // (n * inner), n, inner)
    y = new_empty_like(x, memory_format=torch.contiguous_format, dtype=dtype)
    return x.view(shape), y.view(shape), y, copied


def canonical_backward(y: torch.Tensor, dy: torch.Tensor, dim: int, dtype: torch.dtype | None = None):
    """Return ``(y3, dy3, dx3, dx, copied)`` for the backward pass: ``dx`` takes ``y``'s layout (and
    ``dtype`` if given). ``dy`` is read where it lies whenever it folds into the same ``(outer, n,
    inner)`` axes (its own strides: a gradient laid out as a step view or a row slice is not copied),
    and is copied to ``dx``'s layout only when it does not; ``copied`` says whether either input was
    copied."""
    y3, dx3, dx, copied = canonical_pair(y, dim, dtype)
    if dy.stride() == dx.stride():
        return y3, dy.as_strided(dx3.size(), dx3.stride()), dx3, dx, copied
    # canonical_pair folded y in memory order, or a contiguous copy of it in logical order
    dy3 = input_view(dy, dim, list(range(y.dim())) if copied else memory_order(y))
    if dy3 is None or dy3.shape != dx3.shape:
        dy = torch.empty_like(dx, dtype=dy.dtype).copy_(dy)
        dy3, copied = dy.as_strided(dx3.size(), dx3.stride()), True
    return y3, dy3, dx3, dx, copied
