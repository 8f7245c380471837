"""The likelihood engines, one :class:`EngineSpec` each, in :data:`ENGINE_REGISTRY`.

A spec says what to call and what the engine needs: whether it takes the message-passing
controls (``damping``, ``tol``, ``max_iter``) or hand labels, whether its ``loglik`` is the
exact sum over associations of its model (and of which model: ranked, eqs. 5.25-5.26, or the
order-blind baseline, eq. 5.72), and the conditions it places on the signal model.
:func:`rankmodels.tracking.engines.log_likelihood` dispatches through it, the tracker's
settings and the CLI's ``--engine`` choices read it, and :func:`engine_table` is the table in
``docs/tracking.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rankmodels.registry import Registry
from rankmodels.tracking.engines._common import LikelihoodResult
from rankmodels.tracking.engines.baseline import baseline_engine
from rankmodels.tracking.engines.bp import bp_engine
from rankmodels.tracking.engines.exact import exact_engine
from rankmodels.tracking.engines.labels import labels_engine
from rankmodels.tracking.engines.minfactor import minfactor_engine

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "ENGINE_REGISTRY",
    "EngineSpec",
    "ModelConstraint",
    "engine_table",
]


class ModelSettings(Protocol):
    """What a constraint reads: a :class:`~rankmodels.tracking.signal_model.SignalModel` or the
    tracker's settings."""

    @property
    def p_detect(self) -> float: ...

    @property
    def clutter_rate(self) -> float: ...

    @property
    def multipath(self) -> float: ...


@dataclass(frozen=True)
class ModelConstraint:
    """A condition an engine places on the signal model.

    ``holds(settings)`` tests it; the error reads "engine NAME REASON: it needs NEEDS".
    """

    needs: str
    reason: str
    holds: Callable[[ModelSettings], bool]

    def message(self, engine: str) -> str:
        """The one-line explanation for an engine whose constraint fails."""
        return f"engine {engine} {self.reason}: it needs {self.needs}"


@dataclass(frozen=True)
class EngineSpec:
    """One likelihood engine.

    Attributes
    ----------
    name, summary: registry key and one-line description.
    run: ``run(cycle, predicted, model, *, association, [controls], [labels]) ->
        LikelihoodResult``.
    association: what ``association=True`` returns (for the docs).
    cost: time per particle (for the docs).
    message_passing: takes the message-passing ``controls``.
    needs_labels: takes the hand ``labels`` of the recorded arrivals.
    exact: ``loglik`` is the exact sum over associations of its model.
    ranked: the model is the ranked one of eqs. 5.25-5.26 (False: eq. 5.72, or hand labels).
    constraints: conditions on the signal model.
    """

    name: str
    summary: str
    run: Callable[..., LikelihoodResult]
    association: str
    cost: str
    message_passing: bool = False
    needs_labels: bool = False
    exact: bool = False
    ranked: bool = True
    constraints: tuple[ModelConstraint, ...] = ()

    def model_problem(self, settings: ModelSettings) -> str | None:
        """The message of the first constraint ``settings`` break (with their values), or None."""
        for constraint in self.constraints:
            if not constraint.holds(settings):
                multipath = f" and multipath = {settings.multipath}" if settings.multipath else ""
                return (
                    f"{constraint.message(self.name)}, got p_detect = {settings.p_detect} and "
                    f"clutter_rate = {settings.clutter_rate}{multipath}"
                )
        return None

    def check_model(self, settings: ModelSettings) -> None:
        """Raise ValueError if ``settings`` break a constraint (see :meth:`model_problem`)."""
        problem = self.model_problem(settings)
        if problem is not None:
            raise ValueError(problem)


_LOSSY = "p_detect < 1"

ENGINE_REGISTRY: Registry[EngineSpec] = Registry("engine")
ENGINE_REGISTRY.register(
    EngineSpec(
        "exact",
        "the sum over all associations, eq. 5.26",
        exact_engine,
        association="exact",
        cost="`O(s m 2^m)`",
        exact=True,
    )
)
ENGINE_REGISTRY.register(
    EngineSpec(
        "bp",
        "the paper's loopy BP on the S/R graph, Bethe `log Z` (eqs. 5.28-5.63)",
        bp_engine,
        association="beliefs of `R_j`",
        cost="`O(s m)` per sweep",
        message_passing=True,
        constraints=(
            ModelConstraint(
                _LOSSY,
                "cannot hold the unmatched weights in double precision when P_D = 1 (use exact "
                "or minfactor)",
                lambda settings: settings.p_detect < 1,
            ),
        ),
    )
)
ENGINE_REGISTRY.register(
    EngineSpec(
        "minfactor",
        "BP on the min-factor graph of section 5.2 with loss and clutter (eqs. 5.68-5.71)",
        minfactor_engine,
        association="beliefs of `f′_k`",
        cost="`O(s m³)` per sweep",
        message_passing=True,
    )
)
ENGINE_REGISTRY.register(
    EngineSpec(
        "baseline",
        "the arrival order ignored, eq. 5.72, summed exactly",
        baseline_engine,
        association="exact for its model",
        cost="`O(s m 2^m)`",
        exact=True,
        ranked=False,
        constraints=(
            ModelConstraint(
                _LOSSY,
                "gives every unrecorded source the weight 1 - P_D (eq. 5.72), so with P_D = 1 "
                "every source would have to be recorded",
                lambda settings: settings.p_detect < 1,
            ),
        ),
    )
)
ENGINE_REGISTRY.register(
    EngineSpec(
        "labels",
        "hand labels, eq. 5.73",
        labels_engine,
        association="the labels",
        cost="`O(m)`",
        needs_labels=True,
        ranked=False,
    )
)

#: Engine names in registry order (the CLI's ``--engine`` choices).
ENGINES: tuple[str, ...] = ENGINE_REGISTRY.names
#: The engine :func:`rankmodels.tracking.engines.log_likelihood` uses unless told otherwise.
DEFAULT_ENGINE = "exact"


def engine_table() -> str:
    """The markdown table of the engines in ``docs/tracking.md``."""
    rows = [
        f"| `{e.name}`{' (default)' if e.name == DEFAULT_ENGINE else ''} | {e.summary} | "
        f"{e.cost} | {e.association} |"
        for e in ENGINE_REGISTRY
    ]
    header = "| engine | what it computes | cost per particle | association |\n|---|---|---|---|"
    return "\n".join([header, *rows])
