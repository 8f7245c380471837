"""All learning-to-rank losses by name: the registry :data:`LOSSES`.

Every loss has the signature ``loss(scores, relevance, lengths=None, *, **options)`` and
returns a :class:`~rankmodels.ltr.batching.LossResult` with the per-query value and its
exact gradient with respect to the scores (LambdaRank: the lambda vector, exact for its
rank-frozen objective). Losses are minimised; the NDCG-type ones are ``1 - (relaxed) NDCG``.

Each entry is a :class:`LossSpec`: the function, a one-line summary, the smoothing option
that annealing lowers (if any), the options the trainer fixes so that the value is the
function whose gradient is returned, and the keyword options read from the function's own
signature (name, type, default, allowed words). The command line's ``--loss`` choices, the
parsing and checking of ``--option KEY=VALUE``, :func:`rankmodels.ltr.train.fit_linear_ranker`,
:func:`rankmodels.ltr.jax_ops.jax_loss` and the table in ``docs/ltr.md``
(:func:`options_table`) all read it. Calling an entry calls the loss after checking the
option names and types::

    LOSSES["softrank"](scores, relevance, lengths, sigma=0.5)

:meth:`LossSpec.with_hessian` adds the diagonal of the Hessian in the scores (Newton
boosting): in closed form where the entry has ``hessian`` (the Bregman surrogates, ListNet,
ListMLE, RankNet, LambdaRank's rank-frozen objective), by central differences of the
gradient otherwise (:mod:`rankmodels.ltr.curvature`). A loss whose value depends on the
ranking its scores induce and that can be frozen at the ranks of other scores (LambdaRank's
``ranked_by``) has ``frozen_trial``: in one pass, its value frozen at the ranks of
``frozen_at`` and :meth:`with_hessian` at the scores' own ranks (Newton boosting's line
search, :mod:`rankmodels.ltr.boost`).
"""

from __future__ import annotations

import inspect
import numbers
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from rankmodels.ltr.batching import LossResult
from rankmodels.ltr.bregman import (
    SURROGATES,
    bregman_loss,
    bregman_mixture_loss,
    bregman_mixture_with_hessian,
    bregman_with_hessian,
)
from rankmodels.ltr.curvature import diagonal_by_differences
from rankmodels.ltr.listwise import (
    listmle_loss,
    listmle_with_hessian,
    listnet_loss,
    listnet_with_hessian,
)
from rankmodels.ltr.metrics import DISCOUNTS, GAINS
from rankmodels.ltr.neuralsort import pirank_loss
from rankmodels.ltr.pairwise import (
    lambdarank_loss,
    lambdarank_trial,
    lambdarank_with_hessian,
    ranknet_loss,
    ranknet_with_hessian,
)
from rankmodels.ltr.sinkprop import MEASURES, sinkprop_loss
from rankmodels.ltr.softrank import METHODS, softndcg_loss
from rankmodels.registry import Registry

__all__ = ["LOSSES", "LossOption", "LossResult", "LossSpec", "options_table"]

_WORDS: dict[str, tuple[str, ...]] = {
    "gain": tuple(GAINS),
    "discount": DISCOUNTS,
    "method": METHODS,
    "surrogate": SURROGATES,
    "measure": MEASURES,
}
"""The allowed words of the string options (``discount`` also takes an array)."""

_TEXT_KINDS = (bool, int, float, str)  # first match wins: bool before int
_ISINSTANCE: dict[type, tuple[type, ...]] = {
    bool: (bool, np.bool_),
    int: (numbers.Integral,),
    float: (numbers.Real,),
}


@dataclass(frozen=True)
class LossOption:
    """One keyword option of a loss.

    ``kind`` is the type a ``KEY=VALUE`` text parses to (``bool``, ``int``, ``float`` or
    ``str``; ``object`` for options only the library can pass, e.g. a random generator;
    an ``int`` option that also accepts a ``tuple`` parses ``1,2,3`` to one);
    ``accepts`` the types a library call may pass; ``optional`` whether ``None`` is
    allowed; ``words`` the allowed strings of a ``str`` option.
    """

    name: str
    kind: type
    accepts: tuple[type, ...]
    default: object
    optional: bool
    words: tuple[str, ...] | None = None

    @property
    def type_name(self) -> str:
        """What the option takes, for messages and docs."""
        names = {bool: "true or false", int: "an integer", float: "a finite number", str: "a word"}
        text = names.get(self.kind, "a value only the library can pass")
        if self.kind is int and tuple in self.accepts:
            text = "an integer or comma-separated integers"
        if self.words:
            text = "one of " + ", ".join(self.words)
        return f"{text} (or none)" if self.optional else text

    def parse(self, text: str) -> object:
        """The value of ``KEY=text`` (``none`` for an optional option); ValueError naming the
        option and what it takes otherwise."""
        raw = text.strip()
        if self.optional and raw.lower() == "none":
            return None
        value: object = None
        if self.kind is bool and raw.lower() in ("true", "false", "1", "0", "yes", "no"):
            value = raw.lower() in ("true", "1", "yes")
        elif self.kind is int:
            try:
                value = int(raw)
            except ValueError:
                if tuple in self.accepts and "," in raw:
                    try:
                        value = tuple(int(v) for v in raw.split(","))
                    except ValueError:
                        pass
        elif self.kind is float:
            try:
                value = float(raw)
            except ValueError:
                pass
            if value is not None and not np.isfinite(value):
                value = None
        elif self.kind is str and (self.words is None or raw in self.words):
            value = raw
        if value is None:
            raise ValueError(f"{self.name} takes {self.type_name}, got {text!r}")
        return value

    def check(self, value: object) -> None:
        """TypeError / ValueError when a library call passes a value of the wrong kind."""
        if value is None and self.optional:
            return
        if isinstance(value, bool | np.bool_) and bool not in self.accepts:
            raise TypeError(f"{self.name} takes {self.type_name}, got {value!r}")
        if not isinstance(value, self.accepts):
            raise TypeError(f"{self.name} takes {self.type_name}, got {value!r}")
        if self.words is not None and isinstance(value, str) and value not in self.words:
            raise ValueError(f"{self.name} takes {self.type_name}, got {value!r}")


def _accepted(annotation: object) -> tuple[tuple[type, ...], bool]:
    """The types an annotation (``float``, ``int | None``, ``str | np.ndarray``) admits."""
    args = typing.get_args(annotation) or (annotation,)
    types = tuple(typing.get_origin(a) or a for a in args if a is not type(None))
    accepts = tuple(t for a in types for t in _ISINSTANCE.get(a, (a,)))
    return accepts, len(types) < len(args)


def options_of(function: Callable[..., LossResult]) -> tuple[LossOption, ...]:
    """The keyword-only options of a loss function, from its signature and annotations."""
    found = []
    for p in inspect.signature(function, eval_str=True).parameters.values():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        accepts, optional = _accepted(p.annotation)
        args = typing.get_args(p.annotation) or (p.annotation,)
        kind = next((k for k in _TEXT_KINDS if k in args), object)
        found.append(LossOption(p.name, kind, accepts, p.default, optional, _WORDS.get(p.name)))
    return tuple(found)


_PROBE = (np.array([[0.3, -0.2, 0.1, 0.8]]), np.array([[2.0, 0.0, 1.0, 0.0]]))
"""A small query on which :meth:`LossSpec.validate` runs a loss once."""


@dataclass(frozen=True)
class LossSpec:
    """A registered loss (see the module docstring)."""

    name: str
    summary: str
    function: Callable[..., LossResult]
    smoothing: str | None = None
    fit_options: Mapping[str, object] = field(default_factory=dict, hash=False)
    options: tuple[LossOption, ...] = ()
    hessian: Callable[..., tuple[LossResult, np.ndarray]] | None = None
    frozen_trial: Callable[..., tuple[object, LossResult, np.ndarray]] | None = None

    def __post_init__(self) -> None:
        if not self.options:
            object.__setattr__(self, "options", options_of(self.function))

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)

    def option(self, name: str) -> LossOption:
        """The option ``name``; ValueError listing the valid ones otherwise."""
        for opt in self.options:
            if opt.name == name:
                return opt
        valid = ", ".join(self.option_names) or "none"
        raise ValueError(f"loss {self.name} has no option {name!r}; its options: {valid}")

    def check(self, options: Mapping[str, object]) -> dict[str, object]:
        """Names and types of ``options`` (ValueError / TypeError naming the option)."""
        for name, value in options.items():
            self.option(name).check(value)
        return dict(options)

    def parse(self, pairs: Mapping[str, str]) -> dict[str, object]:
        """Typed options from their text (``{"sigma": "0.5"}`` -> ``{"sigma": 0.5}``)."""
        return {name: self.option(name).parse(text) for name, text in pairs.items()}

    def validate(self, options: Mapping[str, object]) -> dict[str, object]:
        """:meth:`check` the options and run the loss once on a small query, so that the
        loss's own range checks (``sigma > 0``, ``k >= 1``, ...) fail before any work, as
        do options under which it is not finite there (ValueError either way)."""
        checked = self.check(options)
        try:
            with np.errstate(all="ignore"):
                res = self.function(*_PROBE, **checked)
        except ArithmeticError as err:
            raise ValueError(f"loss {self.name} fails with {checked}: {err}") from None
        if not (np.all(np.isfinite(res.value)) and np.all(np.isfinite(res.grad))):
            raise ValueError(f"loss {self.name} is not finite with {checked} on a small query")
        return checked

    def __call__(
        self, scores: object, relevance: object, lengths: object | None = None, **options: object
    ) -> LossResult:
        return self.function(scores, relevance, lengths, **self.check(options))

    def with_hessian(
        self, scores: np.ndarray, relevance: np.ndarray, lengths: np.ndarray, **options: object
    ) -> tuple[LossResult, np.ndarray]:
        """The loss on a ``(B, n)`` batch and the ``(B, n)`` diagonal of its Hessian in the
        scores (module docstring); options as for a call, unchecked."""
        if self.hessian is not None:
            return self.hessian(scores, relevance, lengths, **options)
        result = self.function(scores, relevance, lengths, **options)
        return result, diagonal_by_differences(self.function, scores, relevance, lengths, **options)


LOSSES = Registry[LossSpec]("loss")
"""The losses by name, in the order of ``docs/ltr.md``."""

for _spec in (
    LossSpec(
        "sinkprop",
        "1 - expected NDCG under a Sinkhorn-normalised smoothed indicator matrix (SinkProp)",
        sinkprop_loss,
        smoothing="sigma",
    ),
    LossSpec(
        "softrank",
        "1 - SoftNDCG: rank distributions of Gaussian-smoothed scores (SoftRank)",
        softndcg_loss,
        smoothing="sigma",
    ),
    LossSpec(
        "pirank",
        "1 - NeuralSort-relaxed NDCG@k (PiRank); trained on the relaxed value",
        pirank_loss,
        smoothing="tau",
        fit_options={"straight_through": False},
    ),
    LossSpec(
        "ranknet",
        "pairwise logistic loss over pairs r_i > r_j (RankNet)",
        ranknet_loss,
        hessian=ranknet_with_hessian,
    ),
    LossSpec(
        "lambdarank",
        "RankNet pairs weighted by |Delta NDCG| of swapping them (LambdaRank)",
        lambdarank_loss,
        hessian=lambdarank_with_hessian,
        frozen_trial=lambdarank_trial,
    ),
    LossSpec(
        "listnet",
        "top-one cross-entropy of score and label softmax (ListNet)",
        listnet_loss,
        hessian=listnet_with_hessian,
    ),
    LossSpec(
        "listmle",
        "Plackett-Luce likelihood of the label order (ListMLE)",
        listmle_loss,
        hessian=listmle_with_hessian,
    ),
    LossSpec(
        "bregman",
        "NDCG-consistent Bregman surrogate (dissertation ch. 3)",
        bregman_loss,
        hessian=bregman_with_hessian,
    ),
    LossSpec(
        "bregman_mix",
        "mixture of the three Bregman surrogates: normalised weights, a scale (dissertation 3.5)",
        bregman_mixture_loss,
        hessian=bregman_mixture_with_hessian,
    ),
):
    LOSSES.register(_spec)


def options_table() -> str:
    """Markdown table of every loss, its options with defaults, and what annealing lowers."""
    rows = ["| loss | options (default) | `--anneal` lowers | what it is |", "|---|---|---|---|"]
    for spec in LOSSES:
        opts = ", ".join(f"`{o.name}={o.default}`" for o in spec.options) or "—"
        anneal = f"`{spec.smoothing}`" if spec.smoothing else "—"
        rows.append(f"| `{spec.name}` | {opts} | {anneal} | {spec.summary} |")
    return "\n".join(rows)
