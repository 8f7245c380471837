"""JSON without float noise: 12 significant digits, whole numbers as integers, exact keys kept."""

from __future__ import annotations

import json

import numpy as np

from rankmodels import jsontext


def test_noise_is_rounded_away_and_counts_are_integers():
    value = {"margin": 0.1 + 0.1 + 0.1 - 0.1, "ballots": np.float64(40.0), "n": np.int64(3)}
    text = jsontext.dumps(value)
    assert json.loads(text) == {"margin": 0.2, "ballots": 40, "n": 3}
    assert '"ballots": 40,' in text and "0.2," in text
    assert text.startswith('{\n  "margin"') and text.endswith("}\n")


def test_twelve_significant_digits_and_non_finite_as_null():
    got = json.loads(jsontext.dumps([17.303141077999953, 1e-20 / 3, float("nan"), -np.inf]))
    assert got == [17.303141078, 3.33333333333e-21, None, None]


def test_exact_keys_keep_every_digit_at_any_depth():
    weights = [0.1 + 0.2, 1 / 3]
    value = {"report": 1 / 3, "base": {"weights": np.array(weights)}, "weights": weights}
    got = json.loads(jsontext.dumps(value, exact=("weights",)))
    assert got["report"] == 0.333333333333
    assert got["weights"] == weights and got["base"]["weights"] == weights
