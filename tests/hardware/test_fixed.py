"""Fixed-point words: quantisation, rounding, saturation and the integer helpers."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsoftmax.hardware.fixed import (
    ROUNDING_MODES,
    FixedFormat,
    align,
    divide,
    fit,
    quantise,
    shift,
    shift_right,
)


def exact_round(value: Fraction, mode: str) -> int:
    """Reference rounding on exact rationals."""
    floor = value.numerator // value.denominator
    if mode == "floor":
        return floor
    if mode == "truncate":
        return floor if value >= 0 else -((-value.numerator) // value.denominator)
    remainder = value - floor
    if remainder > Fraction(1, 2):
        return floor + 1
    if remainder < Fraction(1, 2):
        return floor
    if mode == "nearest_even":
        return floor + (floor % 2)
    return floor + 1 if value > 0 else floor  # nearest_away on a tie


@pytest.mark.parametrize(
    "value, expected",
    [
        # 1.375 * 4 = 5.5 and 0.625 * 4 = 2.5 are ties; 1.3 * 4 = 5.2 is not.
        (1.375, {"nearest_even": 6, "nearest_away": 6, "truncate": 5, "floor": 5}),
        (-1.375, {"nearest_even": -6, "nearest_away": -6, "truncate": -5, "floor": -6}),
        (0.625, {"nearest_even": 2, "nearest_away": 3, "truncate": 2, "floor": 2}),
        (-0.625, {"nearest_even": -2, "nearest_away": -3, "truncate": -2, "floor": -3}),
        (1.3, {"nearest_even": 5, "nearest_away": 5, "truncate": 5, "floor": 5}),
    ],
)
def test_quantise_rounding_modes(value, expected):
    fmt = FixedFormat(8, 2)
    for mode, word in expected.items():
        assert quantise(value, fmt, rounding=mode).item() == word, mode


def test_quantise_saturates_or_wraps_out_of_range():
    fmt = FixedFormat(8, 4)  # words -128..127, values -8..7.9375
    assert fmt.min_int == -128 and fmt.max_int == 127
    assert quantise(10.0, fmt, saturation="saturate").item() == 127
    assert quantise(10.0, fmt, saturation="wrap").item() == 160 - 256
    assert quantise(-9.0, fmt, saturation="wrap").item() == -144 + 256
    assert quantise(-np.inf, fmt).item() == -128
    assert quantise(np.inf, fmt).item() == 127


def test_quantise_refuses_nan_and_wrapping_infinity():
    fmt = FixedFormat(8, 4)
    with pytest.raises(ValueError, match="NaN"):
        quantise([0.0, np.nan], fmt)
    with pytest.raises(ValueError, match="infinity"):
        quantise([np.inf], fmt, saturation="wrap")


def test_unsigned_format_range_and_fit():
    fmt = FixedFormat(4, 2, signed=False)
    assert (fmt.min_int, fmt.max_int) == (0, 15)
    np.testing.assert_array_equal(fit([-3, 7, 20], fmt, "saturate"), [0, 7, 15])
    np.testing.assert_array_equal(fit([-3, 7, 20], fmt, "wrap"), [13, 7, 4])


@pytest.mark.parametrize(
    "word, amount, expected",
    [
        (13, 2, {"floor": 3, "truncate": 3, "nearest_even": 3, "nearest_away": 3}),  # 3.25
        (14, 2, {"floor": 3, "truncate": 3, "nearest_even": 4, "nearest_away": 4}),  # 3.5
        (10, 2, {"floor": 2, "truncate": 2, "nearest_even": 2, "nearest_away": 3}),  # 2.5
        (-10, 2, {"floor": -3, "truncate": -2, "nearest_even": -2, "nearest_away": -3}),  # -2.5
        (-13, 2, {"floor": -4, "truncate": -3, "nearest_even": -3, "nearest_away": -3}),  # -3.25
        (-7, 0, {"floor": -7, "truncate": -7, "nearest_even": -7, "nearest_away": -7}),
        (-5, 100, {"floor": -1, "truncate": 0, "nearest_even": 0, "nearest_away": 0}),
    ],
)
def test_shift_right_hand_cases(word, amount, expected):
    for mode, result in expected.items():
        assert shift_right(word, amount, mode).item() == result, mode


@settings(max_examples=150, deadline=None)
@given(st.integers(-(2**40), 2**40), st.integers(0, 45), st.sampled_from(ROUNDING_MODES))
def test_shift_right_matches_exact_rounding(word, amount, mode):
    assert shift_right(word, amount, mode).item() == exact_round(Fraction(word, 2**amount), mode)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**40), st.integers(1, 2**20), st.sampled_from(ROUNDING_MODES))
def test_divide_matches_exact_rounding(numerator, denominator, mode):
    assert divide(numerator, denominator, mode).item() == exact_round(Fraction(numerator, denominator), mode)


def test_divide_hand_cases_and_refusals():
    np.testing.assert_array_equal(divide([7, 5, 9], 2, "nearest_even"), [4, 2, 4])
    np.testing.assert_array_equal(divide([7, 5, 9], 2, "floor"), [3, 2, 4])
    with pytest.raises(ValueError):
        divide(1, 0)
    with pytest.raises(ValueError):
        divide(-1, 3)


def test_shift_and_align():
    np.testing.assert_array_equal(shift([3, 3, -3], [2, -1, -1], "floor"), [12, 1, -2])
    assert align(5, 2, 5).item() == 40  # 1.25 with 3 more fraction bits
    assert align(5, 2, 0, "nearest_even").item() == 1
    with pytest.raises(ValueError):
        shift_right(4, -1)


@pytest.mark.parametrize(
    "total, frac, message",
    [
        (0, 0, "total_bits must be positive"),
        (-4, 0, "total_bits must be positive"),
        (8, -1, "frac_bits must be at least 0"),
        (8, 9, r"frac_bits \(9\) must not exceed total_bits \(8\)"),
        (63, 0, "total_bits must be at most 62"),
        (8.0, 4, "total_bits must be an integer"),
        (True, 0, "total_bits must be an integer"),
    ],
)
def test_format_rejects_bad_widths(total, frac, message):
    with pytest.raises(ValueError, match=message):
        FixedFormat(total, frac)


def test_unknown_modes_are_named_in_the_error():
    with pytest.raises(ValueError, match="rounding must be one of nearest_even"):
        quantise(1.0, FixedFormat(8, 2), rounding="bankers")
    with pytest.raises(ValueError, match="saturation must be one of saturate, wrap"):
        quantise(1.0, FixedFormat(8, 2), saturation="clip")
