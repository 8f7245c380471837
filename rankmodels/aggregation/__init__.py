"""Distributional rank aggregation ([Pareek2017] chapter 4).

A profile is a distribution over rankings (:class:`Profile`); rules turn it into consensus
rankings, reporting every optimal ranking and how many there are (:func:`aggregate`; the
rules are listed in the registry :data:`RULES`); :mod:`.axioms` gives the margins
``Omega_h``, ``omega_h``, ``omega^1_h`` of positional rules, their epsilon thresholds and an
axiom report for one profile; :mod:`.violation_search` searches small distributions for
axiom violations to show the thresholds are tight.
"""

from rankmodels.aggregation.io import read_votes, write_abif, write_preflib, write_votes_csv
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import Aggregation
from rankmodels.aggregation.rules import RULES, RuleSpec, aggregate, score_vector

__all__ = [
    "RULES",
    "Aggregation",
    "Profile",
    "RuleSpec",
    "aggregate",
    "read_votes",
    "score_vector",
    "write_abif",
    "write_preflib",
    "write_votes_csv",
]
