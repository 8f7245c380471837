"""Where the joint calibration ends, against the likelihood: the derivative of the penalised
log-likelihood along the line from the estimate to the true parameters of a replay
(``docs/validation.md``, "Across seeds and worlds").

The experiment in ``REPLAY`` (``rankmodels simulate-experiment``, which writes the truth to
``experiment.json``) is calibrated jointly (:func:`~rankmodels.tracking.experiment.
calibrate_experiment`, serially, ``--fit-particles`` EM particles; the result is kept in
``REPLAY/fit_N.pkl`` and reused). Then at ``theta(t) = estimate + t (truth - estimate)`` for
each ``--t`` (the entries the calibration estimated; float clocks at the replay's launch
offset and drift) and each E-step ``--seeds``, every float's E-step at ``--particles`` with
the kept pass's statistical models, pooled as the M-step pools them, gives

- the derivative along the line, ``d . grad`` (Fisher's identity: the pooled E-step score
  plus the measured clock readings', minus the priors' gradient), in nats per unit of ``t``;
- the penalised log-likelihood the EM compares candidates by (particle log-likelihoods plus
  every prior);
- the curvature along the line: ``d^T I_c d`` (complete-data information) and ``d^T I_miss
  d`` (Louis' missing information), whose difference is the observed information.

A derivative that changes sign near ``t = 0`` says the estimate sits at the likelihood's
maximum along the line, so its distance from the truth is the likelihood's, not where the EM
stopped; the spread of the derivative between E-step seeds against its slope says how
precisely the E-step locates that maximum.

    python benchmarks/likelihood_line.py REPLAY [--fit-particles 1000] [--particles 1000]
        [--t 0 0.5 1 1.5] [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rankmodels.tracking.batch import read_record
from rankmodels.tracking.clock_readings import ClockReadings
from rankmodels.tracking.config import COMMAND_MULTIPATH, TrackConfig
from rankmodels.tracking.experiment import ExperimentResult, calibrate_experiment, float_e_step
from rankmodels.tracking.joint import (
    JointLayout,
    JointParameters,
    joint_log_prior,
    joint_prior,
    pool,
    with_clock_readings,
)


def fitted(files: list[str], replay: Path, particles: int) -> ExperimentResult:
    """The joint calibration of ``files`` at ``particles`` EM particles (cached in REPLAY)."""
    cache = replay / f"fit_{particles}.pkl"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    config = TrackConfig(
        calibrate=True, multipath=COMMAND_MULTIPATH, calibration_particles=particles
    )
    result = calibrate_experiment(files, config)
    cache.write_bytes(pickle.dumps(result))
    return result


def true_vector(result: ExperimentResult, replay: Path, files: list[str]) -> np.ndarray:
    """The replay's true parameters over ``theta`` where the calibration estimated them, the
    estimate elsewhere."""
    truth = json.loads((replay / "experiment.json").read_text())
    layout = JointLayout(len(result.sources.names), len(files))
    values, std = result.parameters.vector()
    true = values.copy()
    true[0] = 1000.0 / truth["true_sound_speed"]
    sources = {s["source"]: s for s in truth["sources"]}
    n = layout.n_sources
    for i, name in enumerate(result.sources.names):
        if np.isfinite(std[1 + i]):
            true[1 + i] = sources[name]["offset_error"]
        if np.isfinite(std[1 + n + i]):
            true[1 + n + i] = sources[name]["true_drift"] - sources[name]["file_drift"]
    floats = {f["file"]: f for f in truth["floats"]}
    for f, path in enumerate(files):
        c0, c1 = layout.clock(f)
        row = floats[Path(path).name]
        if np.isfinite(std[c0]):
            true[c0] = row["clock_offset_launch"]
        if np.isfinite(std[c1]):
            true[c1] = row["clock_drift"]
    return true


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("replay", type=Path)
    parser.add_argument("--fit-particles", type=int, default=1000)
    parser.add_argument("--particles", type=int, default=1000)
    parser.add_argument("--t", type=float, nargs="+", default=[0.0, 0.5, 1.0, 1.5])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    files = sorted(str(p) for p in args.replay.glob("*.nc") if not p.name.endswith("_truth.nc"))
    result = fitted(files, args.replay, args.fit_particles)
    estimate, std = result.parameters.vector()
    layout = JointLayout(len(result.sources.names), len(files))
    direction = np.where(np.isfinite(std), true_vector(result, args.replay, files) - estimate, 0)
    records = [read_record(path)[0] for path in files]
    clocks = [ClockReadings.from_record(r) for r in records]
    nominal = float(np.mean([float(r["sound_speed"]) for r in records]))
    models = [share.result.models[result.best] for share in result.floats]
    centre, width = joint_prior(layout, nominal, clocks)
    precision = np.where(np.isfinite(width), 1.0 / width**2, 0.0)
    print(
        f"estimate {result.parameters.sound_speed:.2f} ± {result.parameters.sound_speed_std:.2f}"
        f" m/s ({args.fit_particles} EM particles, {result.stop}); E-steps at "
        f"{args.particles} particles\n"
        "t | speed m/s | E-step seed | derivative along the line | penalised log-likelihood "
        "| d'I_c d | d'I_miss d | s"
    )
    config = TrackConfig(
        calibrate=True, multipath=COMMAND_MULTIPATH, calibration_particles=args.particles
    )
    for t in args.t:
        values = estimate + t * direction
        theta = JointParameters.from_vector(layout, values, std)
        for seed in args.seeds:
            start = time.perf_counter()
            passes = [
                float_e_step(path, replace(config, seed=seed), theta, f,
                             result.sources.of_float[f], models[f], 1.0, False)
                for f, path in enumerate(files)
            ]  # fmt: skip
            stats = with_clock_readings(
                pool([p.statistics for p in passes], result.sources.of_float, layout),
                values, layout, clocks,
            )  # fmt: skip
            gradient = stats.score - precision * (values - centre)
            score = sum(p.loglik + p.model.log_prior(p.start) for p in passes)
            score += joint_log_prior(theta, nominal, clocks)
            print(
                f"{t:+.2f} | {theta.sound_speed:.2f} | {seed} | {gradient @ direction:+.1f} | "
                f"{score:.1f} | {direction @ stats.information @ direction:.1f} | "
                f"{direction @ stats.score_cov @ direction:.1f} | "
                f"{time.perf_counter() - start:.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
