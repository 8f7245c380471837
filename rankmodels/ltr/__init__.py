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
  ``data/letor-sample.txt``, PiRank's appendix-E recipe); :mod:`~rankmodels.ltr.splits`
  and :mod:`~rankmodels.ltr.query_norm` -- query-level splits / k-fold CV and per-query
  feature normalisation;
* models: :mod:`~rankmodels.ltr.models` (linear, MLP: scores and back-propagation),
  :mod:`~rankmodels.ltr.train` (L-BFGS for the linear ranker, the training objective of any
  model), :mod:`~rankmodels.ltr.mlp` (Adam), :mod:`~rankmodels.ltr.early_stopping` (every model's
  early stopping on validation NDCG), :mod:`~rankmodels.ltr.boost`
  (listwise boosting, Algorithm 1) on :mod:`~rankmodels.ltr.trees` (numba regression
  trees), :mod:`~rankmodels.ltr.model_io` (model files); ``rankmodels ltr train/evaluate/
  predict/crossval``;
* :mod:`~rankmodels.ltr.jax_ops` -- optional JAX bindings of the losses (extra ``jax``).

The shared Sinkhorn / Hungarian / Birkhoff machinery lives in :mod:`rankmodels.dsm`.
See ``docs/ltr.md`` for the maths and conventions.
"""
