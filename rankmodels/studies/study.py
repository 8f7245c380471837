"""A simulation study: a grid of parameters x replicate seeds -> one task each.

A :class:`Study` names a *task* -- a pure, module-level function ``task(params, seed) -> dict``
of metrics (floats) -- the grid it is evaluated on (the Cartesian product of ``grid``'s value
lists, merged with the ``fixed`` parameters) and the number of replicates ``R`` per grid point.
:meth:`Study.tasks` lists the ``P x R`` tasks in a fixed order (grid points in the product order
of ``grid``, replicates innermost), whatever will execute them.

Seeds come from ``numpy.random.SeedSequence(seed)`` only, never from the scheduler:

* ``paired=True`` (common random numbers, the default): replicate ``k`` gets
  ``SeedSequence(seed).spawn(R)[k]`` at *every* grid point, so two grid points that differ only
  in the estimator (e.g. the likelihood engine) see the same simulated data and their metrics
  can be compared pair by pair, seed by seed;
* ``paired=False``: grid point ``p`` and replicate ``k`` get
  ``SeedSequence(seed).spawn(P)[p].spawn(R)[k]``, independent across grid points.

A task that needs several independent streams spawns them from its seed
(``seed.spawn(2)``); one that needs a plain integer uses :func:`integer_seed`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Study", "Task", "TaskFunction", "integer_seed"]

#: ``task(params, seed) -> {metric: value}``; must be picklable (a module-level function).
TaskFunction = Callable[[dict[str, Any], np.random.SeedSequence], Mapping[str, float]]


def integer_seed(seed: np.random.SeedSequence) -> int:
    """A 63-bit integer drawn from ``seed`` (for APIs that take an ``int`` seed)."""
    return int(seed.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


@dataclass(frozen=True)
class Task:
    """One unit of work: grid point ``point`` (index into :meth:`Study.points`), replicate
    ``replicate``, the merged parameters and the seed."""

    point: int
    replicate: int
    params: dict[str, Any]
    seed: np.random.SeedSequence


@dataclass(frozen=True)
class Study:
    """A grid of parameters x ``replicates`` seeds, evaluated by ``task``.

    ``grid``: parameter name -> non-empty sequence of values (the swept dimensions, in order);
    ``fixed``: parameters shared by every task (recorded, not swept); ``seed``: root entropy
    of every task seed; ``paired``: common random numbers across grid points (module docs).
    """

    name: str
    task: TaskFunction
    grid: Mapping[str, Sequence[Any]]
    replicates: int
    seed: int = 0
    fixed: Mapping[str, Any] = field(default_factory=dict)
    paired: bool = True

    def __post_init__(self) -> None:
        if not callable(self.task):
            raise TypeError(f"task must be callable, got {type(self.task).__name__}")
        if not isinstance(self.replicates, int) or self.replicates < 1:
            raise ValueError(f"replicates must be an integer >= 1, got {self.replicates!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if not self.grid:
            raise ValueError("grid must name at least one parameter")
        for key, values in self.grid.items():
            if isinstance(values, str) or len(values) == 0:
                raise ValueError(f"grid[{key!r}] must be a non-empty sequence of values")
            if len(set(map(repr, values))) != len(values):
                raise ValueError(f"grid[{key!r}] has repeated values: {list(values)!r}")
        clash = set(self.grid) & set(self.fixed)
        if clash:
            raise ValueError(f"parameters both swept and fixed: {sorted(clash)}")
        reserved = {"point", "replicate"} & (set(self.grid) | set(self.fixed))
        if reserved:
            raise ValueError(f"reserved parameter names: {sorted(reserved)}")

    @property
    def dims(self) -> tuple[str, ...]:
        """The swept parameter names, in grid order."""
        return tuple(self.grid)

    def points(self) -> list[dict[str, Any]]:
        """The grid points (swept parameters only), in product order."""
        keys = self.dims
        return [
            dict(zip(keys, combo, strict=True)) for combo in itertools.product(*self.grid.values())
        ]

    def tasks(self) -> list[Task]:
        """All ``P x R`` tasks, grid points outermost, with their seeds (module docs)."""
        points = self.points()

        def seed(p: int, k: int) -> np.random.SeedSequence:
            # == SeedSequence(seed).spawn(...)[...]; a fresh object per task, because spawning
            # children from a seed advances its counter
            key = (k,) if self.paired else (p, k)
            return np.random.SeedSequence(self.seed, spawn_key=key)

        return [
            Task(p, k, {**self.fixed, **point}, seed(p, k))
            for p, point in enumerate(points)
            for k in range(self.replicates)
        ]
