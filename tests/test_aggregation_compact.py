"""Compact ballot storage: :class:`Profile` holds ``orders``/``levels`` in the smallest
signed integer type that counts its candidates (int8 up to 128, int16 beyond), and the
aggregate path imports only what it uses.

Around each type boundary (1, 127, 128, 129, 255, 256, 257 candidates) a profile with ties
and truncated ballots must (a) store the narrowest type, (b) give the marginals computed
from the raw ballots in int64 arithmetic, (c) come back identical from every reader, and
(d) give every rule the result it gives on the same ballots held as int64 (the storage
before compaction; numba compiles each kernel once per integer type, so this also checks
that no kernel or numpy expression overflows in the narrow type).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rankmodels.aggregation import (
    RULES,
    Profile,
    aggregate,
    read_votes,
    write_preflib,
    write_votes_csv,
)
from rankmodels.aggregation.profile import index_dtype
from tests._aggregation_helpers import Ballots, random_ballots

SIZES = [1, 2, 127, 128, 129, 255, 256, 257]


def _ballots(n: int, seed: int, ties: bool = True) -> Ballots:
    """A few ballots over ``n`` candidates named ``c0 ..``, with ties (or only the unranked
    bottom group when ``ties`` is False) and truncation."""
    ballots = random_ballots(n, np.random.default_rng(seed), m=7, pool=5)
    if not ties:  # every group split into singletons, in its listed order
        groups = [[[x] for g in b for x in g] for b in ballots.groups]
        ballots = Ballots(groups, ballots.weights, n)
    return ballots


def _names(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


def _reference_marginals(ballots: Ballots) -> tuple[np.ndarray, np.ndarray]:
    """``(M, P)`` from the raw ballots in int64/float arithmetic: each tie group spread
    uniformly over its positions, tied pairs counted 1/2 each way."""
    n = ballots.n
    M, P = np.zeros((n, n)), np.zeros((n, n))
    total = sum(ballots.weights)
    for groups, w in zip(ballots.groups, ballots.weights, strict=True):
        ranked = {x for g in groups for x in g}
        full = [g for g in groups if g] + [sorted(set(range(n)) - ranked)]
        level = np.empty(n, dtype=np.int64)
        start = 0
        for g, members in enumerate(m for m in full if m):
            level[members] = g
            M[np.ix_(members, np.arange(start, start + len(members)))] += w / total / len(members)
            start += len(members)
        tied = (level[:, None] == level[None, :]) & ~np.eye(n, dtype=bool)
        P += w / total * ((level[:, None] < level[None, :]) + 0.5 * tied)
    return M, P


def _widened(profile: Profile) -> Profile:
    """The same profile with ``orders``/``levels`` as int64, as stored before compaction."""
    wide = Profile(profile.candidates, profile.orders, profile.levels, profile.weights)
    object.__setattr__(wide, "orders", profile.orders.astype(np.int64))
    object.__setattr__(wide, "levels", profile.levels.astype(np.int64))
    return wide


def _ballot_set(profile: Profile) -> dict[tuple, float]:
    """Ballots by candidate name, tie groups as sets, with their weights."""
    return {
        tuple(frozenset(profile.candidates[x] for x in g) for g in groups): float(w)
        for groups, w in zip(profile.weak_orders(), profile.weights, strict=True)
    }


@pytest.mark.parametrize("n", SIZES)
def test_storage_is_the_narrowest_type_and_marginals_match_int64(n):
    ballots = _ballots(n, seed=n)
    profile = ballots.profile()
    expected = np.int8 if n <= 128 else np.int16
    assert profile.orders.dtype == expected and profile.levels.dtype == expected
    assert index_dtype(n) == expected
    M, P = _reference_marginals(ballots)
    np.testing.assert_allclose(profile.positional_matrix, M, atol=1e-12)
    np.testing.assert_allclose(profile.pairwise, P, atol=1e-12)


def test_index_dtype_boundaries():
    assert [index_dtype(n) for n in (1, 128, 129, 32768, 32769)] == [
        np.int8, np.int8, np.int16, np.int16, np.int32
    ]  # fmt: skip


@pytest.mark.parametrize(
    "orders, levels, error, message",
    [
        ([[0, 300]], [[0, 1]], ValueError, "permutation"),  # would wrap to 44 in int8
        ([[0, -1]], [[0, 1]], ValueError, "permutation"),
        ([[1, 1]], [[0, 1]], ValueError, "permutation"),
        ([[0, 1]], [[0, 256]], ValueError, "levels"),  # would wrap to 0 in int8
        ([[0, 1]], [[1, 1]], ValueError, "levels"),
        ([[0, 1.5]], [[0, 1]], TypeError, "integers"),
        ([[0, 1]], [[0, 0.5]], TypeError, "integers"),
    ],
)
def test_values_that_do_not_fit_are_refused_before_narrowing(orders, levels, error, message):
    with pytest.raises(error, match=message):
        Profile(("a", "b"), np.array(orders), np.array(levels), np.array([1.0]))


def test_integral_floats_and_wide_integers_are_stored_compactly():
    profile = Profile(("a", "b"), np.array([[1.0, 0.0]]), np.array([[0, 1]]), np.array([2.0]))
    assert profile.orders.dtype == np.int8 and profile.orders.tolist() == [[1, 0]]
    strict = Profile.from_orders(np.array([[2, 0, 1], [2, 0, 1]], dtype=np.int64))
    assert strict.orders.dtype == np.int8 and strict.weights.tolist() == [2.0]


@pytest.mark.parametrize("n", SIZES)
def test_every_reader_round_trips_the_compact_profile(n, tmp_path):
    names = _names(n)
    profile = Profile.from_weak_orders(_ballots(n, seed=10 + n).groups, None, names)
    with open(tmp_path / "votes.csv", "w") as handle:
        write_votes_csv(profile, handle)
    with open(tmp_path / "votes.toi", "w") as handle:
        write_preflib(profile, handle)
    for path in (tmp_path / "votes.csv", tmp_path / "votes.toi"):
        back = read_votes(path)
        assert back.orders.dtype == index_dtype(n), path.name
        assert sorted(back.candidates) == sorted(names)  # a votes CSV names them as they come
        assert _ballot_set(back) == _ballot_set(profile), path.name

    # cast-vote record: rank columns cannot hold ties, so strict truncated ballots
    strict = Profile.from_weak_orders(_ballots(n, seed=20 + n, ties=False).groups, None, names)
    ranked = [  # the unranked bottom group left blank
        [g[0] for g in b[:-1]] if len(b[-1]) > 1 else [g[0] for g in b]
        for b in strict.weak_orders()
    ]
    rows = [",".join(f"rank{k + 1}" for k in range(n))]
    for ballot, w in zip(ranked, strict.weights, strict=True):
        cells = [names[x] for x in ballot] + [""] * (n - len(ballot))
        rows += [",".join(cells)] * int(w)
    (tmp_path / "cvr.csv").write_text("\n".join(rows) + "\n")
    back = read_votes(tmp_path / "cvr.csv", candidates=names)
    assert back.orders.dtype == index_dtype(n)
    assert _ballot_set(back) == _ballot_set(strict)


def _options(rule: str, n: int) -> dict[str, object]:
    options = RULES[rule].options
    return {
        **({"k": min(2, n)} if "k" in options else {}),
        **({"scores": list(np.linspace(1.0, 0.0, n))} if "scores" in options else {}),
    }


def _outcome(profile: Profile, rule: str) -> tuple:
    try:
        result = aggregate(profile, rule, max_ties=20, **_options(rule, profile.n))
    except ValueError as err:  # e.g. the mode rule refusing too many tie expansions
        return ("ValueError", str(err))
    scores = None if result.scores is None else np.round(result.scores, 12).tolist()
    return (
        [t.tolist() for t in result.ties],
        result.n_optimal,
        result.n_optimal_at_least,
        result.exact,
        scores,
        None if result.objective is None else round(result.objective, 12),
    )


def _rule_cases() -> list:
    """Every rule on both sides of the int8/int16 boundary. The runoff rules other than
    instant runoff break ties for last every way, which on 128 candidates with few ballots
    (most without a first place) takes tens of seconds: those cases are slow tests."""
    slow = pytest.mark.slow
    return [
        pytest.param(rule, n, marks=slow if RULES[rule].kind == "runoff" and rule != "irv"
                     and n >= 128 else ())
        for rule in RULES.names
        for n in (1, 2, 5, 128, 129)
    ]  # fmt: skip


@pytest.mark.parametrize("rule, n", _rule_cases())
def test_every_rule_gives_the_int64_result(rule, n):
    profile = _ballots(n, seed=30 + n).profile()
    assert _outcome(profile, rule) == _outcome(_widened(profile), rule)


def test_aggregate_command_imports_no_plotting_or_array_stack():
    """The aggregate path (its console script and the ``rankmodels`` group's subcommand)
    loads neither the tracking stack nor scipy's optimisers and statistics."""
    heavy = ["xarray", "matplotlib", "cartopy", "pandas", "scipy.stats", "scipy.optimize"]
    code = (
        "import sys\n"
        "import rankmodels_app.aggregate\n"
        "from rankmodels_app.cli import cli\n"
        "from click import Context\n"
        "cli.get_command(Context(cli), 'aggregate')\n"
        f"print([m for m in {heavy!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
