"""The tidy result table of a study and its per-grid-point summary.

:attr:`StudyResult.records` has one row per task: the swept parameters, ``replicate``, every
metric the task returned and ``task_time_s``. :meth:`StudyResult.summary` has one row per
(grid point, metric) with

    n = number of replicates,  mean = (1/n) sum_k y_k,
    se = s / sqrt(n),  s^2 = (1/(n-1)) sum_k (y_k - mean)^2   (NaN when n = 1),

and the median. :meth:`StudyResult.paired_differences` gives, per replicate, the difference of
a metric between two values of one parameter (the other parameters equal) -- with paired seeds
(:class:`~rankmodels.studies.study.Study`) the right way to compare two estimators.
:meth:`StudyResult.compare` summarises those differences (mean, SE, win fraction, Wilcoxon
signed-rank p-value). :meth:`StudyResult.to_dataset` is the same table as an
``xarray.Dataset`` with dims (swept parameters..., replicate), for NetCDF.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy.stats import wilcoxon

from rankmodels import __version__
from rankmodels.studies.study import Study

__all__ = ["StudyResult"]


@dataclass
class StudyResult:
    """Per-task records of a study run, with what is needed to reproduce it in ``attrs``."""

    records: pd.DataFrame
    dims: tuple[str, ...]
    metrics: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_rows(
        cls, study: Study, rows: Sequence[dict[str, Any]], **extra_attrs: Any
    ) -> StudyResult:
        """Build from per-task rows (in task order) of ``study``."""
        records = pd.DataFrame(list(rows))
        skip = {*study.dims, "replicate", "task_time_s"}
        metrics = tuple(c for c in records.columns if c not in skip)
        attrs: dict[str, Any] = {
            "study": study.name,
            "seed": study.seed,
            "replicates": study.replicates,
            "paired_seeds": int(study.paired),
            "rankmodels_version": __version__,
            **{f"fixed_{k}": v for k, v in study.fixed.items()},
            **extra_attrs,
        }
        return cls(records, tuple(study.dims), metrics, attrs)

    def summary(self, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per (grid point, metric): columns ``dims..., metric, n, mean, se, median``
        (module docs), grid points in the study's order."""
        names = list(self.metrics if metrics is None else metrics)
        unknown = set(names) - set(self.metrics)
        if unknown:
            raise ValueError(f"unknown metrics {sorted(unknown)}; have {list(self.metrics)}")
        long = self.records.melt(
            id_vars=[*self.dims, "replicate"], value_vars=names, var_name="metric"
        )
        grouped = long.groupby([*self.dims, "metric"], sort=False)["value"]
        out = grouped.agg(n="count", mean="mean", std="std", median="median").reset_index()
        out["se"] = out.pop("std") / np.sqrt(out["n"])
        return out[[*self.dims, "metric", "n", "mean", "se", "median"]]

    def paired_differences(self, metric: str, dim: str, a: Any, b: Any) -> pd.DataFrame:
        """``metric(dim=a) - metric(dim=b)`` for each replicate and each combination of the
        other swept parameters: columns ``other dims..., replicate, difference``."""
        if metric not in self.metrics:
            raise ValueError(f"unknown metric {metric!r}; have {list(self.metrics)}")
        if dim not in self.dims:
            raise ValueError(f"unknown parameter {dim!r}; swept: {list(self.dims)}")
        keys = [d for d in self.dims if d != dim] + ["replicate"]
        table = self.records
        left = table[table[dim] == a].set_index(keys)[metric]
        right = table[table[dim] == b].set_index(keys)[metric]
        if left.empty or right.empty:
            raise ValueError(f"{dim} = {a!r} or {b!r} is not in the study")
        diff = (left - right).rename("difference").dropna()
        return diff.reset_index()

    def compare(self, metric: str, dim: str, a: Any, b: Any) -> pd.DataFrame:
        """Paired comparison of ``dim = a`` against ``dim = b`` per combination of the other
        swept parameters: ``n`` pairs, ``mean_difference`` (a - b) and its ``se``, ``a_wins``
        (fraction of replicates with ``metric(a) < metric(b)``) and the two-sided Wilcoxon
        signed-rank ``p_value`` (1 when every difference is 0)."""
        diff = self.paired_differences(metric, dim, a, b)
        others = [d for d in self.dims if d != dim]
        diff["_all"] = 0  # a constant key, so that groupby also works without other dims
        rows = []
        for key, part in diff.groupby([*others, "_all"], sort=False):
            d = part["difference"].to_numpy(dtype=float)
            p_value = 1.0 if not np.any(d) else float(wilcoxon(d).pvalue)
            rows.append(
                {
                    **dict(zip(others, key[:-1], strict=True)),
                    "n": d.size,
                    "mean_difference": float(d.mean()),
                    "se": float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else np.nan,
                    "a_wins": float(np.mean(d < 0)),
                    "p_value": p_value,
                }
            )
        return pd.DataFrame(rows)

    def to_dataset(self) -> xr.Dataset:
        """The records as an ``xarray.Dataset``: dims (swept parameters..., ``replicate``),
        one variable per metric plus ``task_time_s``; ``attrs`` carried over."""
        ds = xr.Dataset.from_dataframe(self.records.set_index([*self.dims, "replicate"]))
        ds.attrs.update({k: _netcdf_attr(v) for k, v in self.attrs.items()})
        return ds


def _netcdf_attr(value: Any) -> Any:
    """NetCDF attributes must be numbers or strings."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str, np.integer, np.floating)):
        return value
    return str(value)
