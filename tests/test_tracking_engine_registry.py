"""The engine registry: every entry runs, every exact entry is exact, every constraint holds
where it is checked (library, tracker settings, CLI), and the CLI and docs read it."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import click
import numpy as np
import pytest

from rankmodels.errors import InputError
from rankmodels.tracking.engines import ENGINE_REGISTRY, ENGINES, LikelihoodResult, log_likelihood
from rankmodels.tracking.engines.oracle import enumerate_associations
from rankmodels.tracking.engines.registry import engine_table
from rankmodels.tracking.pipeline import TrackConfig
from rankmodels.tracking.signal_model import SignalModel
from rankmodels_app.track import track_float

SPECS = list(ENGINE_REGISTRY)
#: Models at the corners the constraints speak of: with and without loss and clutter.
MODEL_GRID = [
    *(
        SignalModel(sigma=4.0, p_detect=pd, clutter_rate=lam, window=100.0)
        for pd, lam in itertools.product((0.7, 1.0), (0.0, 1.5))
    ),
    SignalModel(sigma=4.0, p_detect=1.0, clutter_rate=0.0, window=100.0, multipath=0.05),
]


def allowed_models(spec):
    return [model for model in MODEL_GRID if spec.model_problem(model) is None]


def small_cycle(rng: np.random.Generator, model: SignalModel):
    """s = 3 sources, r = 3 ranks; the arrivals are the sources heard (so a no-loss,
    no-clutter model can explain them), a rank left empty half the time; labels to match."""
    predicted = np.sort(rng.uniform(10, 90, (4, 3)), axis=1)
    heard = predicted[0] + rng.normal(0, model.sigma, 3)
    order = np.argsort(heard)
    m = int(rng.integers(2, 4))
    toa = np.full(3, np.nan)
    toa[:m] = heard[order][:m]
    labels = np.full(3, -2)
    labels[:m] = order[:m]
    return toa, predicted, labels


def call(spec, model, toa, predicted, labels, **kwargs) -> LikelihoodResult:
    return log_likelihood(
        toa, predicted, model, engine=spec.name, labels=labels, association=True, **kwargs
    )


def test_names_and_cli_choices_are_the_registry():
    assert ENGINES == ENGINE_REGISTRY.names == tuple(spec.name for spec in SPECS)
    option = next(p for p in track_float.params if p.name == "engine")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == ENGINES


def test_docs_table_is_the_registry():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "tracking.md").read_text()
    assert engine_table() in docs
    assert len(engine_table().splitlines()) == 2 + len(SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_every_engine_runs_on_a_small_cycle(rng, spec):
    """Finite loglik (N,), association posteriors (N, m, s + 1) whose rows are distributions;
    sweep counts exactly from the message-passing engines."""
    models = allowed_models(spec)
    assert models
    for model in models:
        toa, predicted, labels = small_cycle(rng, model)
        m = int(np.sum(~np.isnan(toa)))
        res = call(spec, model, toa, predicted, labels)
        assert res.loglik.shape == (4,) and np.all(np.isfinite(res.loglik))
        assert res.association.shape == (4, m, 4)
        assert np.all(res.association >= 0)
        np.testing.assert_allclose(res.association.sum(axis=2), 1.0, atol=1e-9)
        assert (res.iterations is not None) == spec.message_passing
        assert (res.converged is not None) == spec.message_passing


@pytest.mark.parametrize("spec", [s for s in SPECS if s.exact], ids=lambda spec: spec.name)
def test_every_exact_engine_matches_enumeration(rng, spec):
    for model in allowed_models(spec):
        for _ in range(3):
            toa, predicted, labels = small_cycle(rng, model)
            res = call(spec, model, toa, predicted, labels)
            for n in range(predicted.shape[0]):
                want, post = enumerate_associations(toa, predicted[n], model, ranked=spec.ranked)
                assert res.loglik[n] == pytest.approx(want, rel=1e-13)
                np.testing.assert_allclose(res.association[n], post, atol=1e-13)


def test_the_exact_engine_is_registered_as_exact():
    assert ENGINE_REGISTRY["exact"].exact and ENGINE_REGISTRY["exact"].ranked


@pytest.mark.parametrize("spec", [s for s in SPECS if s.constraints], ids=lambda spec: spec.name)
def test_every_constraint_is_enforced(rng, spec):
    """A model breaking a constraint: ValueError from the library, InputError on ``engine``
    from the tracker's settings, both with the constraint's message and the values; each
    constraint is broken by some model of the grid and kept by another."""
    for constraint in spec.constraints:
        broken = [model for model in MODEL_GRID if not constraint.holds(model)]
        assert broken and len(broken) < len(MODEL_GRID)
        for model in broken:
            toa, predicted, labels = small_cycle(rng, model)
            problem = spec.model_problem(model)
            assert problem.startswith(f"engine {spec.name} ") and constraint.needs in problem
            assert f"p_detect = {model.p_detect}" in problem
            with pytest.raises(ValueError) as err:
                call(spec, model, toa, predicted, labels)
            assert str(err.value) == problem
            with pytest.raises(InputError) as err:
                TrackConfig(
                    engine=spec.name,
                    p_detect=model.p_detect,
                    clutter_rate=model.clutter_rate,
                    multipath=model.multipath,
                )
            assert err.value.field == "engine" and problem in str(err.value)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_options_reach_exactly_the_engines_that_take_them(rng, spec):
    """Message-passing controls are checked and used by the message-passing engines and
    ignored by the others; labels are required by the engines that need them only."""
    model = allowed_models(spec)[0]
    toa, predicted, labels = small_cycle(rng, model)
    if spec.message_passing:
        with pytest.raises(ValueError, match="max_iter must be >= 1"):
            call(spec, model, toa, predicted, labels, max_iter=0)
        one = call(spec, model, toa, predicted, labels, max_iter=1, tol=1e-300)
        assert one.iterations == 1 and one.converged is False
    else:
        res = call(spec, model, toa, predicted, labels, max_iter=0, damping=math.nan)
        assert res.iterations is None and res.converged is None
    if spec.needs_labels:
        with pytest.raises(ValueError, match="needs labels"):
            call(spec, model, toa, predicted, None)
    else:
        assert np.all(np.isfinite(call(spec, model, toa, predicted, None).loglik))


def test_unknown_engine_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown engine 'magic'; expected one of: exact, bp"):
        log_likelihood(np.array([1.0]), np.ones((1, 2)), SignalModel(), engine="magic")
