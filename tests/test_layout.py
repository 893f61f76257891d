"""The (outer, n, inner) view: no copies for permuted-dense layouts, copies only when needed."""

import torch

from fastsoftmax._layout import (
    broadcast_dims,
    canonical_backward,
    canonical_pair,
    copy_broadcast,
    fill_from_first,
    first_slice,
)


def _shares_storage(view, tensor):
    return view.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()


def test_contiguous_last_dim_is_rows():
    x = torch.randn(4, 5, 6)
    x3, y3, y, copied = canonical_pair(x, 2)
    assert not copied
    assert x3.shape == (20, 6, 1) and x3.stride()[1] == 1
    assert y.shape == x.shape and y.is_contiguous()


def test_contiguous_middle_dim_is_strided():
    x = torch.randn(4, 5, 6)
    x3, _, _, _ = canonical_pair(x, 1)
    assert x3.shape == (4, 5, 6) and x3.stride() == (30, 6, 1)


def test_transposed_tensor_is_not_copied():
    base = torch.randn(8, 3)
    x = base.t()
    x3, y3, y, _ = canonical_pair(x, 1)  # reduce along base's dim 0: strided in memory
    assert _shares_storage(x3, base)
    assert x3.shape == (1, 8, 3) and x3.stride() == (1, 3, 1)
    assert y.stride() == x.stride()
    x3, _, _, _ = canonical_pair(x, 0)  # reduce along base's rows: contiguous in memory
    assert x3.shape == (8, 3, 1) and x3.stride()[1] == 1 and _shares_storage(x3, base)


def test_row_slice_keeps_its_pitch():
    base = torch.randn(6, 40)
    x = base[:, 2:30]
    x3, y3, _, copied = canonical_pair(x, 1)
    assert not copied
    assert _shares_storage(x3, base)
    assert x3.shape == (6, 28, 1) and x3.stride()[:2] == (40, 1)
    assert x3.storage_offset() == 2
    assert y3.stride()[:2] == (28, 1)


def test_skipping_layouts_are_copied():
    # a row read with a step: no kernel takes it, so it is made dense first
    base = torch.randn(6, 40)
    x = base[:, ::2]
    x3, _, _, copied = canonical_pair(x, 1)
    assert copied and not _shares_storage(x3, base)
    assert torch.equal(x3.reshape(6, 20), x)


def test_a_step_along_inner_is_read_where_it_lies(monkeypatch):
    from fastsoftmax import _layout

    base = torch.randn(6, 7, 5, 40)
    x = base[..., ::2]  # inner dims (5, 20) fold into one of 100 with a step of 2
    x3, y3, y, copied = canonical_pair(x, 1)
    assert not copied and _shares_storage(x3, base)
    assert x3.shape == (6, 7, 100) and x3.stride() == (7 * 200, 200, 2)
    assert y3.stride() == (700, 100, 1) and y.is_contiguous()  # outputs are dense
    assert torch.equal(x3, x.reshape(6, 7, 100))
    # dy stepped too: read where it lies, with its own step
    _, dy3, dx3, _, copied = canonical_backward(x, torch.randn(6, 7, 5, 80)[..., ::4], 1)
    assert not copied and dy3.stride() == (7 * 400, 400, 4) and dx3.stride()[2] == 1
    monkeypatch.setattr(_layout, "READ_STEPS_IN_PLACE", False)
    x3, _, _, copied = canonical_pair(x, 1)
    assert copied and x3.stride()[2] == 1


def test_channels_last_reduction_over_channels_is_rows():
    x = torch.randn(2, 16, 5, 7).contiguous(memory_format=torch.channels_last)
    x3, _, y, _ = canonical_pair(x, 1)
    assert x3.shape == (70, 16, 1) and x3.stride()[1] == 1
    assert y.stride() == x.stride()


def test_backward_aligns_the_gradient_to_the_output():
    y = torch.randn(5, 9).t()
    dy = torch.randn(9, 5)  # contiguous, unlike y
    y3, dy3, dx3, dx, copied = canonical_backward(y, dy, 0)
    assert copied, "dy laid out unlike y is brought to y's layout by a copy"
    assert dy3.stride() == y3.stride() == dx3.stride()
    assert torch.equal(dy3.reshape(dx3.shape), dy.t().contiguous().t().as_strided(dx3.shape, dx3.stride()))
    assert dx.stride() == y.stride()


def test_a_gradient_that_folds_like_the_output_is_read_where_it_lies():
    index = torch.arange(6 * 40, dtype=torch.float32).view(6, 40)  # each element its logical index
    cases = [
        (index.clone(), torch.zeros(12, 40)[::2], 0),  # dy a step view
        (index.clone(), torch.zeros(12, 40)[::2], 1),  # rows of dy with their own pitch
        (torch.zeros(6, 41)[:, 1:], torch.zeros(12, 40)[::2], 1),  # y a row slice, dy a step view
        (torch.zeros(40, 6).t(), torch.zeros(80, 6)[::2].t(), 0),  # both transposed, dy stepped too
    ]
    for y, dy, dim in cases:
        y.copy_(index)
        dy.copy_(index)
        y3, dy3, dx3, dx, copied = canonical_backward(y, dy, dim)
        assert not copied and _shares_storage(dy3, dy) and dy3.stride() != dx3.stride()
        assert dy3.shape == y3.shape == dx3.shape
        assert torch.equal(dy3, y3), "the views of y and dy do not pair the same elements"


def test_broadcast_dims_and_first_slice():
    x = torch.randn(1, 5, 1, 3).expand(4, 5, 6, 3)
    assert broadcast_dims(1, x) == (0, 2)
    assert broadcast_dims(0, x) == (2,)  # the softmax dim itself is never one
    assert broadcast_dims(1, x, torch.randn(4, 5, 6, 3)) == ()  # every tensor must be broadcast
    assert broadcast_dims(1, torch.randn(1, 5)) == ()  # a dim of size 1 repeats nothing
    part = first_slice(x, (0, 2))
    assert part.shape == (1, 5, 1, 3) and _shares_storage(part, x)


def test_broadcast_dims_fold_into_outer_with_stride_zero():
    base = torch.randn(1, 24, 10)
    x = base.expand(6, 24, 10)
    x3, y3, y, copied = canonical_pair(x, 1)  # over the middle dim: the broadcast dim is outer
    assert not copied and _shares_storage(x3, base)
    assert x3.shape == (6, 24, 10) and x3.stride() == (0, 10, 1)
    assert y.is_contiguous() and y3.stride() == (240, 10, 1)
    x3, _, _, copied = canonical_pair(torch.randn(1, 10).expand(24, 10), 1)  # one row read 24 times
    assert not copied and x3.shape == (24, 10, 1) and x3.stride()[:2] == (0, 1)
    x3, _, _, copied = canonical_pair(x, 0)  # over the broadcast dim itself: an axis of stride 0
    assert not copied and x3.shape == (1, 6, 240) and x3.stride()[1:] == (0, 1)


def test_broadcast_dims_that_do_not_fold_are_copied():
    # a broadcast dim between two others: outer would need two strides
    x = torch.randn(4, 1, 5).expand(4, 3, 5)
    x3, _, _, copied = canonical_pair(x, 2)
    assert copied and x3.is_contiguous() and torch.equal(x3.reshape(4, 3, 5), x)


def test_copy_broadcast_moves_the_same_bytes_in_any_word():
    # 8-byte words (rows of 8 bf16), 4-byte words (rows of 10), the element itself (rows of 7,
    # a broadcast innermost dim, a channels-last slice); NaN payloads and -0.0 kept bit for bit
    cases = [((4, 6, 8), (1, 6, 8)), ((4, 6, 10), (1, 6, 10)), ((4, 6, 7), (1, 6, 7)), ((4, 6, 8), (4, 6, 1))]
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for shape, part_shape in cases:
            part = torch.randn(part_shape).to(dtype)
            part.view(-1)[0] = float("nan")
            part.view(-1)[-1] = -0.0
            out = torch.full(shape, 7.0, dtype=dtype)
            copy_broadcast(out, part)
            expected = part.expand(shape).contiguous()
            bits = torch.int16 if dtype.itemsize == 2 else torch.int32
            assert torch.equal(out.view(bits), expected.view(bits)), (dtype, shape)
    cl = torch.randn(1, 6, 4, 4).to(memory_format=torch.channels_last)
    out = torch.empty(5, 6, 4, 4)
    assert torch.equal(copy_broadcast(out, cl), cl.expand(5, 6, 4, 4))


def test_fill_from_first_copies_the_first_slice_along_every_dim():
    # one, two and three broadcast dims, between others and innermost; channels-last; a dim of one
    cases = [
        ((5, 6, 8), (0,), None),
        ((4, 6, 3, 7), (0, 2), None),
        ((3, 4, 2, 5), (0, 1, 3), None),
        ((5, 6, 4, 4), (0,), torch.channels_last),
        ((1, 6, 4), (0,), None),
    ]
    for shape, dims, memory_format in cases:
        part = torch.randn([1 if d in dims else size for d, size in enumerate(shape)])
        out = torch.full(shape, float("nan"))
        if memory_format is not None:
            out = out.contiguous(memory_format=memory_format)
        first_slice(out, dims).copy_(part)
        assert fill_from_first(out, dims) is out
        assert torch.equal(out, part.expand(shape)), (shape, dims)
