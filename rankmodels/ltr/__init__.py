"""Learning to rank on doubly-stochastic matrices: metrics and losses with exact gradients.

* :mod:`~rankmodels.ltr.batching` -- ragged batches (padded scores, relevance, lengths);
* :mod:`~rankmodels.ltr.metrics` -- DCG/NDCG, precision, MAP, MRR, ERR, RBP, ARP, OPA on
  hard rankings and as expectations under a DSM;
* losses, each ``f(scores, relevance, lengths=None, ...) -> LossResult(value, grad)``:
  :mod:`~rankmodels.ltr.sinkprop`, :mod:`~rankmodels.ltr.softrank`,
  :mod:`~rankmodels.ltr.neuralsort`, :mod:`~rankmodels.ltr.pairwise` (RankNet, LambdaRank),
  :mod:`~rankmodels.ltr.listwise` (ListNet, ListMLE), :mod:`~rankmodels.ltr.bregman`;
  all in the registry :data:`rankmodels.ltr.losses.LOSSES` (with their options);
* :mod:`~rankmodels.ltr.letor` -- LETOR / SVMlight reader and writer;
  :mod:`~rankmodels.ltr.synthetic` -- queries with a known linear truth (the shipped
  ``data/letor-sample.txt``); :mod:`~rankmodels.ltr.train` -- linear rankers fitted with
  any loss by L-BFGS (``rankmodels ltr train``);
* :mod:`~rankmodels.ltr.jax_ops` -- optional JAX bindings of the losses (extra ``jax``).

The shared Sinkhorn / Hungarian / Birkhoff machinery lives in :mod:`rankmodels.dsm`.
See ``docs/ltr.md`` for the maths and conventions.
"""
