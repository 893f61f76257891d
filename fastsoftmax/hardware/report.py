"""``fastsoftmax hw-report``: what each fixed-point softmax design costs in accuracy.

The sweep runs every design variant at a range of datapath widths W over a set of realistic
inputs and compares the decoded outputs with the float64 softmax of the same (unquantised) floats,
so input quantisation counts as part of the hardware's error.

A width W sets every fraction in the datapath at once (the knob a designer turns first):
input words of W + 8 bits with W after the point (range +-128), W fraction bits for the exponent,
the 2**v mantissa and the output, an accumulator with W + 10 fraction bits (guard bits, so that
truncating a thousand small terms costs about one output ulp) in a W + 28-bit word (rows up to
2**18), and multiplier constants of min(W + 4, 24) bits. Table and segment counts are part of a variant's
name and stay fixed (capped at W).

Metrics, per input set: the largest |hardware - exact| over all elements; the mean over rows of
KL(exact || hardware), where a zero output word is read as the exact value capped at one output
ulp (a zero word says "below one ulp", which the format cannot refine) and the row is then
renormalised; top-1 agreement, the share of rows whose first largest output word (what a
comparator tree reports) sits at the exact argmax; and the largest |sum of the row - 1|.
Every stage of every design is monotone, so the largest input always receives a largest output
word: a top-1 miss is a tie at the top, a loss of resolution rather than a reordering. The tables
show top-1 over the attention and vocabulary sets, where it decides something (noise rows have
near-equal leaders that no output word resolves); the JSON holds it for every set.

The baseline ``exact-rounded`` is the exact softmax rounded to the W-bit output word: the best any
datapath with that output format can do, and the yardstick for the row-sum and KL columns, which
on long rows are dominated by outputs that fall below one ulp.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .model import HardwareConfig, run_datapath

# A design meets a target when, on every input set, its largest absolute error is at most the
# target. (Top-1 is not part of the test: every design is monotone, see above.)
ACCURACY_TARGETS = (1e-1, 1e-2, 1e-3, 1e-4)


# ----------------------------------------------------------------------------------------------
# Inputs


@dataclass
class InputSet:
    name: str
    description: str
    rows: np.ndarray


def attention_scores(rng, rows: int, width: int, head_dim: int = 64) -> np.ndarray:
    """q.k / sqrt(d) for Gaussian queries and keys, shaped like trained attention maps.

    Query norms vary by row (score spreads from about 0.5 to 4), and 2 % of the keys are pulled
    toward the query, which gives each row a few clearly attended positions.
    """
    queries = rng.standard_normal((rows, 1, head_dim)) * rng.uniform(0.5, 4.0, (rows, 1, 1))
    keys = rng.standard_normal((rows, width, head_dim))
    attended = rng.random((rows, width, 1)) < 0.02
    keys = (
        keys
        + attended
        * rng.uniform(0.5, 1.5, (rows, width, 1))
        * queries
        / np.linalg.norm(queries, axis=-1, keepdims=True)
        * 3.0
    )
    return (queries * keys).sum(-1) / math.sqrt(head_dim)


def vocabulary_logits(rng, rows: int, vocab: int) -> np.ndarray:
    """Next-token logits: a Gaussian bulk plus a handful of candidates standing out of it.

    The bulk has a standard deviation of 1.5 to 3 (per row); 1 to 20 candidate tokens sit 2 to 12
    above the bulk's maximum, spread over a few units, so top-1 probabilities range from a few
    percent to nearly one, as in a language model's output.
    """
    logits = rng.standard_normal((rows, vocab)) * rng.uniform(1.5, 3.0, (rows, 1))
    for row in logits:
        candidates = rng.choice(vocab, size=rng.integers(1, 21), replace=False)
        row[candidates] = row.max() + rng.uniform(2.0, 12.0) - rng.exponential(1.5, candidates.size)
    return logits


def input_sets(rng, quick: bool) -> list[InputSet]:
    rows = 32 if quick else 256
    attention_widths = (64, 512, 2048) if quick else (128, 1024, 4096, 16384)
    vocab, vocab_rows = (32000, 16) if quick else (128256, 32)
    sets = [
        InputSet(f"attention-{n}", f"attention scores q.k/sqrt(64), {n} keys", attention_scores(rng, rows, n))
        for n in attention_widths
    ]
    sets.append(
        InputSet(
            f"vocab-{vocab}",
            f"next-token logits over a {vocab}-token vocabulary",
            vocabulary_logits(rng, vocab_rows, vocab),
        )
    )
    for half_width in (1.0, 8.0, 32.0):
        sets.append(
            InputSet(
                f"uniform-{half_width:g}",
                f"uniform noise on [-{half_width:g}, {half_width:g}], 1024 wide",
                rng.uniform(-half_width, half_width, (rows, 1024)),
            )
        )
    for sigma in (0.5, 2.0, 8.0):
        sets.append(
            InputSet(
                f"gauss-{sigma:g}", f"Gaussian noise, sigma {sigma:g}, 1024 wide", rng.normal(0.0, sigma, (rows, 1024))
            )
        )
    return sets


# ----------------------------------------------------------------------------------------------
# Variants and widths


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    settings: dict | None = field(default_factory=dict)  # None: the exact-rounded baseline


BASELINE = Variant("exact-rounded", "float64 softmax rounded to the nearest W-bit output word (no datapath)", None)

VARIANTS = (
    BASELINE,
    Variant(
        "survey",
        "exp_log, ln-subtract, 1+v, LOD k-1, shift-add log2e and ln2 (0.1011b): the survey's design",
        dict(design="exp_log", normalisation="ln_subtract"),
    ),
    Variant(
        "survey-ln2-printed",
        "as survey, ln2 = B>>1+B>>2-B>>5 (0.71875) as printed",
        dict(design="exp_log", normalisation="ln_subtract", ln2="shift_add_as_printed"),
    ),
    Variant(
        "log2-subtract",
        "as survey, but log2 F subtracted in the exponent (no ln2, no second log2e)",
        dict(design="exp_log", normalisation="log2_subtract"),
    ),
    Variant(
        "ln-subtract-pwl4",
        "as survey, 2**v and log2 k by 4-segment PWL",
        dict(design="exp_log", normalisation="ln_subtract", pow2_approx="pwl", log2_approx="pwl"),
    ),
    Variant(
        "log2-subtract-pwl8",
        "log2-subtract, 2**v and log2 k by 8-segment PWL, shift-add log2e",
        dict(
            design="exp_log",
            normalisation="log2_subtract",
            pow2_approx="pwl",
            log2_approx="pwl",
            pow2_segments=8,
            log2_segments=8,
        ),
    ),
    Variant(
        "log2-subtract-lut10-mul",
        "log2-subtract, 1025-entry tables, log2e by a multiplier",
        dict(
            design="exp_log",
            normalisation="log2_subtract",
            pow2_approx="lut",
            log2_approx="lut",
            pow2_lut_bits=10,
            log2_lut_bits=10,
            log2e="multiplier",
        ),
    ),
    Variant(
        "divider-linear",
        "exp_log with a divider, 1+v, shift-add log2e",
        dict(design="exp_log", normalisation="divider"),
    ),
    Variant(
        "divider-pwl4",
        "exp_log with a divider, 4-segment PWL 2**v, shift-add log2e",
        dict(design="exp_log", normalisation="divider", pow2_approx="pwl"),
    ),
    Variant(
        "divider-lut10-mul",
        "exp_log with a divider, 1025-entry 2**v table, log2e multiplier",
        dict(design="exp_log", normalisation="divider", pow2_approx="lut", pow2_lut_bits=10, log2e="multiplier"),
    ),
    Variant(
        "divider-ideal",
        "exp_log with a divider, a 2**v table entry for every word, log2e multiplier, "
        "round to nearest: the datapath's own limit",
        dict(
            design="exp_log",
            normalisation="divider",
            pow2_approx="lut",
            pow2_lut_bits=20,
            log2e="multiplier",
            rounding="nearest_even",
        ),
    ),
    Variant(
        "sparse-divider",
        "sparse_shift (reconstructed second design), divider, 1+v, shift-add log2e",
        dict(design="sparse_shift", normalisation="divider"),
    ),
    Variant(
        "sparse-divider-pwl4",
        "sparse_shift, divider, 4-segment PWL 2**v",
        dict(design="sparse_shift", normalisation="divider", pow2_approx="pwl"),
    ),
    Variant(
        "sparse-log2-subtract",
        "sparse_shift, log2 F subtracted in the exponent, 1+v, LOD k-1",
        dict(design="sparse_shift", normalisation="log2_subtract"),
    ),
)

QUICK_WIDTHS = (6, 8, 10, 12, 16)
FULL_WIDTHS = (4, 6, 8, 10, 12, 14, 16, 20)


def config_for_width(width: int, **settings) -> HardwareConfig:
    values = dict(
        input_bits=width + 8,
        input_frac_bits=width,
        exp_frac_bits=width,
        accumulator_bits=width + 28,
        accumulator_frac_bits=width + 10,
        output_frac_bits=width,
        constant_frac_bits=min(width + 4, 24),
    )
    values.update(settings)
    # Table and segment counts are fixed per variant but cannot exceed what W fraction bits address.
    defaults = HardwareConfig()
    for name in ("pow2", "log2"):
        values[f"{name}_lut_bits"] = min(values.get(f"{name}_lut_bits", getattr(defaults, f"{name}_lut_bits")), width)
        values[f"{name}_segments"] = min(
            values.get(f"{name}_segments", getattr(defaults, f"{name}_segments")), 1 << width
        )
    return HardwareConfig(**values)


# ----------------------------------------------------------------------------------------------
# Metrics


def exact_softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def accuracy_metrics(exact: np.ndarray, approx: np.ndarray, output_frac_bits: int) -> dict:
    ulp = 2.0**-output_frac_bits
    q = np.where(approx > 0, approx, np.minimum(exact, ulp))
    q = q / q.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl_terms = np.where(exact > 0, exact * (np.log(exact) - np.log(q)), 0.0)
    top_agrees = approx.argmax(axis=-1) == exact.argmax(axis=-1)
    sums = approx.sum(axis=-1)
    return {
        "max_abs_error": float(np.abs(approx - exact).max()),
        "mean_kl": float(max(kl_terms.sum(axis=-1).mean(), 0.0)),
        "top1_agreement": float(top_agrees.mean()),
        "max_sum_deviation": float(np.abs(sums - 1.0).max()),
    }


def evaluate_baseline(width: int, exact: np.ndarray) -> dict:
    return accuracy_metrics(exact, np.ldexp(np.rint(np.ldexp(exact, width)), -width), width)


def evaluate(config: HardwareConfig, inputs: InputSet, exact: np.ndarray) -> dict:
    result = run_datapath(inputs.rows, config)
    metrics = accuracy_metrics(exact, result.values, config.output_frac_bits)
    if result.stored_fraction is not None:
        metrics["stored_fraction"] = result.stored_fraction
    return metrics


def where_top1_matters(name: str) -> bool:
    return name.startswith(("attention", "vocab"))


def worst_case(per_set: dict[str, dict]) -> dict:
    """Worst of each metric over the input sets (top-1 over attention and vocabulary only)."""
    return {
        "max_abs_error": max(m["max_abs_error"] for m in per_set.values()),
        "mean_kl": max(m["mean_kl"] for m in per_set.values()),
        "top1_agreement": min(m["top1_agreement"] for name, m in per_set.items() if where_top1_matters(name)),
        "max_sum_deviation": max(m["max_sum_deviation"] for m in per_set.values()),
    }


def meets(worst: dict, target: float) -> bool:
    return worst["max_abs_error"] <= target


# ----------------------------------------------------------------------------------------------
# Sweeps


def sweep(sets: list[InputSet], variants, widths, log=print) -> list[dict]:
    exact = {s.name: exact_softmax(s.rows) for s in sets}
    records = []
    for variant in variants:
        started = time.perf_counter()
        for width in widths:
            for inputs in sets:
                if variant.settings is None:
                    metrics = evaluate_baseline(width, exact[inputs.name])
                else:
                    metrics = evaluate(config_for_width(width, **variant.settings), inputs, exact[inputs.name])
                records.append({"variant": variant.name, "width": width, "inputs": inputs.name, **metrics})
        log(f"  {variant.name:<26} {time.perf_counter() - started:5.1f} s")
    return records


# One change at a time from an accurate reference, to split the survey design's error into its
# sources: each row swaps one accurate part for the survey's cheap one.
ABLATION_WIDTH = 16
ABLATION_REFERENCE = dict(
    design="exp_log",
    normalisation="ln_subtract",
    log2e="multiplier",
    ln2="multiplier",
    pow2_approx="lut",
    pow2_lut_bits=ABLATION_WIDTH,
    log2_approx="lut",
    log2_lut_bits=ABLATION_WIDTH,
    rounding="nearest_even",
)
ABLATIONS = (
    ("reference (multipliers, a table entry per word, nearest)", {}),
    ("rounding = floor (bits dropped by wires)", dict(rounding="floor")),
    ("accumulator fraction = W (no guard bits)", dict(accumulator_frac_bits=ABLATION_WIDTH)),
    ("log2e = A + A>>1 - A>>4", dict(log2e="shift_add")),
    ("ln2 = B>>1 + B>>2 - B>>4", dict(ln2="shift_add")),
    ("ln2 = B>>1 + B>>2 - B>>5 (as printed)", dict(ln2="shift_add_as_printed")),
    ("log2e and ln2 (0.1011b) both shift-add", dict(log2e="shift_add", ln2="shift_add")),
    ("2**v = 1 + v", dict(pow2_approx="linear")),
    ("log2 k = k - 1", dict(log2_approx="linear")),
    ("2**v and log2 k by 4-segment PWL", dict(pow2_approx="pwl", log2_approx="pwl")),
    (
        "2**v and log2 k by 65-entry tables",
        dict(pow2_approx="lut", log2_approx="lut", pow2_lut_bits=6, log2_lut_bits=6),
    ),
    ("2**v = 1 + v and log2 k = k - 1", dict(pow2_approx="linear", log2_approx="linear")),
    (
        "all of the survey's approximations, floor",
        dict(pow2_approx="linear", log2_approx="linear", log2e="shift_add", ln2="shift_add", rounding="floor"),
    ),
)


def ablation(sets: list[InputSet]) -> list[dict]:
    exact = {s.name: exact_softmax(s.rows) for s in sets}
    rows = []
    for label, change in ABLATIONS:
        config = config_for_width(ABLATION_WIDTH, **{**ABLATION_REFERENCE, **change})
        per_set = {s.name: evaluate(config, s, exact[s.name]) for s in sets}
        rows.append({"change": label, "settings": change, **worst_case(per_set)})
    return rows


def summarise(records: list[dict], variants, widths) -> dict:
    summary = {}
    for variant in variants:
        for width in widths:
            per_set = {r["inputs"]: r for r in records if r["variant"] == variant.name and r["width"] == width}
            summary[(variant.name, width)] = worst_case(per_set)
    return summary


def verdict(summary: dict, variants, widths) -> list[dict]:
    """For each design and accuracy target, the narrowest swept width that meets it, if any."""
    lines = []
    for variant in variants:
        best = min(summary[(variant.name, w)]["max_abs_error"] for w in widths)
        reached = {}
        for target in ACCURACY_TARGETS:
            passing = [w for w in widths if meets(summary[(variant.name, w)], target)]
            reached[f"{target:g}"] = min(passing) if passing else None
        lines.append(
            {
                "variant": variant.name,
                "best_max_abs_error": best,
                "best_mean_kl": min(summary[(variant.name, w)]["mean_kl"] for w in widths),
                "narrowest_width_meeting": reached,
            }
        )
    return lines


# ----------------------------------------------------------------------------------------------
# Output


def _format_number(value: float) -> str:
    if value == 0:
        return "0"
    return f"{value:.1e}"


def format_matrix(title: str, summary: dict, variants, widths, metric: str, fmt) -> str:
    header = f"{'design':<26}" + "".join(f"{'W=' + str(w):>9}" for w in widths)
    lines = [title, header, "-" * len(header)]
    for variant in variants:
        lines.append(f"{variant.name:<26}" + "".join(f"{fmt(summary[(variant.name, w)][metric]):>9}" for w in widths))
    return "\n".join(lines)


def format_per_set(records: list[dict], variants, width: int, set_names: list[str]) -> str:
    short = [name.replace("attention", "attn") for name in set_names]
    header = f"{'design':<26}" + "".join(f"{name:>12}" for name in short)
    lines = [f"Largest absolute error per input set at W={width}", header, "-" * len(header)]
    for variant in variants:
        cells = []
        for name in set_names:
            record = next(
                r for r in records if r["variant"] == variant.name and r["width"] == width and r["inputs"] == name
            )
            cells.append(f"{_format_number(record['max_abs_error']):>12}")
        lines.append(f"{variant.name:<26}" + "".join(cells))
    return "\n".join(lines)


def format_ablation(rows: list[dict]) -> str:
    title = "change from the reference at W=" + str(ABLATION_WIDTH)
    header = f"{title:<62}{'max|err|':>10}{'mean KL':>10}{'top-1':>8}{'|sum-1|':>10}"
    lines = ["Where the survey design's error comes from (worst over all input sets)", header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row['change']:<62}{_format_number(row['max_abs_error']):>10}{_format_number(row['mean_kl']):>10}"
            f"{row['top1_agreement']:>8.3f}{_format_number(row['max_sum_deviation']):>10}"
        )
    return "\n".join(lines)


def format_verdict(lines: list[dict], summary: dict, widths) -> str:
    out = [
        (
            f"Verdict: narrowest W at which max|err| <= target on every input set; "
            f"floors are the best over W={widths[0]}..{widths[-1]}"
        )
    ]
    header = f"{'design':<26}{'err floor':>10}{'KL floor':>10}" + "".join(
        f"{'<=' + format(t, 'g'):>9}" for t in ACCURACY_TARGETS
    )
    out += [header, "-" * len(header)]
    for line in lines:
        cells = "".join(
            f"{('W=' + str(w)) if w is not None else 'never':>9}" for w in line["narrowest_width_meeting"].values()
        )
        out.append(
            f"{line['variant']:<26}{_format_number(line['best_max_abs_error']):>10}"
            f"{_format_number(line['best_mean_kl']):>10}{cells}"
        )
    return "\n".join(out)


def plot(summary: dict, variants, widths, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    colours = plt.get_cmap("tab20").colors
    for index, variant in enumerate(variants):
        if variant.settings is None:
            style = dict(color="black", linewidth=2.2, marker="s", markersize=4)
        else:
            style = dict(
                color=colours[(2 * index) % 20 + (index // 10) % 2],
                marker="o",
                markersize=3,
                linestyle="--" if variant.settings.get("design") == "sparse_shift" else "-",
            )
        errors = [summary[(variant.name, w)]["max_abs_error"] for w in widths]
        kls = [max(summary[(variant.name, w)]["mean_kl"], 1e-12) for w in widths]
        axes[0].semilogy(widths, errors, label=variant.name, **style)
        axes[1].semilogy(widths, kls, label=variant.name, **style)
    for target in ACCURACY_TARGETS:
        axes[0].axhline(target, color="grey", linewidth=0.6, linestyle=":")
    axes[0].set_title("largest |hardware - exact|, worst input set")
    axes[1].set_title("mean KL(exact || hardware), worst input set")
    for axis in axes:
        axis.set_xlabel("datapath fraction bits W")
        axis.set_xticks(list(widths))
        axis.grid(True, which="major", alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower left")
    figure.suptitle("Fixed-point softmax designs: error against bit width")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


# ----------------------------------------------------------------------------------------------
# Command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick", action="store_true", help="fewer rows, widths and input sizes (well under a minute on a laptop CPU)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("hw_report"),
        help="directory for hw_report.json and hw_report.png (default: ./hw_report)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")


def unwritable_reason(folder: Path) -> str | None:
    """Why nothing can be written in ``folder`` (created, with its parents, if missing), or None
    when a file could be. Asked before the sweep, so that a bad --out costs no minutes of it."""
    if folder.exists() and not folder.is_dir():
        return "it is a file, not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def run(args: argparse.Namespace) -> int:
    reason = unwritable_reason(Path(args.out))
    if reason is not None:
        print(f"fastsoftmax hw-report: cannot write to {args.out}: {reason}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    sets = input_sets(rng, args.quick)
    widths = QUICK_WIDTHS if args.quick else FULL_WIDTHS
    print(
        f"hw-report ({'quick' if args.quick else 'full'}): {len(VARIANTS)} designs x widths {list(widths)} "
        f"x {len(sets)} input sets",
        flush=True,
    )
    records = sweep(sets, VARIANTS, widths, log=lambda line: print(line, flush=True))
    ablation_rows = ablation(sets)
    summary = summarise(records, VARIANTS, widths)
    verdict_lines = verdict(summary, VARIANTS, widths)

    per_set_width = 12 if 12 in widths else widths[len(widths) // 2]
    print()
    print(
        format_matrix(
            "Largest absolute error, worst input set", summary, VARIANTS, widths, "max_abs_error", _format_number
        )
    )
    print()
    print(
        format_matrix(
            "Mean KL divergence from the exact softmax, worst input set",
            summary,
            VARIANTS,
            widths,
            "mean_kl",
            _format_number,
        )
    )
    print()
    print(
        format_matrix(
            "Top-1 agreement, worst attention or vocabulary set",
            summary,
            VARIANTS,
            widths,
            "top1_agreement",
            lambda v: f"{v:.3f}",
        )
    )
    print()
    print(
        format_matrix(
            "Largest |row sum - 1|, worst input set", summary, VARIANTS, widths, "max_sum_deviation", _format_number
        )
    )
    print()
    print(format_per_set(records, VARIANTS, per_set_width, [s.name for s in sets]))
    stored = [
        r
        for r in records
        if "stored_fraction" in r and r["width"] == per_set_width and r["variant"] == "sparse-divider"
    ]
    if stored:
        print()
        print(
            f"sparse_shift: fraction of elements stored at W={per_set_width}: "
            + ", ".join(f"{r['inputs']} {r['stored_fraction']:.3f}" for r in stored)
        )
    print()
    print(format_ablation(ablation_rows))
    print()
    print(format_verdict(verdict_lines, summary, widths))

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    document = {
        "mode": "quick" if args.quick else "full",
        "seed": args.seed,
        "widths": list(widths),
        "width_meaning": "input W+8 bits with W fraction bits; W fraction bits for exponent, mantissa, "
        "accumulator and output; accumulator W+20 bits; constants min(W+4, 24) bits",
        "accuracy_targets": list(ACCURACY_TARGETS),
        "input_sets": {s.name: {"description": s.description, "shape": list(s.rows.shape)} for s in sets},
        "designs": {v.name: {"description": v.description, "settings": v.settings} for v in VARIANTS},
        "default_config": asdict(HardwareConfig()),
        "results": records,
        "worst_case": [{"variant": name, "width": width, **metrics} for (name, width), metrics in summary.items()],
        "ablation": {"width": ABLATION_WIDTH, "reference": ABLATION_REFERENCE, "rows": ablation_rows},
        "verdict": verdict_lines,
    }
    (out_dir / "hw_report.json").write_text(json.dumps(document, indent=1))
    try:
        plot(summary, VARIANTS, widths, out_dir / "hw_report.png")
    except ImportError:  # the table above and the JSON are the report; the chart is optional
        print(
            "\nplot not drawn: matplotlib is not installed (pip install matplotlib, or pip install 'fastsoftmax[plot]')"
        )
        print(f"wrote {out_dir / 'hw_report.json'} in {time.perf_counter() - started:.1f} s")
        return 0
    print(
        f"\nwrote {out_dir / 'hw_report.json'} and {out_dir / 'hw_report.png'} in {time.perf_counter() - started:.1f} s"
    )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastsoftmax.hardware.report")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
