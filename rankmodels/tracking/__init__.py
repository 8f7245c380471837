"""RAFOS float tracking with ranked signals ([Pareek2017] chapter 5).

A float records, every listening cycle, the first ``r`` times of arrival of signals from ``s``
moored sound sources, without their labels; some signals are lost, some recorded ones are
clutter. The pieces, one job each:

* :mod:`~rankmodels.tracking.schema` -- the file formats (variables, units, label values);
* :mod:`~rankmodels.tracking.records` -- read / validate / write float records (NetCDF);
* :mod:`~rankmodels.tracking.tables` -- float records from and to plain CSV tables;
* :mod:`~rankmodels.tracking.geometry` -- great-circle distances, tangent-plane steps;
* :mod:`~rankmodels.tracking.signal_model`, :mod:`~rankmodels.tracking.engines` -- the
  per-cycle likelihood ``P(T_1..T_m | X)`` and association posteriors;
* :mod:`~rankmodels.tracking.dynamics` -- the random-walk motion model (eq. 5.1);
* :mod:`~rankmodels.tracking.filter` -- the particle filter (Algorithm 2);
* :mod:`~rankmodels.tracking.smoother` -- backward-simulation particle smoother;
* :mod:`~rankmodels.tracking.calibration` -- the Monte Carlo EM's M-step for the clock, the
  sound speed and the source offsets (weighted least squares with priors);
* :mod:`~rankmodels.tracking.model_fit` -- the statistical model's M-steps (TOA noise,
  detection, clutter, multipath, process noise) and their identifiability;
* :mod:`~rankmodels.tracking.em` -- the calibration's EM search (annealing, stages, gain
  rule, extrapolated steps, likelihood-ratio check), for one float
  (:mod:`~rankmodels.tracking.float_calibration`) or an experiment
  (:mod:`~rankmodels.tracking.experiment`, :mod:`~rankmodels.tracking.joint`);
* :mod:`~rankmodels.tracking.estimates` -- what was estimated and what kept, in words;
* :mod:`~rankmodels.tracking.prepared` -- a record prepared for the passes, and the
  parameters (geometry and statistical model) a pass runs under, both immutable;
* :mod:`~rankmodels.tracking.passes` -- one pass: filter, smoother, association;
* :mod:`~rankmodels.tracking.pipeline` -- :func:`track_float`: record in, track out, the
  stages in sequence;
* :mod:`~rankmodels.tracking.output` -- the track dataset;
  :mod:`~rankmodels.tracking.summary` -- what a run did;
* :mod:`~rankmodels.tracking.quality`, :mod:`~rankmodels.tracking.assessment`,
  :mod:`~rankmodels.tracking.launch` -- the track's quality checks against its own model,
  their inputs from a pass (the launch check's backward filter);
* :mod:`~rankmodels.tracking.batch` -- :func:`~rankmodels.tracking.batch.track_many`: many
  floats, serially or on Dask, and their summary table;
* :mod:`~rankmodels.tracking.simulate` -- simulated floats with known truth;
* :mod:`~rankmodels.tracking.worlds` -- varied simulated worlds and broken records, for
  measuring the quality checks;
* :mod:`~rankmodels.tracking.evaluate` -- scores against the truth.

Quick use::

    from rankmodels.tracking import read_float, track_float, TrackConfig
    track, summary = track_float(read_float("data/float767.nc"), TrackConfig(particles=10_000))
"""

from rankmodels._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "TrackConfig": ".pipeline",
        "read_float": ".records",
        "track_float": ".pipeline",
        "validate_float": ".records",
        "write_float": ".records",
    },
)
