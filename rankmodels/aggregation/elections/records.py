"""The ballots of a contest: every cast-vote record its config lists, read and merged."""

from __future__ import annotations

from rankmodels.aggregation.elections.ballots import BallotCounter, CastBallots
from rankmodels.aggregation.elections.cdf import read_cdf
from rankmodels.aggregation.elections.clear_ballot import read_clear_ballot
from rankmodels.aggregation.elections.config import Contest
from rankmodels.aggregation.elections.dominion import read_dominion
from rankmodels.aggregation.elections.ess import read_ess
from rankmodels.aggregation.elections.generic_csv import read_generic_csv
from rankmodels.aggregation.elections.hart import read_hart
from rankmodels.aggregation.elections.names import CandidateNames

__all__ = ["read_ballots"]


def read_ballots(contest: Contest) -> CastBallots:
    """The ballots of every source of ``contest``, candidates in config order."""
    names = CandidateNames(contest.candidates, contest.write_ins)
    max_rankings = contest.rules.max_rankings or len(names.declared)
    counter = BallotCounter()
    for source in contest.sources:
        if source.provider == "ess":
            read_ess(source, names, max_rankings, counter)
        elif source.provider == "clearBallot":
            read_clear_ballot(source, names, max_rankings, counter)
        elif source.provider == "dominion":
            read_dominion(source, names, counter)
        elif source.provider == "hart":
            read_hart(source, names, counter)
        elif source.provider == "genericCsv":
            read_generic_csv(source, names, counter)
        else:
            read_cdf(source, names, counter)
    return counter.ballots(names.names)
