"""The whole datapath: a hand-traced example, properties over random inputs, bad configs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fastsoftmax.hardware import HardwareConfig, run_datapath, softmax

# Four fraction bits everywhere: small enough to trace by hand.
TINY = dict(
    input_bits=8, input_frac_bits=4, exp_frac_bits=4, accumulator_bits=12, accumulator_frac_bits=4, output_frac_bits=4
)


def exact_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def wide(width, **overrides):
    """Every width grown together, accurate units: error should vanish as ``width`` grows."""
    config = dict(
        input_bits=width + 8,
        input_frac_bits=width,
        exp_frac_bits=width,
        accumulator_bits=width + 28,
        accumulator_frac_bits=width + 10,
        output_frac_bits=width,
        constant_frac_bits=min(width + 4, 24),
        log2e="multiplier",
        ln2="multiplier",
        pow2_approx="lut",
        pow2_lut_bits=min(width, 20),
        log2_approx="lut",
        log2_lut_bits=min(width, 20),
        rounding="nearest_even",
    )
    config.update(overrides)
    return config


def test_hand_traced_two_element_row():
    # x = [0, -1] as words [0, -16]; max 0; d = [0, -16].
    # log2e by shift-add: -16 + (-8) - (-1) = -23 (-1.4375) -> u = -2, v = 9/16.
    # 2**v ~ 1 + v: mantissa 25, shifted right by 2 -> 6 (0.375); e = [16, 6], S = 22 (1.375).
    # LOD: leading one at bit 4 -> w = 0, k - 1 = 6/16 -> log2 S ~ 6 (0.375).
    # ln S = 6>>1 + 6>>2 - 6>>4 = 3 + 1 - 0 = 4 (0.25).
    # y = d - ln S = [-4, -20]; log2e again: [-4-2+1, -20-10+2] = [-5, -28].
    # 2**(-5/16) = 2**(-1 + 11/16) -> 27 >> 1 = 13;  2**(-28/16) = 2**(-2 + 4/16) -> 20 >> 2 = 5.
    np.testing.assert_array_equal(softmax([0.0, -1.0], **TINY) * 16, [13, 5])
    # the divider: (e << 4) // S = [256 // 22, 96 // 22] = [11, 4]
    np.testing.assert_array_equal(softmax([0.0, -1.0], normalisation="divider", **TINY) * 16, [11, 4])
    # subtracting log2 S in the exponent: t - 6 = [-6, -29] -> [26 >> 1, 19 >> 2] = [13, 4]
    np.testing.assert_array_equal(softmax([0.0, -1.0], normalisation="log2_subtract", **TINY) * 16, [13, 4])
    # the streaming design sees the same terms (U = 0, q = [0, 2]) and divides the same way
    np.testing.assert_array_equal(softmax([0.0, -1.0], design="sparse_shift", **TINY) * 16, [11, 4])
    np.testing.assert_array_equal(softmax([-1.0, 0.0], design="sparse_shift", sparse_lanes=1, **TINY) * 16, [4, 11])


def test_printed_ln2_overshoots():
    # ln S = 0.71875 * log2 S is too large, so every output comes out smaller than with 0.6875.
    x = np.random.default_rng(1).normal(0, 2, (8, 64))
    assert (softmax(x, ln2="shift_add_as_printed").sum(-1) < softmax(x).sum(-1)).all()


ALL_VARIANTS = [
    dict(),
    dict(normalisation="log2_subtract"),
    dict(normalisation="divider"),
    dict(pow2_approx="pwl", log2_approx="pwl", ln2="shift_add_as_printed"),
    dict(pow2_approx="lut", log2_approx="lut", log2e="multiplier", ln2="multiplier"),
    dict(rounding="nearest_even", pow2_approx="pwl", pow2_segments=8),
    dict(design="sparse_shift"),
    dict(design="sparse_shift", pow2_approx="pwl", sparse_lanes=1),
    dict(design="sparse_shift", normalisation="log2_subtract", sparse_lanes=3),
    dict(design="sparse_shift", normalisation="log2_subtract", pow2_approx="lut", log2_approx="lut"),
]

rows = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 4), st.integers(1, 40)),
    elements=st.floats(-60, 60, allow_nan=False, allow_infinity=False),
)


@pytest.mark.parametrize("variant", ALL_VARIANTS, ids=lambda v: "-".join(map(str, v.values())) or "default")
@settings(max_examples=40, deadline=None)
@given(x=rows)
def test_outputs_are_probabilities_and_monotone(variant, x):
    y = softmax(x, **variant)
    assert y.shape == x.shape and y.dtype == np.float64
    assert ((y >= 0) & (y <= 1)).all()
    # a larger input never gets a smaller output (compare every pair within each row)
    larger_input = x[..., :, None] > x[..., None, :]
    smaller_output = y[..., :, None] < y[..., None, :]
    assert not (larger_input & smaller_output).any()


@pytest.mark.parametrize("variant", ALL_VARIANTS[:8], ids=lambda v: "-".join(map(str, v.values())) or "default")
@pytest.mark.parametrize("value", [0.0, -3.3, 17.25, 127.0, -200.0, -np.inf])
def test_single_element_row_is_exactly_one(variant, value):
    assert softmax([[value]], **variant).tolist() == [[1.0]]


def test_single_element_in_the_streaming_design_with_log2_subtract():
    # There the exponent keeps the input's fraction v, and log2 of the sum is taken back from
    # 2**v through the LOD; with both straight lines the two cancel exactly, with tables they do
    # not, which the model must show rather than hide.
    assert softmax([[0.3]], design="sparse_shift", normalisation="log2_subtract").tolist() == [[1.0]]
    tables = softmax(
        [[0.3]], design="sparse_shift", normalisation="log2_subtract", pow2_approx="lut", log2_approx="lut"
    ).item()
    assert tables != 1.0 and abs(tables - 1.0) < 0.02


def test_error_shrinks_as_widths_grow():
    x = np.random.default_rng(2).normal(0, 3, (32, 256))
    p = exact_softmax(x)
    for normalisation in ("divider", "log2_subtract", "ln_subtract"):
        errors = [np.abs(softmax(x, **wide(w, normalisation=normalisation)) - p).max() for w in (6, 10, 14, 18)]
        assert errors[0] > errors[1] > errors[2] > errors[3], (normalisation, errors)
        assert errors[3] < 2e-5
    sparse = [np.abs(softmax(x, **wide(w, design="sparse_shift")) - p).max() for w in (6, 10, 14, 18)]
    assert sparse[0] > sparse[1] > sparse[2] > sparse[3] and sparse[3] < 2e-5


def test_survey_design_error_does_not_vanish_with_width():
    # With 2**v ~ 1 + v and log2 k ~ k - 1 the error is set by the approximations, not the widths.
    x = np.random.default_rng(3).normal(0, 3, (32, 256))
    p = exact_softmax(x)
    errors = [
        np.abs(
            softmax(x, **wide(w, pow2_approx="linear", log2_approx="linear", log2e="shift_add", ln2="shift_add")) - p
        ).max()
        for w in (12, 20)
    ]
    assert errors[1] > 0.03 and errors[1] > 0.5 * errors[0]


def test_divider_rows_sum_to_one_within_rounding():
    x = np.random.default_rng(4).normal(0, 2, (16, 100))
    y = softmax(x, normalisation="divider", rounding="nearest_even")
    assert np.abs(y.sum(-1) - 1).max() <= 100 * 2.0**-16  # half an ulp per element, 15 fraction bits


def test_rows_are_independent_and_shape_is_kept():
    x = np.random.default_rng(5).normal(0, 4, (2, 3, 7))
    y = softmax(x)
    assert y.shape == (2, 3, 7)
    for index in np.ndindex(2, 3):
        np.testing.assert_array_equal(y[index], softmax(x[index]))


def test_masked_positions_get_zero():
    y = softmax([[1.0, -np.inf, 2.0, -np.inf]])
    assert y[0, 1] == 0 and y[0, 3] == 0 and y[0, 2] > y[0, 0] > 0


def test_sparse_design_stores_only_elements_that_can_matter():
    # 15 output fraction bits: elements more than 16 binades below the row's top are dropped.
    flat = run_datapath(np.zeros((2, 32)), HardwareConfig(design="sparse_shift"))
    assert flat.stored_fraction == 1.0
    spread = np.full((1, 100), -100.0)
    spread[0, 5] = 0.0
    result = run_datapath(spread, HardwareConfig(design="sparse_shift", sparse_lanes=1))
    # elements 0..5 arrive before the max is known and are stored; the 94 after it are not
    assert result.stored_fraction == pytest.approx(6 / 100)
    assert result.values[0, 5] == 1.0 and (np.delete(result.values[0], 5) == 0).all()
    assert run_datapath(spread, HardwareConfig()).stored_fraction is None


def test_wrap_saturation_is_modelled_not_fatal():
    # A 6-bit accumulator with 4 fraction bits holds less than 4.0: 64 equal terms of 1.0 wrap.
    x = np.zeros((1, 64))
    wrapped = softmax(x, accumulator_bits=6, accumulator_frac_bits=4, saturation="wrap", normalisation="divider")
    clamped = softmax(x, accumulator_bits=6, accumulator_frac_bits=4, saturation="saturate", normalisation="divider")
    assert clamped[0, 0] == ((16 << 15) // 63) / 2**15  # the sum clamps at 63 words (3.9375)
    assert wrapped[0, 0] == 1.0  # 64 * 16 wraps to 0, read as one ulp: a saturated, wrong output


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(input_bits=0), "input_bits must be positive; got 0"),
        (dict(input_bits=-8), "input_bits must be positive; got -8"),
        (dict(input_frac_bits=-1), "input_frac_bits must be at least 0"),
        (dict(input_bits=16, input_frac_bits=20), r"input_frac_bits \(20\) must not exceed input_bits \(16\)"),
        (dict(exp_frac_bits=0), "exp_frac_bits must be positive"),
        (dict(output_frac_bits=0), "output_frac_bits must be positive"),
        (dict(accumulator_bits=0), "accumulator_bits must be positive"),
        (dict(accumulator_bits=16, accumulator_frac_bits=16), r"accumulator_frac_bits \(16\) must be less than"),
        (dict(input_bits=12.5), "input_bits must be an integer"),
        (dict(input_bits=True), "input_bits must be an integer"),
        (dict(rounding="round"), "rounding must be one of nearest_even, nearest_away, truncate, floor"),
        (dict(input_rounding="up"), "input_rounding must be one of"),
        (dict(saturation="clip"), "saturation must be one of saturate, wrap"),
        (dict(design="fast"), "design must be one of exp_log, sparse_shift"),
        (dict(pow2_approx="taylor"), "pow2_approx must be one of linear, pwl, lut"),
        (dict(log2_approx="exact"), "log2_approx must be one of"),
        (dict(pow2_segments=6), "pow2_segments must be a power of two"),
        (dict(log2_segments=0), "log2_segments must be positive"),
        (
            dict(exp_frac_bits=4, pow2_approx="lut", pow2_lut_bits=6),
            r"pow2_lut_bits \(6\) must not exceed exp_frac_bits \(4\)",
        ),
        (
            dict(exp_frac_bits=4, log2_approx="pwl", log2_segments=32),
            r"log2_segments \(32\) must not exceed 2\*\*exp_frac_bits",
        ),
        (dict(log2e="table"), "log2e must be one of shift_add, multiplier"),
        (dict(ln2="0.6875"), "ln2 must be one of shift_add, shift_add_as_printed, multiplier"),
        (dict(design="sparse_shift", normalisation="ln_subtract"), "normalisation for design 'sparse_shift'"),
        (dict(normalisation="none"), "normalisation for design 'exp_log' must be one of"),
        (dict(sparse_lanes=0), "sparse_lanes must be positive"),
        (dict(input_bits=32, input_frac_bits=0, exp_frac_bits=30, constant_frac_bits=24), "more than the 62 modelled"),
        (dict(accumulator_bits=62, accumulator_frac_bits=40, output_frac_bits=30), "divider's numerator"),
        (dict(input_width=8), "unknown config field"),
    ],
)
def test_bad_parameters_are_rejected_with_the_field_named(config, message):
    with pytest.raises(ValueError, match=message):
        softmax([1.0, 2.0], **config)


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="at least one axis"):
        softmax(3.0)
    with pytest.raises(ValueError, match="empty last axis"):
        softmax(np.zeros((2, 0)))
    with pytest.raises(ValueError, match="NaN"):
        softmax([1.0, np.nan])
    assert softmax(np.zeros((0, 5))).shape == (0, 5)
