"""An experiment's EM checkpoint: every float's finished E-step kept on disk.

The joint calibration's search is deterministic given its seed: each E-step pass is a
function of its inputs (the float's record, the pass settings, the experiment's parameters
``theta``, the float's statistical model, the noise factor, whether it fits), and every
M-step, extrapolation and polish is a function of the passes before it. So instead of
snapshots of the search, :class:`PassStore` keeps each float's :class:`~rankmodels.tracking.
experiment.FloatPass` as soon as it ends, under the SHA-256 of those inputs. A resumed run
replays the search; every E-step already done is read back instead of run, so it continues
from the last completed float of the last pass and ends with the same estimates, iteration
log and tracks as an uninterrupted run with the same seed. An input that differs (another
record, setting or seed) has another key and is simply run.

Each entry is written atomically (:func:`~rankmodels.files.atomic_output`): a run killed at
any moment leaves whole entries only. Entries are Python pickles: read a checkpoint folder
only from a run of your own.
"""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Any

from rankmodels.files import atomic_output, remove_partial
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.digests import file_digest, value_digest

__all__ = ["CHECKPOINT_FOLDER", "PassStore"]

#: The folder of an experiment's checkpoint inside the batch's output folder.
CHECKPOINT_FOLDER = "em-checkpoint"


class PassStore:
    """The checkpoint folder ``folder``: entries keyed by :meth:`key`. ``resume=False`` starts
    afresh (an old checkpoint in ``folder`` is removed); ``resume=True`` reads what is there.
    ``hits`` and ``misses`` count :meth:`load`'s answers."""

    def __init__(self, folder: str | os.PathLike[str], *, resume: bool) -> None:
        self.folder = Path(folder)
        if not resume and self.folder.exists():
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        remove_partial(self.folder)
        self.hits = self.misses = 0
        self._records: dict[str, str] = {}

    def record_sha256(self, path: str | os.PathLike[str]) -> str:
        """The SHA-256 of the record file ``path`` (read once per store)."""
        name = os.fspath(path)
        if name not in self._records:
            self._records[name] = file_digest(name)["sha256"]
        return self._records[name]

    @staticmethod
    def key(record_sha256: str, config: TrackConfig, *inputs: Any) -> str:
        """The SHA-256 of a pass's inputs: the record's digest, the pass ``config`` and the
        rest (parameters, model, factor, ...), in a form independent of string hashing."""
        return value_digest(record_sha256, config, inputs)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pickle"

    def load(self, key: str) -> Any | None:
        """The entry ``key``, None when there is none (or it cannot be read)."""
        try:
            with open(self._path(key), "rb") as handle:
                value = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def save(self, key: str, value: Any) -> None:
        """Keep ``value`` as the entry ``key`` (atomically)."""
        with atomic_output(self._path(key)) as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
