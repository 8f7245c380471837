"""Cross-check against pref_voting (in the ``bench`` extra) on random profiles."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.aggregation import Profile, aggregate, read_votes
from tests._aggregation_helpers import Ballots, random_ballots
from tests.test_aggregation_real import raw_file

pv_profiles = pytest.importorskip("pref_voting.profiles")
scoring = pytest.importorskip("pref_voting.scoring_methods")
margin_based = pytest.importorskip("pref_voting.margin_based_methods")
other = pytest.importorskip("pref_voting.other_methods")


def random_pair(n: int, rng: np.random.Generator) -> tuple[Profile, object]:
    m = int(rng.integers(3, 12))
    orders = np.array([rng.permutation(n) for _ in range(m)])
    counts = rng.integers(1, 6, size=m)
    ours = Profile.from_orders(orders, counts)
    theirs = pv_profiles.Profile(orders.tolist(), rcounts=counts.tolist())
    return ours, theirs


CASES = [(n, seed) for n in range(3, 8) for seed in range(6)]


@pytest.mark.parametrize("n, seed", CASES)
def test_positional_scores_agree(n, seed):
    ours, theirs = random_pair(n, np.random.default_rng(seed))
    borda = theirs.borda_scores()
    plurality = theirs.plurality_scores()
    np.testing.assert_allclose(
        aggregate(ours, "borda").scores * ours.total, [borda[x] for x in range(n)]
    )
    np.testing.assert_allclose(
        aggregate(ours, "plurality").scores * ours.total, [plurality[x] for x in range(n)]
    )
    assert aggregate(ours, "borda").winners() == sorted(scoring.borda(theirs))
    assert aggregate(ours, "plurality").winners() == sorted(scoring.plurality(theirs))
    assert aggregate(ours, "antiplurality").winners() == sorted(scoring.anti_plurality(theirs))


@pytest.mark.parametrize("n, seed", CASES)
def test_condorcet_methods_agree(n, seed):
    ours, theirs = random_pair(n, np.random.default_rng(seed))
    copeland = theirs.copeland_scores()  # wins - losses
    np.testing.assert_allclose(
        2 * aggregate(ours, "copeland").scores - (n - 1), [copeland[x] for x in range(n)]
    )
    assert aggregate(ours, "schulze").winners() == sorted(margin_based.beat_path(theirs))
    if n <= 6:  # pref_voting's parallel-universe ranked pairs takes minutes on some n = 7 cases
        expected = sorted(margin_based.ranked_pairs(theirs))
        assert aggregate(ours, "ranked-pairs").winners() == expected


@pytest.mark.parametrize("n, seed", [(n, s) for n in range(3, 7) for s in range(5)] + [(7, 0)])
def test_kemeny_rankings_agree(n, seed):
    ours, theirs = random_pair(n, np.random.default_rng(seed))
    rankings, distance = other.kemeny_young_rankings(theirs)
    result = aggregate(ours, "kemeny")
    assert {tuple(t) for t in result.ties} == {tuple(r) for r in rankings}
    assert result.objective * ours.total == pytest.approx(float(distance))


# ---------------------------------------------------------------- instant runoff
iterative = pytest.importorskip("pref_voting.iterative_methods")
with_ties = pytest.importorskip("pref_voting.profiles_with_ties")


def pv_weak_orders(ballots: Ballots) -> object:
    """The raw ballots as pref_voting's ProfileWithTies (unranked candidates left out)."""
    rankings = [
        {x: g for g, group in enumerate(groups) for x in group} for groups in ballots.groups
    ]
    return with_ties.ProfileWithTies(
        rankings, rcounts=[int(w) for w in ballots.weights], candidates=list(range(ballots.n))
    )


@pytest.mark.parametrize("n, seed", [(n, s) for n in range(2, 7) for s in range(8)])
def test_instant_runoff_winners_agree_with_ties_and_truncation(n, seed):
    rng = np.random.default_rng(1000 * n + seed)
    ballots = random_ballots(n, rng, m=int(rng.integers(3, 14)), pool=6, max_weight=5)
    # parallel-universe tie-breaking; "split": a tie group shares the ballot
    expected = iterative.instant_runoff_put(pv_weak_orders(ballots), score_method="split")
    assert aggregate(ballots.profile(), "irv", max_ties=10**6).details["winners"] == sorted(
        expected
    )


@pytest.mark.parametrize("n, seed", CASES)
def test_instant_runoff_winners_agree_on_complete_ballots(n, seed):
    ours, theirs = random_pair(n, np.random.default_rng(seed))
    assert aggregate(ours, "irv", max_ties=10**6).winners() == sorted(
        iterative.instant_runoff_put(theirs)
    )


def test_instant_runoff_on_dublin_north_round_by_round(shared_data):
    path = shared_data / "preflib" / "00001-00000001.soi"
    ours = read_votes(path)
    _, raw = raw_file(path)
    theirs = with_ties.ProfileWithTies(
        [{x: k for k, x in enumerate(ranked)} for _, ranked in raw],
        rcounts=[count for count, _ in raw],
        candidates=list(range(ours.n)),
    )
    result = aggregate(ours, "irv")
    assert result.winners() == sorted(iterative.instant_runoff_put(theirs, score_method="split"))
    for r in result.details["rounds"]:  # every tally on the way
        tops = theirs.tops_scores(curr_cands=list(r.continuing), score_type="split")
        np.testing.assert_allclose(
            [r.votes[x] for x in r.continuing], [tops[x] for x in r.continuing]
        )


# ---------------------------------------------------------------- Condorcet-IRV hybrids
combined = pytest.importorskip("pref_voting.combined_methods")
c1 = pytest.importorskip("pref_voting.c1_methods")


@pytest.mark.parametrize("n, seed", CASES)
def test_benham_and_smith_irv_winners_agree_on_complete_ballots(n, seed):
    ours, theirs = random_pair(n, np.random.default_rng(seed))
    big = 10**6
    assert aggregate(ours, "benham", max_ties=big).winners() == sorted(iterative.benham_put(theirs))
    assert aggregate(ours, "smith-irv", max_ties=big).winners() == sorted(
        combined.smith_irv_put(theirs)
    )


def pv_as_counted(ballots: Ballots) -> object:
    """The raw ballots as pref_voting's ProfileWithTies under this package's convention:
    candidates a ballot leaves out form its last group, and a last group of two or more is
    unranked (left out); unranked candidates are below ranked ones in every comparison
    (pref_voting's extended strict preference)."""
    rankings = []
    for groups in ballots.groups:
        ranked = {x for g in groups for x in g}
        full = [list(g) for g in groups] + [[x for x in range(ballots.n) if x not in ranked]]
        full = [g for g in full if g]
        if len(full[-1]) > 1:
            full = full[:-1]
        rankings.append({x: level for level, group in enumerate(full) for x in group})
    profile = with_ties.ProfileWithTies(
        rankings, rcounts=[int(w) for w in ballots.weights], candidates=list(range(ballots.n))
    )
    profile.use_extended_strict_preference()
    return profile


def benham_split(theirs, candidates: list[int]) -> set[int]:
    """pref_voting's ``benham_put`` with tie groups splitting a ballot (its ``benham_put``
    needs linear ballots): the recursion written with its Condorcet winner and split tops
    scores."""
    winner = theirs.condorcet_winner(curr_cands=candidates)
    if winner is not None:
        return {winner}
    scores = theirs.tops_scores(curr_cands=candidates, score_type="split")
    low = min(scores.values())
    out: set[int] = set()
    for x in candidates:
        if scores[x] <= low + 1e-9:
            out |= benham_split(theirs, [c for c in candidates if c != x])
    return out


def where_hybrids_differ(rng: np.random.Generator) -> Ballots:
    """Random tied and truncated ballots on which instant runoff, Benham and Smith-IRV do
    not all elect the same candidates (rare among random profiles, so drawn until found)."""
    for _ in range(2000):
        n = int(rng.integers(3, 7))
        ballots = random_ballots(n, rng, m=int(rng.integers(3, 10)), pool=3, max_weight=5)
        profile = ballots.profile()
        winners = {
            tuple(aggregate(profile, rule, max_ties=10**6).details["winners"])
            for rule in ("irv", "benham", "smith-irv")
        }
        if len(winners) > 1:
            return ballots
    raise AssertionError("no profile separates the rules")


def assert_hybrids_agree(ballots: Ballots) -> None:
    theirs = pv_as_counted(ballots)
    ours = ballots.profile()
    big = 10**6
    assert aggregate(ours, "benham", max_ties=big).details["winners"] == sorted(
        benham_split(theirs, list(range(ballots.n)))
    )
    smith = c1.smith_set(theirs)
    result = aggregate(ours, "smith-irv", max_ties=big)
    assert result.details["smith_set"] == sorted(smith)
    expected = iterative.instant_runoff_put(theirs, curr_cands=smith, score_method="split")
    assert result.details["winners"] == sorted(expected)


@pytest.mark.parametrize("n, seed", [(n, s) for n in range(2, 7) for s in range(8)])
def test_benham_and_smith_irv_winners_agree_with_ties_and_truncation(n, seed):
    rng = np.random.default_rng(2000 * n + seed)
    assert_hybrids_agree(random_ballots(n, rng, m=int(rng.integers(3, 14)), pool=6, max_weight=5))


@pytest.mark.parametrize("seed", range(12))
def test_benham_and_smith_irv_agree_where_they_differ_from_irv(seed):
    assert_hybrids_agree(where_hybrids_differ(np.random.default_rng(seed)))
