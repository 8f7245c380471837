"""All learning-to-rank losses by name.

Every loss has the signature ``loss(scores, relevance, lengths=None, **options)`` and
returns a :class:`~rankmodels.ltr.batching.LossResult` with the per-query value and its
exact gradient with respect to the scores (LambdaRank: the lambda vector, exact for its
rank-frozen objective). Losses are minimised; the NDCG-type ones are ``1 - (relaxed) NDCG``.
"""

from __future__ import annotations

from collections.abc import Callable

from rankmodels.ltr.batching import LossResult
from rankmodels.ltr.bregman import bregman_loss
from rankmodels.ltr.listwise import listmle_loss, listnet_loss
from rankmodels.ltr.neuralsort import pirank_loss
from rankmodels.ltr.pairwise import lambdarank_loss, ranknet_loss
from rankmodels.ltr.sinkprop import sinkprop_loss
from rankmodels.ltr.softrank import softndcg_loss

__all__ = ["LOSSES", "LossResult"]

LOSSES: dict[str, Callable[..., LossResult]] = {
    "sinkprop": sinkprop_loss,
    "softrank": softndcg_loss,
    "pirank": pirank_loss,
    "ranknet": ranknet_loss,
    "lambdarank": lambdarank_loss,
    "listnet": listnet_loss,
    "listmle": listmle_loss,
    "bregman": bregman_loss,
}
