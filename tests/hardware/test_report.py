"""The accuracy report: its metrics on hand-made rows, and a miniature end-to-end run."""

import argparse
import json
import math

import numpy as np
import pytest

from fastsoftmax.hardware import report


def test_metrics_of_a_perfect_answer():
    exact = np.array([[0.25, 0.75], [0.5, 0.5]])
    metrics = report.accuracy_metrics(exact, exact.copy(), 15)
    assert metrics == {"max_abs_error": 0.0, "mean_kl": 0.0, "top1_agreement": 1.0, "max_sum_deviation": 0.0}


def test_metrics_hand_computed():
    exact = np.array([[0.25, 0.75], [0.6, 0.4]])
    approx = np.array([[0.5, 0.5], [0.6, 0.3]])
    metrics = report.accuracy_metrics(exact, approx, 15)
    assert metrics["max_abs_error"] == pytest.approx(0.25)
    # row 1: q = (0.5, 0.5); row 2: q renormalised to (2/3, 1/3)
    kl_1 = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)
    kl_2 = 0.6 * math.log(0.6 / (2 / 3)) + 0.4 * math.log(0.4 / (1 / 3))
    assert metrics["mean_kl"] == pytest.approx((kl_1 + kl_2) / 2)
    # row 1 ties, and the comparator's first index is not the exact argmax
    assert metrics["top1_agreement"] == 0.5
    assert metrics["max_sum_deviation"] == pytest.approx(0.1)


def test_zero_words_count_as_at_most_one_ulp():
    # With 4 fraction bits a zero word says "below 1/16": an exact 0.01 there costs nothing,
    # an exact 0.2 there is charged as if the word had said 1/16.
    exact = np.array([[0.99, 0.01], [0.8, 0.2]])
    approx = np.array([[0.99, 0.0], [0.8, 0.0]])
    metrics = report.accuracy_metrics(exact, approx, 4)
    q2 = np.array([0.8, 1 / 16]) / (0.8 + 1 / 16)
    kl_2 = float((exact[1] * np.log(exact[1] / q2)).sum())
    assert metrics["mean_kl"] == pytest.approx(kl_2 / 2)


def test_width_knob_keeps_units_addressable():
    config = report.config_for_width(4, pow2_approx="lut", pow2_lut_bits=10, pow2_segments=64)
    assert (config.exp_frac_bits, config.pow2_lut_bits, config.pow2_segments, config.log2_lut_bits) == (4, 4, 16, 4)
    assert config.accumulator_frac_bits == 14 and config.input_bits == 12
    assert report.config_for_width(20).constant_frac_bits == 24


def test_input_sets_are_realistic_in_shape_and_scale():
    sets = {s.name: s for s in report.input_sets(np.random.default_rng(0), quick=True)}
    assert sets["vocab-32000"].rows.shape == (16, 32000)
    vocab = sets["vocab-32000"].rows
    gaps = np.sort(vocab, axis=-1)[:, -1] - np.median(vocab, axis=-1)
    assert (gaps > 5).all() and (gaps < 40).all()
    spread = sets["attention-512"].rows.std(axis=-1)
    assert spread.min() > 0.2 and spread.max() < 8
    assert np.abs(sets["uniform-8"].rows).max() <= 8


def test_miniature_run_writes_table_json_and_plot(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    small = [
        report.InputSet("attention-32", "tiny attention", report.attention_scores(rng, 4, 32)),
        report.InputSet("gauss-2", "tiny gaussian", rng.normal(0, 2, (4, 16))),
    ]
    variants = tuple(
        v for v in report.VARIANTS if v.name in ("exact-rounded", "survey", "divider-ideal", "sparse-divider")
    )
    monkeypatch.setattr(report, "input_sets", lambda rng, quick: small)
    monkeypatch.setattr(report, "VARIANTS", variants)
    monkeypatch.setattr(report, "QUICK_WIDTHS", (8, 12))
    monkeypatch.setattr(report, "ABLATIONS", report.ABLATIONS[:2])

    parser = argparse.ArgumentParser()
    report.add_arguments(parser)
    assert report.run(parser.parse_args(["--quick", "--out", str(tmp_path), "--seed", "3"])) == 0

    printed = capsys.readouterr().out
    assert "Largest absolute error, worst input set" in printed and "Verdict" in printed
    document = json.loads((tmp_path / "hw_report.json").read_text())
    assert document["widths"] == [8, 12] and document["seed"] == 3
    assert len(document["results"]) == 4 * 2 * 2
    ideal = [r for r in document["results"] if r["variant"] == "divider-ideal"]
    survey = [r for r in document["results"] if r["variant"] == "survey"]
    assert max(r["max_abs_error"] for r in ideal) < min(r["max_abs_error"] for r in survey)
    assert all("stored_fraction" in r for r in document["results"] if r["variant"] == "sparse-divider")
    verdict = {line["variant"]: line for line in document["verdict"]}
    # rounding alone costs half an ulp: 2**-9 at W=8 meets 1e-2 but not 1e-3, 2**-13 at W=12 does
    assert verdict["exact-rounded"]["narrowest_width_meeting"]["0.01"] == 8
    assert verdict["exact-rounded"]["narrowest_width_meeting"]["0.001"] == 12
    assert verdict["survey"]["narrowest_width_meeting"]["0.001"] is None
    assert (tmp_path / "hw_report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_line_defaults():
    parser = argparse.ArgumentParser()
    report.add_arguments(parser)
    args = parser.parse_args([])
    assert (args.quick, str(args.out), args.seed) == (False, "hw_report", 0)


def test_an_unwritable_out_is_refused_before_the_sweep(tmp_path, monkeypatch, capsys):
    from fastsoftmax import cli

    def no_sweep(*args, **kwargs):
        raise AssertionError("the sweep ran before --out was checked")

    monkeypatch.setattr(report, "sweep", no_sweep)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    # a folder under a regular file cannot be made even by root, unlike one under a chmod'ed folder
    for out, reason in ((blocker / "sub", "Not a directory"), (blocker, "not a folder")):
        assert cli.main(["hw-report", "--quick", "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.count("\n") == 1 and str(out) in captured.err and reason in captured.err


def test_a_missing_out_folder_is_created_up_front(tmp_path):
    folder = tmp_path / "new" / "nested"
    assert report.unwritable_reason(folder) is None
    assert folder.is_dir() and list(folder.iterdir()) == []
