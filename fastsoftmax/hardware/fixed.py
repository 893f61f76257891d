"""Fixed-point words and the integer operations a datapath performs on them.

A value is held the way a register holds it: as an integer ``n`` standing for ``n / 2**frac_bits``.
Every array here is ``int64``; the formats are validated so that no intermediate of the softmax
model comes near 2**62, which keeps the emulation exact (NumPy integers wrap silently, so an
overflow would otherwise corrupt a result without a trace).

Two choices recur wherever a hardware designer drops bits or runs out of them, and both are named
rather than hard-wired so that their cost can be measured:

* rounding, when low bits are discarded (quantising a float, shifting right, dividing):
  ``"nearest_even"`` (round half to even), ``"nearest_away"`` (round half away from zero),
  ``"truncate"`` (toward zero, sign-magnitude style) and ``"floor"`` (toward minus infinity, which
  is what an arithmetic right shift of a two's complement word gives for free);
* saturation, when high bits do not fit: ``"saturate"`` clamps to the largest or smallest word,
  ``"wrap"`` keeps the low bits, as a plain two's complement adder does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ROUNDING_MODES = ("nearest_even", "nearest_away", "truncate", "floor")
SATURATION_MODES = ("saturate", "wrap")

# Headroom kept below the int64 limit: shifts by more than this are treated as "everything shifted
# out", and formats wider than this are refused.
MAX_WORD_BITS = 62


def check_rounding(mode: str, field: str = "rounding") -> str:
    if mode not in ROUNDING_MODES:
        raise ValueError(f"{field} must be one of {', '.join(ROUNDING_MODES)}; got {mode!r}")
    return mode


def check_saturation(mode: str, field: str = "saturation") -> str:
    if mode not in SATURATION_MODES:
        raise ValueError(f"{field} must be one of {', '.join(SATURATION_MODES)}; got {mode!r}")
    return mode


def check_width(value, field: str, minimum: int = 1, maximum: int = MAX_WORD_BITS) -> int:
    """A bit count from a caller: an int (bools are refused, they are a classic typo) in range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        # ValueError, not TypeError: every bad configuration value is reported the same way.
        raise ValueError(f"{field} must be an integer number of bits; got {value!r}")  # noqa: TRY004
    if value < minimum:
        kind = "positive" if minimum == 1 else f"at least {minimum}"
        raise ValueError(f"{field} must be {kind}; got {value}")
    if value > maximum:
        raise ValueError(f"{field} must be at most {maximum} bits; got {value}")
    return int(value)


@dataclass(frozen=True)
class FixedFormat:
    """A two's complement (or unsigned) word of ``total_bits`` with ``frac_bits`` after the point."""

    total_bits: int
    frac_bits: int
    signed: bool = True

    def __post_init__(self):
        check_width(self.total_bits, "total_bits")
        check_width(self.frac_bits, "frac_bits", minimum=0)
        if self.frac_bits > self.total_bits:
            raise ValueError(
                f"frac_bits ({self.frac_bits}) must not exceed total_bits ({self.total_bits}): "
                "the fraction cannot be wider than the word"
            )

    @property
    def min_int(self) -> int:
        return -(1 << (self.total_bits - 1)) if self.signed else 0

    @property
    def max_int(self) -> int:
        return (1 << (self.total_bits - 1)) - 1 if self.signed else (1 << self.total_bits) - 1

    @property
    def resolution(self) -> float:
        return 2.0**-self.frac_bits

    def to_float(self, words) -> np.ndarray:
        return np.asarray(words, dtype=np.float64) * self.resolution


def _round_float(scaled: np.ndarray, rounding: str) -> np.ndarray:
    if rounding == "nearest_even":
        return np.rint(scaled)
    if rounding == "nearest_away":
        return np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    if rounding == "truncate":
        return np.trunc(scaled)
    return np.floor(scaled)


def fit(words, fmt: FixedFormat, saturation: str) -> np.ndarray:
    """Force integers into ``fmt``'s range by clamping or by keeping the low ``total_bits`` bits."""
    words = np.asarray(words, dtype=np.int64)
    if saturation == "saturate":
        return np.clip(words, fmt.min_int, fmt.max_int)
    span = np.int64(1) << fmt.total_bits
    return (words - fmt.min_int) % span + fmt.min_int


def quantise(x, fmt: FixedFormat, rounding: str = "nearest_even", saturation: str = "saturate") -> np.ndarray:
    """Float values -> integer words of ``fmt``.

    Infinities are accepted under ``"saturate"`` (a masked attention score of -inf becomes the most
    negative word, which is what a saturating converter produces); NaN has no word and is refused.
    """
    check_rounding(rounding)
    check_saturation(saturation)
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError("input contains NaN, which has no fixed-point representation")
    if saturation == "wrap" and not np.isfinite(x).all():
        raise ValueError("input contains an infinity, which cannot wrap; use saturation='saturate'")
    # Scaling by a power of two is exact in float64, so the only rounding is the named one.
    scaled = _round_float(np.ldexp(x, fmt.frac_bits), rounding)
    if saturation == "saturate":
        return np.clip(scaled, fmt.min_int, fmt.max_int).astype(np.int64)
    # fmod of an integer-valued float by a power of two is exact, so wrapping happens before the
    # conversion to int64 can overflow.
    span = float(1 << fmt.total_bits)
    return (np.mod(scaled - fmt.min_int, span) + fmt.min_int).astype(np.int64)


def shift_right(words, amount, rounding: str = "floor") -> np.ndarray:
    """``words / 2**amount`` rounded as named; ``amount`` >= 0, scalar or broadcastable array.

    Shifting by more than the word is legal hardware (everything falls out), so large amounts are
    clamped to ``MAX_WORD_BITS``, which gives the same result for every word this package holds.
    """
    words = np.asarray(words, dtype=np.int64)
    amount = np.asarray(amount, dtype=np.int64)
    if (amount < 0).any():
        raise ValueError("shift_right needs non-negative shift amounts")
    amount = np.minimum(amount, MAX_WORD_BITS)
    if rounding == "floor":
        return words >> amount
    if rounding == "truncate":
        return np.where(words < 0, -((-words) >> amount), words >> amount)
    shifted = amount > 0
    # ``half`` is the weight of the first discarded bit; with nothing discarded there is no tie.
    half = np.where(shifted, np.int64(1) << np.maximum(amount - 1, 0), 0)
    if rounding == "nearest_away":
        magnitude = (np.abs(words) + half) >> amount
        return np.where(words < 0, -magnitude, magnitude)
    if rounding == "nearest_even":
        quotient = words >> amount
        remainder = words - (quotient << amount)
        round_up = (remainder > half) | ((remainder == half) & shifted & ((quotient & 1) == 1))
        return quotient + round_up
    raise ValueError(f"rounding must be one of {', '.join(ROUNDING_MODES)}; got {rounding!r}")


def shift(words, amount, rounding: str = "floor") -> np.ndarray:
    """A barrel shifter: left for positive ``amount`` (exact), right with rounding for negative."""
    words = np.asarray(words, dtype=np.int64)
    amount = np.asarray(amount, dtype=np.int64)
    left = np.maximum(amount, 0)
    return np.where(amount >= 0, words << left, shift_right(words, np.maximum(-amount, 0), rounding))


def align(words, from_frac_bits: int, to_frac_bits: int, rounding: str = "floor") -> np.ndarray:
    """Re-express words with another number of fraction bits (appending zeros or rounding bits off)."""
    return shift(words, to_frac_bits - from_frac_bits, rounding)


def divide(numerator, denominator, rounding: str = "floor") -> np.ndarray:
    """Integer quotient ``numerator / denominator`` for numerator >= 0, denominator > 0, rounded.

    For non-negative operands floor and truncate coincide, which is what a restoring divider gives.
    """
    numerator = np.asarray(numerator, dtype=np.int64)
    denominator = np.asarray(denominator, dtype=np.int64)
    if (numerator < 0).any() or (denominator <= 0).any():
        raise ValueError("divide needs numerator >= 0 and denominator > 0")
    quotient = numerator // denominator
    if rounding in ("floor", "truncate"):
        return quotient
    twice_remainder = 2 * (numerator - quotient * denominator)
    if rounding == "nearest_away":
        return quotient + (twice_remainder >= denominator)
    if rounding == "nearest_even":
        tie_to_odd = (twice_remainder == denominator) & ((quotient & 1) == 1)
        return quotient + ((twice_remainder > denominator) | tie_to_odd)
    raise ValueError(f"rounding must be one of {', '.join(ROUNDING_MODES)}; got {rounding!r}")
