"""A bit-accurate model of two fixed-point softmax designs, and ``softmax(x, **config)``.

Design ``"exp_log"`` (the survey's first design, a two-pass datapath)::

    x --quantise--> x_w --(- row max)--> d <= 0 --align--> d_e --(* log2 e)--> t = u + v
      2**v from the fraction unit, shifted by u ---------> e_i  (accumulator format)
      sum of e_i ---------------------------------------> S    (accumulator_bits, saturating)
      normalisation, one of
        "ln_subtract":   ln S = ln2 * (w + log2 k) from the LOD; s_i = 2**((d_e - ln S) * log2 e)
        "log2_subtract": s_i = 2**(t_i - (w + log2 k))     (skips ln 2 and the second log2 e)
        "divider":       s_i = e_i / S on an integer divider

Design ``"sparse_shift"`` is a *reconstruction* of the survey's second design, of which only an
abstract and three equations survive (its author could not reproduce the paper). What the abstract
claims, and how this model reads it:

* "the maximum is tracked by dynamic shifts, hidden in the pipeline": there is no first pass for
  the max. Each input is converted to t = x * log2 e = u + v at once; the running sum S is held
  relative to 2**U, U the largest integer part seen so far. When a larger u arrives, S is shifted
  right by the difference (the base-2 form of online softmax's rescaling, so the rescale costs a
  shift rather than an exponential). Inputs arrive ``sparse_lanes`` per cycle; within one cycle
  the lanes' terms are aligned to the new U and added by a tree.
* "sparsification: only valid outputs are exponentiated and stored": an element whose exponent
  lies more than ``output_frac_bits + 1`` below U can only produce an output under half an output
  ulp, so its (u, 2**v) pair is not stored and its output is the zero word. Because U only grows,
  an element dropped on arrival never becomes valid later. The model reports the fraction of
  elements that had to be stored.
* the output is s_i = (f_i * 2**-q_i) / (F * 2**Q), with f_i = 2**v_i, q_i = U - u_i and the sum
  split by the leading-one detector into F in [1, 2) and Q; "divider" divides, "log2_subtract"
  subtracts log2 of the sum in the exponent as in the first design.

Every intermediate is an ``int64`` array holding the word the hardware would hold; the config
names every width and rounding decision.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .datapath import (
    FRACTION_APPROXIMATIONS,
    LN2_SHIFT_ADD,
    LN2_SHIFT_ADD_AS_PRINTED,
    LOG2E_SHIFT_ADD,
    FractionUnit,
    constant_multiply,
    log2_via_lod,
    normalise_by_divider,
    pow2,
    shift_add_multiply,
    split_integer_fraction,
    subtract_row_max,
)
from .fixed import (
    MAX_WORD_BITS,
    FixedFormat,
    align,
    check_rounding,
    check_saturation,
    check_width,
    fit,
    quantise,
    shift_right,
)

DESIGNS = ("exp_log", "sparse_shift")
NORMALISATIONS = {"exp_log": ("ln_subtract", "log2_subtract", "divider"), "sparse_shift": ("divider", "log2_subtract")}
DEFAULT_NORMALISATION = {"exp_log": "ln_subtract", "sparse_shift": "divider"}
LOG2E_VARIANTS = ("shift_add", "multiplier")
LN2_VARIANTS = ("shift_add", "shift_add_as_printed", "multiplier")


@dataclass(frozen=True)
class HardwareConfig:
    """Every width and choice of the modelled datapath. Widths are in bits.

    design                 "exp_log" (two passes, max first) or "sparse_shift" (one pass,
                           running max by shifts, sparse storage; a reconstruction).
    input_bits             signed input word, 16; ``input_frac_bits`` of it after the point, 8
                           (range [-128, 128), step 1/256).
    exp_frac_bits          fraction bits of the exponent t = x * log2 e, of v and of the 2**v
                           mantissa, and of log2 of the sum, 12.
    accumulator_bits       unsigned sum register, 40, with ``accumulator_frac_bits`` = 22: rows
                           up to 2**18 elements cannot overflow it, and the 7 fraction bits
                           beyond the output's keep the truncation of many small terms from
                           biasing the sum.
    output_frac_bits       output word: one integer bit plus 15 fraction bits; outputs saturate
                           at exactly 1.0.
    input_rounding         how the floats are rounded into input words, "nearest_even".
    rounding               every place the datapath drops low bits (shifts, products, the
                           divider), "floor": the free choice, a wire that drops the bits.
    saturation             input words and the accumulator, "saturate" or "wrap".
    log2e                  "shift_add" (A + A>>1 - A>>4 = 1.4375) or "multiplier" (the constant
                           in ``constant_frac_bits`` = 16 bits).
    ln2                    "shift_add" (B>>1 + B>>2 - B>>4 = 0.6875), "shift_add_as_printed"
                           (B>>1 + B>>2 - B>>5 = 0.71875, as the survey prints it) or
                           "multiplier"; only ``normalisation="ln_subtract"`` uses it.
    pow2_approx            2**v on [0, 1): "linear" (1 + v), "pwl" (``pow2_segments`` = 4
                           chords) or "lut" (``pow2_lut_bits`` = 6 address bits).
    log2_approx            log2 k on [1, 2) after the leading-one detector: "linear" (k - 1),
                           "pwl" (``log2_segments`` = 4) or "lut" (``log2_lut_bits`` = 6).
    normalisation          None picks the design's own: "ln_subtract" for exp_log, "divider"
                           for sparse_shift; also "log2_subtract" (both) and "divider" (exp_log).
    sparse_lanes           inputs consumed per cycle by sparse_shift, 8.
    """

    design: str = "exp_log"
    input_bits: int = 16
    input_frac_bits: int = 8
    exp_frac_bits: int = 12
    accumulator_bits: int = 40
    accumulator_frac_bits: int = 22
    output_frac_bits: int = 15
    input_rounding: str = "nearest_even"
    rounding: str = "floor"
    saturation: str = "saturate"
    log2e: str = "shift_add"
    ln2: str = "shift_add"
    constant_frac_bits: int = 16
    pow2_approx: str = "linear"
    pow2_segments: int = 4
    pow2_lut_bits: int = 6
    log2_approx: str = "linear"
    log2_segments: int = 4
    log2_lut_bits: int = 6
    normalisation: str | None = None
    sparse_lanes: int = 8

    def __post_init__(self):
        def choice(field, value, options):
            if value not in options:
                raise ValueError(f"{field} must be one of {', '.join(options)}; got {value!r}")

        choice("design", self.design, DESIGNS)
        check_width(self.input_bits, "input_bits", maximum=32)
        check_width(self.input_frac_bits, "input_frac_bits", minimum=0)
        if self.input_frac_bits > self.input_bits:
            raise ValueError(
                f"input_frac_bits ({self.input_frac_bits}) must not exceed input_bits "
                f"({self.input_bits}): the fraction cannot be wider than the word"
            )
        check_width(self.exp_frac_bits, "exp_frac_bits", maximum=30)
        check_width(self.accumulator_bits, "accumulator_bits")
        check_width(self.accumulator_frac_bits, "accumulator_frac_bits", minimum=0)
        if self.accumulator_frac_bits + 1 > self.accumulator_bits:
            raise ValueError(
                f"accumulator_frac_bits ({self.accumulator_frac_bits}) must be less than "
                f"accumulator_bits ({self.accumulator_bits}): the sum is at least 1.0"
            )
        check_width(self.output_frac_bits, "output_frac_bits", maximum=30)
        check_width(self.constant_frac_bits, "constant_frac_bits", maximum=24)
        check_rounding(self.input_rounding, "input_rounding")
        check_rounding(self.rounding, "rounding")
        check_saturation(self.saturation, "saturation")
        choice("log2e", self.log2e, LOG2E_VARIANTS)
        choice("ln2", self.ln2, LN2_VARIANTS)
        for name in ("pow2", "log2"):
            approx = getattr(self, f"{name}_approx")
            choice(f"{name}_approx", approx, FRACTION_APPROXIMATIONS)
            segments = check_width(getattr(self, f"{name}_segments"), f"{name}_segments", maximum=1 << 30)
            if segments & (segments - 1):
                raise ValueError(f"{name}_segments must be a power of two; got {segments}")
            lut_bits = check_width(getattr(self, f"{name}_lut_bits"), f"{name}_lut_bits", maximum=20)
            # The sizes only have to fit the fraction word when that unit is actually built.
            if approx == "pwl" and segments.bit_length() - 1 > self.exp_frac_bits:
                raise ValueError(
                    f"{name}_segments ({segments}) must not exceed 2**exp_frac_bits ({1 << self.exp_frac_bits})"
                )
            if approx == "lut" and lut_bits > self.exp_frac_bits:
                raise ValueError(f"{name}_lut_bits ({lut_bits}) must not exceed exp_frac_bits ({self.exp_frac_bits})")
        if self.normalisation is not None:
            choice(f"normalisation for design {self.design!r}", self.normalisation, NORMALISATIONS[self.design])
        check_width(self.sparse_lanes, "sparse_lanes", maximum=1 << 20)
        self._check_headroom()

    def _check_headroom(self):
        """Refuse width combinations whose intermediates would not fit the exact int64 model."""
        # The exponent word before the constant multiply: the input (one bit wider after the max
        # subtraction) re-aligned to exp_frac_bits, times a constant below 2 at constant_frac_bits.
        exponent_bits = self.input_bits + 1 + max(0, self.exp_frac_bits - self.input_frac_bits)
        if exponent_bits + self.constant_frac_bits + 1 > MAX_WORD_BITS:
            raise ValueError(
                f"input_bits ({self.input_bits}) with exp_frac_bits ({self.exp_frac_bits}) over "
                f"input_frac_bits ({self.input_frac_bits}) and constant_frac_bits ({self.constant_frac_bits}) "
                f"need {exponent_bits + self.constant_frac_bits + 1} bits, more than the {MAX_WORD_BITS} modelled"
            )
        if self.accumulator_frac_bits + 1 + self.output_frac_bits > MAX_WORD_BITS:
            raise ValueError(
                f"accumulator_frac_bits ({self.accumulator_frac_bits}) + output_frac_bits "
                f"({self.output_frac_bits}) leave no room for the divider's numerator in {MAX_WORD_BITS} bits"
            )

    @property
    def resolved_normalisation(self) -> str:
        return self.normalisation or DEFAULT_NORMALISATION[self.design]

    @property
    def input_format(self) -> FixedFormat:
        return FixedFormat(self.input_bits, self.input_frac_bits)

    @property
    def accumulator_format(self) -> FixedFormat:
        return FixedFormat(self.accumulator_bits, self.accumulator_frac_bits, signed=False)

    def fraction_unit(self, function: str) -> FractionUnit:
        return FractionUnit(
            function,
            getattr(self, f"{function}_approx"),
            self.exp_frac_bits,
            segments=getattr(self, f"{function}_segments"),
            address_bits=getattr(self, f"{function}_lut_bits"),
            rounding=self.rounding,
        )

    def replace(self, **changes) -> HardwareConfig:
        return dataclasses.replace(self, **changes)


def make_config(**config) -> HardwareConfig:
    """HardwareConfig from keyword arguments, naming the valid fields when one is misspelt."""
    known = {field.name for field in dataclasses.fields(HardwareConfig)}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(f"unknown config field(s) {', '.join(unknown)}; valid fields: {', '.join(sorted(known))}")
    return HardwareConfig(**config)


@dataclass
class DatapathResult:
    """The output words of one call, and what the sparse design had to store."""

    words: np.ndarray
    frac_bits: int
    stored_fraction: float | None = None

    @property
    def values(self) -> np.ndarray:
        return np.ldexp(self.words.astype(np.float64), -self.frac_bits)


class _Constants:
    """The two constant multipliers as configured."""

    def __init__(self, config: HardwareConfig):
        self.config = config

    def log2e(self, words):
        if self.config.log2e == "shift_add":
            return shift_add_multiply(words, LOG2E_SHIFT_ADD, self.config.rounding)
        return constant_multiply(words, 1.0 / math.log(2.0), self.config.constant_frac_bits, self.config.rounding)

    def ln2(self, words):
        if self.config.ln2 == "multiplier":
            return constant_multiply(words, math.log(2.0), self.config.constant_frac_bits, self.config.rounding)
        terms = LN2_SHIFT_ADD if self.config.ln2 == "shift_add" else LN2_SHIFT_ADD_AS_PRINTED
        return shift_add_multiply(words, terms, self.config.rounding)


def _accumulate(terms, config: HardwareConfig) -> np.ndarray:
    """Row sum in the accumulator register.

    All terms are non-negative, so a saturating accumulator that clamps after every addition ends
    where clamping the exact total ends, and a wrapping one ends at the total modulo 2**bits.
    """
    total = np.asarray(terms, dtype=np.int64).sum(axis=-1, keepdims=True)
    return fit(total, config.accumulator_format, config.saturation)


def _usable_sum(total):
    # A wrapped accumulator can read zero; the hardware would then divide by (or take the log of)
    # zero. The model reads such a sum as one ulp so the garbage stays finite and visible.
    return np.maximum(total, 1)


def _exp_log(x_words, config: HardwareConfig, constants: _Constants, pow2_unit, log2_unit):
    fe, fa, fo, rounding = config.exp_frac_bits, config.accumulator_frac_bits, config.output_frac_bits, config.rounding
    differences, _ = subtract_row_max(x_words)
    differences = align(differences, config.input_frac_bits, fe, rounding)
    exponents = constants.log2e(differences)
    terms = pow2(exponents, fe, pow2_unit, fa, rounding)
    total = _usable_sum(_accumulate(terms, config))
    normalisation = config.resolved_normalisation
    if normalisation == "divider":
        return normalise_by_divider(terms, total, fo, rounding)
    log2_total = log2_via_lod(total, fa, fe, log2_unit)
    if normalisation == "log2_subtract":
        return pow2(exponents - log2_total, fe, pow2_unit, fo, rounding)
    # ln_subtract, as the survey draws it: ln F = ln2 * log2 F, subtracted from the stored
    # x_i - max, and the difference sent through log2 e and 2**(.) a second time.
    ln_total = constants.ln2(log2_total)
    return pow2(constants.log2e(differences - ln_total), fe, pow2_unit, fo, rounding)


def _sparse_shift(x_words, config: HardwareConfig, constants: _Constants, pow2_unit, log2_unit):
    fe, fa, fo, rounding = config.exp_frac_bits, config.accumulator_frac_bits, config.output_frac_bits, config.rounding
    exponents = constants.log2e(align(x_words, config.input_frac_bits, fe, rounding))
    integer_parts, fractions = split_integer_fraction(exponents, fe)
    mantissas = align((np.int64(1) << fe) + pow2_unit(fractions), fe, fa, rounding)

    # Furthest below the running max an element may lie and still yield a non-zero output word.
    keep_distance = fo + 1
    n = x_words.shape[-1]
    lanes = config.sparse_lanes
    running_max = integer_parts.min(axis=-1, keepdims=True)  # S starts at zero, any start will do
    running_sum = np.zeros_like(running_max)
    stored = np.zeros(running_max.shape, dtype=np.int64)
    for start in range(0, n, lanes):
        cycle_parts = integer_parts[..., start : start + lanes]
        new_max = np.maximum(running_max, cycle_parts.max(axis=-1, keepdims=True))
        distance = new_max - cycle_parts
        aligned_terms = shift_right(mantissas[..., start : start + lanes], distance, rounding)
        running_sum = shift_right(running_sum, new_max - running_max, rounding) + aligned_terms.sum(
            axis=-1, keepdims=True
        )
        running_sum = fit(running_sum, config.accumulator_format, config.saturation)
        stored += (distance <= keep_distance).sum(axis=-1, keepdims=True)
        running_max = new_max
    total = _usable_sum(running_sum)

    distance = running_max - integer_parts
    valid = distance <= keep_distance
    if config.resolved_normalisation == "divider":
        terms = shift_right(mantissas, distance, rounding)
        outputs = normalise_by_divider(terms, total, fo, rounding)
    else:
        relative_exponents = exponents - (running_max << fe)
        outputs = pow2(relative_exponents - log2_via_lod(total, fa, fe, log2_unit), fe, pow2_unit, fo, rounding)
    stored_fraction = float(stored.sum() / max(stored.size * n, 1))
    return np.where(valid, outputs, 0), stored_fraction


def run_datapath(x, config: HardwareConfig) -> DatapathResult:
    """Push a float array through the modelled hardware, softmax over the last axis."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        raise ValueError("softmax needs at least one axis; got a scalar")
    if x.shape[-1] == 0:
        raise ValueError("softmax over an empty last axis is undefined")
    if x.size == 0:
        return DatapathResult(np.zeros(x.shape, dtype=np.int64), config.output_frac_bits)
    x_words = quantise(x, config.input_format, config.input_rounding, config.saturation)
    constants = _Constants(config)
    pow2_unit, log2_unit = config.fraction_unit("pow2"), config.fraction_unit("log2")
    stored_fraction = None
    if config.design == "exp_log":
        words = _exp_log(x_words, config, constants, pow2_unit, log2_unit)
    else:
        words, stored_fraction = _sparse_shift(x_words, config, constants, pow2_unit, log2_unit)
    # The output register holds [0, 1]: a probability cannot exceed one, so an approximation that
    # overshoots is clamped there rather than wrapped.
    words = np.clip(words, 0, np.int64(1) << config.output_frac_bits)
    return DatapathResult(words, config.output_frac_bits, stored_fraction)


def softmax(x, **config) -> np.ndarray:
    """Softmax over the last axis of ``x`` as the modelled fixed-point hardware computes it.

    ``config`` takes any field of :class:`HardwareConfig` (all have defaults); the result is the
    float64 decoding of the hardware's output words, so it is exact to the bit.
    """
    return run_datapath(x, make_config(**config)).values
