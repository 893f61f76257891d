"""The stages of a base-2 softmax datapath, each a function on integer arrays.

The arithmetic follows the exp/log softmax architecture surveyed for FPGA and ASIC work
(the "high-speed, low-complexity" design): no multiplier for the constants, no divider, and no
exponential unit beyond an approximation of 2**v on [0, 1):

    e**x = 2**(x * log2 e) = 2**(u + v),   u integer, v in [0, 1)
    2**(u + v) = (2**v) << u               (a shift applies the integer part)
    ln F = ln 2 * log2 F,   F = 2**w * k,  k in [1, 2)  found by a leading-one detector,
    log2 F ~ w + (k - 1)                   (the straight line through log2 1 and log2 2)
    softmax_i = exp(x_i - max - ln F)      (a subtraction in the exponent replaces the divider)

The constants are sums of shifted copies of the operand:

    log2 e = 1.442695... ~ 1.0111b = 1 + 1/2 - 1/16 = 1.4375      A + A>>1 - A>>4
    ln 2   = 0.693147... ~ 0.1011b = 1/2 + 1/4 - 1/16 = 0.6875     B>>1 + B>>2 - B>>4

The survey writes the second as B>>1 + B>>2 - B>>5, which is 0.10111b = 0.71875, not 0.1011b; both
are provided (``LN2_SHIFT_ADD`` and ``LN2_SHIFT_ADD_AS_PRINTED``) so the report can show what the
misprint costs.

Every function takes and returns ``int64`` words with an explicit number of fraction bits; the
caller (``model.py``) decides the widths. Rows are the last axis; everything is vectorised over the
leading axes, as a hardware array of lanes would be.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .fixed import (
    MAX_WORD_BITS,
    check_rounding,
    check_width,
    divide,
    shift,
    shift_right,
)

# (sign, right shift) terms of a shift-and-add constant multiplier.
LOG2E_SHIFT_ADD = ((+1, 0), (+1, 1), (-1, 4))
LN2_SHIFT_ADD = ((+1, 1), (+1, 2), (-1, 4))
LN2_SHIFT_ADD_AS_PRINTED = ((+1, 1), (+1, 2), (-1, 5))

FRACTION_APPROXIMATIONS = ("linear", "pwl", "lut")


def shift_add_value(terms) -> float:
    """The constant a shift-and-add network multiplies by (for documentation and tests)."""
    return float(sum(sign * 2.0**-amount for sign, amount in terms))


def shift_add_multiply(words, terms, rounding: str = "floor") -> np.ndarray:
    """Multiply by a constant with adders only: sum of +-(words >> s).

    Each shifted copy is rounded on its own, as it would be on a wire that simply drops the low
    bits ("floor") or on one with a rounding incrementer.
    """
    words = np.asarray(words, dtype=np.int64)
    total = np.zeros_like(words)
    for sign, amount in terms:
        total = total + sign * shift_right(words, amount, rounding)
    return total


def constant_multiply(words, constant: float, constant_frac_bits: int, rounding: str = "floor") -> np.ndarray:
    """Multiply by ``constant`` held in a ROM word with ``constant_frac_bits`` fraction bits.

    The reference against which the shift-add networks are measured: a real multiplier with a
    correctly rounded constant.
    """
    constant_word = round(constant * (1 << constant_frac_bits))
    return shift_right(np.asarray(words, dtype=np.int64) * constant_word, constant_frac_bits, rounding)


def subtract_row_max(words) -> tuple[np.ndarray, np.ndarray]:
    """x - max(x) along the row: the result is <= 0 and one bit wider than the input word."""
    words = np.asarray(words, dtype=np.int64)
    row_max = words.max(axis=-1, keepdims=True)
    return words - row_max, row_max


def split_integer_fraction(words, frac_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """t -> (u, v) with t = u + v, u = floor(t), v in [0, 1): wiring, not arithmetic.

    In two's complement the integer part is the arithmetic right shift and the fraction is the
    low bits read as unsigned, for negative t as well (-2.25 = -3 + 0.75).
    """
    words = np.asarray(words, dtype=np.int64)
    return words >> frac_bits, words & ((np.int64(1) << frac_bits) - 1)


def leading_one_position(words) -> np.ndarray:
    """Index of the most significant set bit (0 for 1, 3 for 0b1011), -1 for zero.

    Built as a priority encoder tree: test the upper half, keep whichever half holds the leading
    one, and add the half's width to the position; six levels cover 64 bits.
    """
    words = np.asarray(words, dtype=np.int64)
    if (words < 0).any():
        raise ValueError("the leading-one detector takes non-negative words")
    position = np.zeros(words.shape, dtype=np.int64)
    remaining = words.copy()
    for half_width in (32, 16, 8, 4, 2, 1):
        upper = remaining >> half_width
        in_upper = upper != 0
        position += np.where(in_upper, half_width, 0)
        remaining = np.where(in_upper, upper, remaining)
    return np.where(words == 0, -1, position)


class FractionUnit:
    """A function from [0, 1) to [0, 1] on ``frac_bits``-bit fractions, approximated for hardware.

    Two functions of this shape appear in the datapath: 2**v - 1 (the mantissa of 2**v) and
    log2(1 + f) (the fraction of log2 F after the leading-one detector). Both pass through (0, 0)
    and (1, 1) and bend the same small amount, so one family of approximations serves both:

    * ``"linear"``: the identity, i.e. 2**v ~ 1 + v and log2(1 + f) ~ f, free in hardware;
      worst error 0.0861 (at v = 0.529 and f = 0.443);
    * ``"pwl"``: ``segments`` chords (a power of two), exact at the knots j / segments; the top
      bits of the input pick a knot and its rise, and one small multiply interpolates;
    * ``"lut"``: ``2**address_bits + 1`` entries, the function at the grid points
      j / 2**address_bits, addressed by rounding the input to the nearest grid point (round half
      up: one incrementer on the address). Exact at both ends, worst error half a cell's rise.

    Table contents are computed offline in float64 and rounded to nearest; ``rounding`` applies to
    the interpolation product. The result word has one bit more than the fraction, so the top of
    the range (1.0, i.e. a mantissa of 2 or log2 k = 1) is representable and carries correctly.
    """

    FUNCTIONS: ClassVar[dict] = {
        "pow2": lambda v: np.exp2(v) - 1.0,
        "log2": lambda f: np.log2(1.0 + f),
    }

    def __init__(
        self,
        function: str,
        kind: str,
        frac_bits: int,
        segments: int = 4,
        address_bits: int = 6,
        rounding: str = "floor",
    ):
        if function not in self.FUNCTIONS:
            raise ValueError(f"function must be one of {', '.join(self.FUNCTIONS)}; got {function!r}")
        if kind not in FRACTION_APPROXIMATIONS:
            raise ValueError(
                f"{function} approximation must be one of {', '.join(FRACTION_APPROXIMATIONS)}; got {kind!r}"
            )
        check_width(frac_bits, "frac_bits")
        check_rounding(rounding)
        self.function, self.kind, self.frac_bits, self.rounding = function, kind, frac_bits, rounding
        exact = self.FUNCTIONS[function]
        scale = float(1 << frac_bits)
        if kind in ("linear", "pwl"):
            if kind == "linear":
                segments = 1
            check_width(segments, f"{function} segments", maximum=1 << 30)
            if segments & (segments - 1):
                raise ValueError(f"{function} segments must be a power of two; got {segments}")
            self.segment_bits = segments.bit_length() - 1
            if self.segment_bits > frac_bits:
                raise ValueError(
                    f"{function} segments ({segments}) need more than the {frac_bits} fraction bits available"
                )
            knots = np.rint(exact(np.arange(segments + 1) / segments) * scale).astype(np.int64)
            self.knots = knots[:-1]
            self.rises = np.diff(knots)
            self.offset_bits = frac_bits - self.segment_bits
        else:
            check_width(address_bits, f"{function} lut address bits")
            if address_bits > frac_bits:
                raise ValueError(
                    f"{function} lut address bits ({address_bits}) must not exceed the {frac_bits} fraction bits"
                )
            self.address_shift = frac_bits - address_bits
            grid = np.arange((1 << address_bits) + 1) / (1 << address_bits)
            self.table = np.rint(exact(grid) * scale).astype(np.int64)

    def __call__(self, fraction_words) -> np.ndarray:
        words = np.asarray(fraction_words, dtype=np.int64)
        if self.kind == "lut":
            return self.table[shift_right(words, self.address_shift, "nearest_away")]
        segment = words >> self.offset_bits
        offset = words & ((np.int64(1) << self.offset_bits) - 1)
        return self.knots[segment] + shift_right(self.rises[segment] * offset, self.offset_bits, self.rounding)

    def worst_error(self) -> float:
        """Largest |approximation - exact| over every input word (exhaustive when it is cheap)."""
        count = 1 << min(self.frac_bits, 20)
        inputs = np.arange(count, dtype=np.int64) << (self.frac_bits - min(self.frac_bits, 20))
        approx = self(inputs) / float(1 << self.frac_bits)
        return float(np.abs(approx - self.FUNCTIONS[self.function](inputs / float(1 << self.frac_bits))).max())


def pow2(exponent_words, frac_bits: int, unit: FractionUnit, out_frac_bits: int, rounding: str = "floor") -> np.ndarray:
    """2**t for a fixed-point exponent t: mantissa 1 + unit(v) from the fraction, shifted by u.

    The mantissa lies in [1, 2] with ``frac_bits`` fraction bits; the barrel shifter moves it by
    the integer part u and re-aligns it to ``out_frac_bits``, rounding what falls off the end.
    """
    integer_part, fraction = split_integer_fraction(exponent_words, frac_bits)
    mantissa = (np.int64(1) << frac_bits) + unit(fraction)
    return shift(mantissa, integer_part + (out_frac_bits - frac_bits), rounding)


def log2_via_lod(total_words, total_frac_bits: int, out_frac_bits: int, unit: FractionUnit) -> np.ndarray:
    """log2 F for a positive fixed-point F, as w + log2 k from a leading-one detector.

    F = 2**w * k with k in [1, 2): w is the leading-one position minus the fraction width, and the
    bits below the leading one, read as a fraction, are k - 1. Those bits are selected, not
    rounded (a barrel shifter behind the detector), so k is truncated to ``out_frac_bits``.
    """
    total_words = np.asarray(total_words, dtype=np.int64)
    if (total_words <= 0).any():
        raise ValueError("log2 needs a positive sum")
    position = leading_one_position(total_words)
    below_leading_one = total_words - (np.int64(1) << position)
    k_fraction = shift(below_leading_one, out_frac_bits - position, "floor")
    return ((position - total_frac_bits) << out_frac_bits) + unit(k_fraction)


def normalise_by_divider(exp_words, sum_words, out_frac_bits: int, rounding: str = "floor") -> np.ndarray:
    """softmax_i = e_i / F on an integer divider producing ``out_frac_bits`` quotient bits.

    ``exp_words`` and ``sum_words`` share a fraction width, so the quotient of the words is the
    quotient of the values; the numerator is pre-shifted to give the quotient its fraction bits.
    """
    exp_words = np.asarray(exp_words, dtype=np.int64)
    if int(exp_words.max(initial=0)).bit_length() + out_frac_bits > MAX_WORD_BITS:
        raise ValueError("divider numerator would exceed the modelled word width")
    return divide(exp_words << out_frac_bits, sum_words, rounding)
