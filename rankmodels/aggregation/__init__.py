"""Distributional rank aggregation ([Pareek2017] chapter 4).

A profile is a distribution over rankings (:class:`Profile`); rules turn it into consensus
rankings, reporting every optimal ranking and how many there are (:func:`aggregate`; the
rules are listed in the registry :data:`RULES`); :mod:`.axioms` gives the margins
``Omega_h``, ``omega_h``, ``omega^1_h`` of positional rules, their epsilon thresholds and an
axiom report for one profile; :mod:`.violation_search` searches small distributions for
axiom violations to show the thresholds are tight.
"""

from rankmodels._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "Aggregation": ".result",
        "Profile": ".profile",
        "RULES": ".rules",
        "RuleSpec": ".rules",
        "aggregate": ".rules",
        "read_votes": ".io",
        "score_vector": ".rules",
        "write_abif": ".io",
        "write_preflib": ".io",
        "write_votes_csv": ".io",
    },
)
