"""Fitted rankers to and from JSON-able dicts (the model files of ``rankmodels ltr``).

Every file has ``"model"`` (``linear`` when absent: files of earlier versions) and
``"n_features"`` (the feature count it was trained on; earlier linear files: the length
of ``weights``):

* ``linear``: ``weights``, ``feature_mean``, ``feature_scale`` (``(F,)`` each);
* ``mlp``: ``hidden`` (layer widths), ``params`` (flat, :class:`~rankmodels.ltr.models.MLP`
  layout), ``feature_mean``, ``feature_scale``;
* ``boost``: ``trees``, each ``{"feature", "threshold", "left", "right", "value"}`` node lists
  (:class:`~rankmodels.ltr.trees.Tree`) or, for single-feature weak learners,
  ``{"feature": k, "weight": w}`` (:class:`~rankmodels.ltr.weak_learners.FeatureLearner`);
* ``rerank``: ``base`` (a linear, mlp or boost model object as above), ``kernels`` (names of
  :data:`~rankmodels.ltr.rerank.KERNELS`), ``weights`` (one per kernel) and ``l2``
  (:class:`~rankmodels.ltr.rerank.RerankedRanker`).

A model trained on per-query normalised features also has ``"normalise"`` (``zscore`` or
``minmax``; ``none`` when absent), and is read back as a
:class:`~rankmodels.ltr.query_norm.NormalisedRanker` that normalises every query it scores.

:func:`ranker_from_dict` checks every field and raises
:class:`~rankmodels.errors.InputError` naming the file and the field.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from rankmodels.errors import InputError
from rankmodels.ltr.boost import BoostedRanker
from rankmodels.ltr.models import MLP, LinearRanker, Ranker
from rankmodels.ltr.query_norm import NORMALISATIONS, NormalisedRanker
from rankmodels.ltr.rerank import KERNELS, RerankedRanker
from rankmodels.ltr.trees import Tree
from rankmodels.ltr.weak_learners import FeatureLearner

__all__ = ["MODEL_KINDS", "n_features_of", "ranker_from_dict", "ranker_to_dict", "read_ranker"]

MODEL_KINDS = ("linear", "mlp", "boost", "rerank")

AnyRanker = Ranker | BoostedRanker | RerankedRanker | NormalisedRanker
Path = str | os.PathLike[str] | None


PARAMETER_KEYS = ("weights", "params", "trees", "feature_mean", "feature_scale")
"""Keys of :func:`ranker_to_dict` holding fitted parameters: written exactly (all digits),
so a saved model scores as the trained one did."""


def ranker_to_dict(ranker: AnyRanker, n_features: int) -> dict[str, Any]:
    """The JSON-able fields of ``ranker`` (module docstring)."""
    if isinstance(ranker, NormalisedRanker):
        inner = ranker_to_dict(ranker.ranker, n_features)
        return inner if ranker.method == "none" else inner | {"normalise": ranker.method}
    if isinstance(ranker, RerankedRanker):
        return {
            "model": "rerank",
            "n_features": n_features,
            "kernels": list(ranker.kernels),
            "weights": ranker.weights.tolist(),
            "l2": ranker.l2,
            "base": ranker_to_dict(ranker.base, n_features),
        }
    if isinstance(ranker, BoostedRanker):
        trees = [
            {"feature": t.feature, "weight": t.weight}
            if isinstance(t, FeatureLearner)
            else {
                "feature": t.feature.tolist(),
                "threshold": [None if np.isnan(v) else float(v) for v in t.threshold],
                "left": t.left.tolist(),
                "right": t.right.tolist(),
                "value": t.value.tolist(),
            }
            for t in ranker.trees
        ]
        return {"model": "boost", "n_features": n_features, "trees": trees}
    out: dict[str, Any] = {"model": ranker.model.name, "n_features": n_features}
    if isinstance(ranker.model, MLP):
        out |= {"hidden": list(ranker.model.hidden), "params": ranker.params.tolist()}
    else:
        out["weights"] = ranker.params.tolist()
    return out | {"feature_mean": ranker.mean.tolist(), "feature_scale": ranker.scale.tolist()}


def _array(
    spec: dict, key: str, path: Path, size: int | None, kind: type = float, within: str = ""
) -> np.ndarray:
    """``spec[key]`` as a 1-d finite array (of ``size`` when given); errors name the field
    ``within.key``."""
    field = f"{within}.{key}" if within else key
    if key not in spec:
        raise InputError("missing", path=path, field=field)
    try:
        arr = np.asarray(spec[key], dtype=kind)
    except (TypeError, ValueError):
        raise InputError(f"must be a list of {kind.__name__}s", path=path, field=field) from None
    if arr.ndim != 1 or (size is not None and arr.shape != (size,)) or arr.size == 0:
        want = "a non-empty list" if size is None else f"a list of {size} numbers"
        raise InputError(f"must be {want}", path=path, field=field)
    if kind is float and not np.all(np.isfinite(arr)):
        raise InputError("must hold finite numbers", path=path, field=field)
    return arr


def n_features_of(spec: dict, path: Path = None) -> int:
    """The feature count a model file was trained on."""
    if "n_features" not in spec and "weights" in spec:
        return int(_array(spec, "weights", path, None).shape[0])
    n = spec.get("n_features")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError("must be a positive integer", path=path, field="n_features")
    return n


def _standardisation(spec: dict, path: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    mean = _array(spec, "feature_mean", path, n)
    scale = _array(spec, "feature_scale", path, n)
    if np.any(scale <= 0):
        raise InputError("must be positive", path=path, field="feature_scale")
    return mean, scale


def _tree(node: object, path: Path, where: str, n_features: int) -> Tree | FeatureLearner:
    if not isinstance(node, dict):
        raise InputError("must be an object of node lists", path=path, field=where)
    if "weight" in node:
        k, w = node.get("feature"), node["weight"]
        if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k < n_features):
            raise InputError(
                f"must be in 0 .. {n_features - 1}", path=path, field=f"{where}.feature"
            )
        if isinstance(w, bool) or not isinstance(w, int | float) or not np.isfinite(w):
            raise InputError("must be a finite number", path=path, field=f"{where}.weight")
        return FeatureLearner(k, float(w))
    feature = _array(node, "feature", path, None, int, where)
    m = feature.shape[0]
    raw = node.get("threshold")
    threshold = np.array(
        [np.nan if v is None else v for v in raw] if isinstance(raw, list) else [], dtype=float
    )
    left, right = (_array(node, key, path, m, int, where) for key in ("left", "right"))
    value = _array(node, "value", path, m, float, where)
    inner = feature >= 0
    ok = (
        threshold.shape == (m,)
        and np.all(feature < n_features)
        and np.all(np.isfinite(threshold[inner]))
        and np.all((left[inner] > np.flatnonzero(inner)) & (left[inner] < m))
        and np.all((right[inner] > np.flatnonzero(inner)) & (right[inner] < m))
    )
    if not ok:
        raise InputError(
            f"is not a tree on {n_features} features (children after their parent, finite "
            "thresholds on inner nodes)",
            path=path,
            field=where,
        )
    return Tree(feature, threshold, left, right, value)


def _reranker(spec: dict, path: Path, n_features: int) -> RerankedRanker:
    kernels = spec.get("kernels")
    if not (isinstance(kernels, list) and kernels and all(k in KERNELS for k in kernels)):
        raise InputError(f"must be a list of {', '.join(KERNELS)}", path=path, field="kernels")
    weights = _array(spec, "weights", path, len(kernels))
    l2 = spec.get("l2", 0.0)
    if isinstance(l2, bool) or not isinstance(l2, int | float) or not 0 <= l2 < np.inf:
        raise InputError("must be a finite number >= 0", path=path, field="l2")
    base = spec.get("base")
    if not isinstance(base, dict) or base.get("model") == "rerank":
        raise InputError("must be a linear, mlp or boost model object", path=path, field="base")
    try:
        inner = ranker_from_dict({"n_features": n_features, **base}, path)
    except InputError as err:
        raise InputError(err.message, path=path, field=f"base.{err.field}") from None
    return RerankedRanker(inner, weights, tuple(kernels), float(l2))


def ranker_from_dict(spec: object, path: Path = None) -> AnyRanker:
    """The ranker of a model file's JSON object (module docstring)."""
    if not isinstance(spec, dict):
        raise InputError("expected a JSON object as written by 'rankmodels ltr train'", path=path)
    kind = spec.get("model", "linear")
    if kind not in MODEL_KINDS:
        raise InputError(f"must be one of {', '.join(MODEL_KINDS)}", path=path, field="model")
    method = spec.get("normalise", "none")
    if method not in NORMALISATIONS:
        raise InputError(
            f"must be one of {', '.join(NORMALISATIONS)}", path=path, field="normalise"
        )
    if method != "none":
        inner = ranker_from_dict({**spec, "normalise": "none"}, path)
        return NormalisedRanker(inner, method)
    n = n_features_of(spec, path)
    if kind == "rerank":
        return _reranker(spec, path, n)
    if kind == "boost":
        trees = spec.get("trees")
        if not isinstance(trees, list):
            raise InputError("must be a list of trees", path=path, field="trees")
        return BoostedRanker(tuple(_tree(t, path, f"trees[{i}]", n) for i, t in enumerate(trees)))
    mean, scale = _standardisation(spec, path, n)
    if kind == "linear":
        return LinearRanker(_array(spec, "weights", path, n), mean, scale)
    hidden = spec.get("hidden")
    if not (
        isinstance(hidden, list)
        and hidden
        and all(isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in hidden)
    ):
        raise InputError("must be a list of positive integers", path=path, field="hidden")
    model = MLP(tuple(hidden))
    return Ranker(model, _array(spec, "params", path, model.n_params(n)), mean, scale)


def read_ranker(path: str | os.PathLike[str]) -> tuple[AnyRanker, int]:
    """The ranker of a model file and its feature count."""
    try:
        with open(path, encoding="utf-8") as handle:
            spec = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"not a JSON model file ({err})", path=path) from None
    ranker = ranker_from_dict(spec, path)
    return ranker, n_features_of(spec, path)
