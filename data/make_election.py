"""Regenerate ``data/election.soi``: a small simulated PrefLib election (strict, incomplete).

Forty voters rank five candidates. Each ballot is a draw from a Mallows model (centre
Cedar > Ash > Birch > Oak > Elm, dispersion phi = 0.5, seed 2024) cut after the voter's top 2, 3
or 5 candidates (equally likely): the unranked candidates share the bottom, as PrefLib's ``soi``
type allows. Run from the repository root::

    python data/make_election.py            # rewrites data/election.soi
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np

from rankmodels.aggregation import Profile
from rankmodels.aggregation.io import write_preflib
from rankmodels.aggregation.mallows import Mallows

CANDIDATES = ("Ash", "Birch", "Cedar", "Elm", "Oak")
CENTRE = (2, 0, 1, 4, 3)  # Cedar > Ash > Birch > Oak > Elm
PHI = 0.5
VOTERS = 40
TOP_LENGTHS = (2, 3, 5)
SEED = 2024
TITLE = "Simulated election: Mallows(phi=0.5) ballots cut after the top 2, 3 or 5"


def election_text(seed: int = SEED) -> str:
    """The PrefLib ``soi`` text of the simulated election."""
    rng = np.random.default_rng(seed)
    orders = Mallows(np.array(CENTRE), PHI).sample(VOTERS, rng)
    lengths = rng.choice(TOP_LENGTHS, size=VOTERS)
    ballots = [[[int(x)] for x in order[:k]] for order, k in zip(orders, lengths, strict=True)]
    handle = io.StringIO()
    kind = write_preflib(Profile.from_weak_orders(ballots, None, CANDIDATES), handle, TITLE)
    if kind != "soi":
        raise RuntimeError(f"expected strict incomplete ballots (soi), wrote {kind}")
    return handle.getvalue()


if __name__ == "__main__":
    target = Path(__file__).with_name("election.soi")
    target.write_text(election_text(), encoding="utf-8")
    sys.stdout.write(f"wrote {target}\n")
