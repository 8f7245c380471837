"""The JSON form of a Mallows mixture over named candidates (``rankmodels mallows``).

One object with a list ``components``; each component has ``weight`` (> 0; the weights are
normalised to sum to 1), ``centre`` (candidate names, best first; every component ranks the
same names) and ``phi`` in (0, 1] or ``theta = -log(phi) >= 0`` (or both, agreeing).
``mallows fit --format json`` writes this form (plus fit statistics), so a fitted mixture can
be sampled again.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from rankmodels.aggregation.mallows.model import Mallows, MallowsMixture
from rankmodels.errors import InputError

__all__ = ["MAX_THETA", "mixture_from_json", "mixture_to_json", "read_mixture"]

MAX_THETA = 700.0
"""Largest ``theta`` accepted (``phi = e^-700 ~ 1e-304`` is still a positive float)."""


def read_mixture(path: str | os.PathLike[str]) -> tuple[tuple[str, ...], MallowsMixture]:
    """Candidate names and the mixture in the JSON file at ``path``."""
    with open(path, encoding="utf-8") as handle:
        try:
            document = json.load(handle)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError(f"not a JSON document ({err})", path=path) from None
    try:
        return mixture_from_json(document)
    except InputError as err:
        raise err.with_path(path) from None


def _number(value: Any, field: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"expected {what}, got {value!r}", field=field)
    return float(value)


def _dispersion(comp: dict[str, Any], field: str) -> float:
    """``phi`` from ``phi`` and/or ``theta`` (both given: they must agree)."""
    phi = theta = None
    if "phi" in comp:
        phi = _number(comp["phi"], f"{field}.phi", "a number in (0, 1]")
        if not 0 < phi <= 1:
            raise InputError(f"expected a number in (0, 1], got {phi!r}", field=f"{field}.phi")
    if "theta" in comp:
        what = f"a number in [0, {MAX_THETA:g}]"
        theta = _number(comp["theta"], f"{field}.theta", what)
        if not 0 <= theta <= MAX_THETA:
            raise InputError(f"expected {what}, got {theta!r}", field=f"{field}.theta")
    if phi is None and theta is None:
        raise InputError("expected phi or theta", field=field)
    if (
        phi is not None
        and theta is not None
        and not math.isclose(theta, -math.log(phi), rel_tol=1e-9, abs_tol=1e-12)
    ):
        raise InputError(f"phi = {phi!r} and theta = {theta!r} disagree", field=field)
    return phi if phi is not None else math.exp(-theta)


def mixture_from_json(document: Any) -> tuple[tuple[str, ...], MallowsMixture]:
    """Candidate names (in the first centre's order) and the mixture of a parsed document."""
    comps = document.get("components") if isinstance(document, dict) else None
    if not isinstance(comps, list) or not comps:
        raise InputError("expected a non-empty list of components", field="components")
    names: tuple[str, ...] | None = None
    weights, models = [], []
    for i, comp in enumerate(comps):
        field = f"components[{i}]"
        if not isinstance(comp, dict):
            raise InputError("expected an object with weight, centre and phi", field=field)
        weight = _number(comp.get("weight"), f"{field}.weight", "a positive number")
        if weight <= 0:
            raise InputError(f"expected a positive number, got {weight!r}", field=f"{field}.weight")
        centre = comp.get("centre")
        if (
            not isinstance(centre, list)
            or not centre
            or not all(isinstance(c, str) and c for c in centre)
            or len(set(centre)) != len(centre)
        ):
            raise InputError(
                "expected a list of distinct candidate names, best first", field=f"{field}.centre"
            )
        if names is None:
            names = tuple(centre)
        elif set(centre) != set(names):
            raise InputError(
                f"expected the candidates of components[0] ({', '.join(names)})",
                field=f"{field}.centre",
            )
        phi = _dispersion(comp, field)
        index = {name: k for k, name in enumerate(names)}
        models.append(Mallows(np.array([index[c] for c in centre]), phi))
        weights.append(weight)
    assert names is not None
    total = sum(weights)  # Python floats: an overflow is inf, without a warning
    if not math.isfinite(total):
        raise InputError("the weights add up to more than the largest float", field="components")
    return names, MallowsMixture(np.array(weights) / total, tuple(models))


def mixture_to_json(candidates: tuple[str, ...], mixture: MallowsMixture) -> dict[str, Any]:
    """The JSON form of ``mixture`` (components in the mixture's order)."""
    return {
        "components": [
            {
                "weight": float(w),
                "centre": [candidates[x] for x in c.centre],
                "phi": c.phi,
                "theta": c.theta,
            }
            for w, c in zip(mixture.weights, mixture.components, strict=True)
        ]
    }
