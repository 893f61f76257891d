"""Each stage of the datapath against hand-computed words."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsoftmax.hardware.datapath import (
    LN2_SHIFT_ADD,
    LN2_SHIFT_ADD_AS_PRINTED,
    LOG2E_SHIFT_ADD,
    FractionUnit,
    constant_multiply,
    leading_one_position,
    log2_via_lod,
    normalise_by_divider,
    pow2,
    shift_add_multiply,
    shift_add_value,
    split_integer_fraction,
    subtract_row_max,
)


def test_shift_add_constants():
    # log2 e = 1.4426950 ~ 1.0111b; ln 2 = 0.6931472 ~ 0.1011b; the printed ln 2 form is 0.10111b.
    assert shift_add_value(LOG2E_SHIFT_ADD) == 1.4375 == 0b10111 / 16
    assert shift_add_value(LN2_SHIFT_ADD) == 0.6875 == 0b1011 / 16
    assert shift_add_value(LN2_SHIFT_ADD_AS_PRINTED) == 0.71875 == 0b10111 / 32
    assert abs(1.4375 - 1 / math.log(2)) < 0.0052
    assert abs(0.6875 - math.log(2)) < 0.0057
    assert abs(0.71875 - math.log(2)) > 0.025  # the printed form is over 3.6 % off


def test_shift_add_multiply_hand_words():
    # 10.0 with 4 fraction bits: 160 + 80 - 10 = 230 = 14.375 = 10 * 1.4375, no bits lost.
    assert shift_add_multiply(160, LOG2E_SHIFT_ADD).item() == 230
    # -20: the shifted copies drop bits, and floor and truncate drop them differently:
    # floor:    -20 + (-10) - (-2) = -28;  truncate: -20 + (-10) - (-1) = -29.
    assert shift_add_multiply(-20, LOG2E_SHIFT_ADD, "floor").item() == -28
    assert shift_add_multiply(-20, LOG2E_SHIFT_ADD, "truncate").item() == -29
    # 1.0 with 8 fraction bits through both ln 2 networks: 128 + 64 - 16 and 128 + 64 - 8.
    assert shift_add_multiply(256, LN2_SHIFT_ADD).item() == 176
    assert shift_add_multiply(256, LN2_SHIFT_ADD_AS_PRINTED).item() == 184


def test_constant_multiplier():
    # round(log2e * 2**16) = 94548; 256 * 94548 / 2**16 = 369.33 -> 369 (floor), i.e. 1.44140625.
    assert constant_multiply(256, 1 / math.log(2), 16).item() == 369
    assert constant_multiply(256, 1 / math.log(2), 16, "nearest_even").item() == 369
    assert constant_multiply(-256, 1 / math.log(2), 16, "floor").item() == -370


def test_subtract_row_max_and_split():
    differences, row_max = subtract_row_max(np.array([[3, -5, 7], [0, 0, -1]]))
    np.testing.assert_array_equal(differences, [[-4, -12, 0], [0, 0, -1]])
    np.testing.assert_array_equal(row_max, [[7], [0]])
    # -2.25 = -3 + 0.75 and 2.3125 = 2 + 0.3125, four fraction bits.
    u, v = split_integer_fraction(np.array([-36, 37, 0, -16]), 4)
    np.testing.assert_array_equal(u, [-3, 2, 0, -1])
    np.testing.assert_array_equal(v, [12, 5, 0, 0])


def test_leading_one_detector_hand_cases():
    words = np.array([1, 2, 3, 0b1011, 2**40, 2**40 - 1, 2**61 + 5, 0])
    np.testing.assert_array_equal(leading_one_position(words), [0, 1, 1, 3, 40, 39, 61, -1])
    with pytest.raises(ValueError):
        leading_one_position([-1])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 2**62 - 1), min_size=1, max_size=20))
def test_leading_one_detector_is_bit_length(words):
    np.testing.assert_array_equal(leading_one_position(np.array(words)), [w.bit_length() - 1 for w in words])


def test_pow2_units_at_end_points():
    # Eight fraction bits: input words 0 (v = 0) and 255 (v = 1 - 2**-8); outputs are 2**v - 1.
    linear = FractionUnit("pow2", "linear", 8)
    assert linear(0).item() == 0 and linear(255).item() == 255  # 1 + v: 1.0 and 1.99609375
    pwl = FractionUnit("pow2", "pwl", 8, segments=4)
    # knots round(256 * (2**(j/4) - 1)) = 0, 48, 106, 175, 256
    np.testing.assert_array_equal(pwl.knots, [0, 48, 106, 175])
    np.testing.assert_array_equal(pwl([0, 64, 128, 192]), [0, 48, 106, 175])
    # top word: segment 3, offset 63: 175 + floor(81 * 63 / 64) = 175 + 79
    assert pwl(255).item() == 254
    lut = FractionUnit("pow2", "lut", 8, address_bits=6)
    # address = round(v * 64): word 0 -> entry 0 (0); word 2 -> entry 1 = round(256 * (2**(1/64) - 1)) = 3;
    # word 255 -> entry 64 = 256: the mantissa reaches 2.0 and carries.
    assert lut(0).item() == 0 and lut(2).item() == 3 and lut(255).item() == 256


def test_log2_units_at_end_points():
    linear = FractionUnit("log2", "linear", 8)
    assert linear(0).item() == 0 and linear(255).item() == 255  # log2 k ~ k - 1
    pwl = FractionUnit("log2", "pwl", 8, segments=4)
    # round(256 * log2(1.25, 1.5, 1.75)) = 82, 150, 207
    np.testing.assert_array_equal(pwl([0, 64, 128, 192]), [0, 82, 150, 207])
    assert FractionUnit("log2", "lut", 8, address_bits=4)(255).item() == 256


def test_fraction_unit_worst_errors():
    # The straight line's worst error is the same for both functions: 1/ln2 - 1 - log2(1/ln2)
    # away from the curve, 0.0860713 (at v = 0.5288 for 2**v, at f = 0.4427 for log2).
    expected = -math.log2(math.log(2)) - (1 / math.log(2) - 1)
    for function in ("pow2", "log2"):
        assert FractionUnit(function, "linear", 16).worst_error() == pytest.approx(expected, abs=2e-5)
        errors = [FractionUnit(function, "pwl", 16, segments=s).worst_error() for s in (1, 4, 16)]
        # chords: error falls roughly with the square of the segment width (16x per 4x segments)
        assert errors[0] > 8 * errors[1] > 64 * errors[2]
        lut8 = FractionUnit(function, "lut", 16, address_bits=8).worst_error()
        assert lut8 < 2**-9 * 1.45  # half a cell times the steepest slope (1/ln2 for log2)


def test_pow2_hand_words():
    linear = FractionUnit("pow2", "linear", 8)
    # t = 0 -> 1.0; t = -1.5 -> u = -2, v = 0.5 -> 1.5 / 4 = 0.375 (exact 0.354); t = 3 -> 8.
    np.testing.assert_array_equal(pow2(np.array([0, -384, 768]), 8, linear, 8), [256, 96, 2048])
    # re-aligned to 4 output fraction bits: 0.375 -> 6
    assert pow2(np.array([-384]), 8, linear, 4).item() == 6


def test_log2_via_lod_hand_words():
    linear = FractionUnit("log2", "linear", 8)
    # four fraction bits in the sum: 1.0 (16) -> 0; 3.0 (48) -> w = 1, k = 1.5 -> 1.5 (384);
    # 0.75 (12) -> w = -1, k = 1.5 -> -0.5 (-128).
    np.testing.assert_array_equal(log2_via_lod(np.array([16, 48, 12]), 4, 8, linear), [0, 384, -128])
    with pytest.raises(ValueError):
        log2_via_lod(np.array([0]), 4, 8, linear)


def test_divider_hand_words():
    np.testing.assert_array_equal(normalise_by_divider(np.array([1, 1, 2]), np.array([4]), 4), [4, 4, 8])
    # 1/3 with 4 fraction bits: 16/3 = 5.33 -> 5
    assert normalise_by_divider(np.array([1]), np.array([3]), 4).item() == 5


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(function="exp", kind="linear"), "function must be one of"),
        (dict(function="pow2", kind="cubic"), "approximation must be one of linear, pwl, lut"),
        (dict(function="pow2", kind="pwl", segments=3), "power of two"),
        (dict(function="pow2", kind="pwl", segments=512), "need more than the 8 fraction bits"),
        (dict(function="pow2", kind="lut", address_bits=9), "must not exceed the 8 fraction bits"),
    ],
)
def test_fraction_unit_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FractionUnit(frac_bits=8, **kwargs)
