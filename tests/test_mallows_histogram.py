"""Histograms of Mallows samples merged while drawing equal the histogram of the same draws
taken whole (:meth:`Profile.from_orders`, or each ballot cut by hand for top-k), for packed
codes and the general table, across many blocks and hash-table growth."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.aggregation import Profile
from rankmodels.aggregation.mallows import Mallows, MallowsMixture, sampling


def _names(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


def _cut_by_hand(orders: np.ndarray, top: int, names: list[str]) -> Profile:
    """The top-``top`` ballots, one group per ranked candidate, the rest unranked."""
    return Profile.from_weak_orders([[[int(x)] for x in row[:top]] for row in orders], None, names)


def _as_dict(profile: Profile) -> dict:
    return {
        (tuple(o), tuple(lv)): w
        for o, lv, w in zip(
            profile.orders.tolist(), profile.levels.tolist(), profile.weights, strict=True
        )
    }


def _mixture(n: int, phi: float = 0.7) -> MallowsMixture:
    centres = (np.arange(n), np.roll(np.arange(n), n // 2))
    return MallowsMixture(np.array([0.7, 0.3]), tuple(Mallows(c, phi) for c in centres))


@pytest.mark.parametrize(("n", "top", "block"), [(6, None, 60), (6, 2, 60), (20, None, 400)])
def test_merged_while_drawing_equals_the_whole_sample(n, top, block, monkeypatch):
    monkeypatch.setattr(sampling, "BLOCK", block)  # many blocks, table growth
    model, names = _mixture(n), _names(n)
    orders = model.sample(3000, np.random.default_rng(4))
    profile = model.sample_histogram(3000, np.random.default_rng(4), names, top)
    if top is None:
        whole = Profile.from_orders(orders, candidates=names)
    else:
        whole = _cut_by_hand(orders, top, names)
    assert profile.candidates == tuple(names) and profile.total == 3000
    assert _as_dict(profile) == _as_dict(whole)
    assert len(_as_dict(profile)) == profile.weights.size  # merged: no ballot twice


def test_packed_ballots_come_sorted_and_complete_ones_are_strict():
    model, names = _mixture(5, 0.5), _names(5)
    profile = model.sample_histogram(5000, np.random.default_rng(1), names)
    assert profile.is_strict
    rows = [tuple(r) for r in profile.orders.tolist()]
    assert rows == sorted(rows)
    cut = model.sample_histogram(5000, np.random.default_rng(1), names, top=2)
    assert (cut.levels == np.minimum(np.arange(5), 2)).all()
    assert (np.diff(cut.orders[:, 2:].astype(int), axis=1) > 0).all()  # unranked ascending


@pytest.mark.parametrize("n", [1, 2])
def test_tiny_profiles(n):
    profile = (
        Mallows(np.arange(n), 0.5)
        .as_mixture()
        .sample_histogram(100, np.random.default_rng(0), _names(n), top=1)
    )
    assert profile.total == 100 and profile.is_strict
    assert profile.weights.size == n  # one ballot, or both orders of two


def test_top_beyond_the_candidates_is_a_complete_ranking():
    model = Mallows(np.arange(4), 0.6).as_mixture()
    a = model.sample_histogram(500, np.random.default_rng(2), _names(4), top=3)
    b = model.sample_histogram(500, np.random.default_rng(2), _names(4))
    assert _as_dict(a) == _as_dict(b) and a.is_strict
