"""Atomic file outputs: a crash or an error never leaves a partial file or spoils an old one.

Writers get a temporary file beside the target, renamed onto it only on success (``os.replace``
is atomic within a folder), with the permissions a newly created file would have.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["PARTIAL", "atomic_output", "atomic_path", "remove_partial"]

#: The name of a temporary file these writers make beside their target (``.NAME.XXXXXXXX.tmp``
#: or ``.STEM.XXXXXXXX.SUFFIX``, the eight characters ``tempfile.mkstemp``'s): all that a
#: process killed while writing (``SIGKILL``, a power cut) can leave behind.
PARTIAL = re.compile(r"^\.[^/]+\.[a-z0-9_]{8}(\.tmp|\.[A-Za-z0-9]+)$")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only on success.

    A crash or an exception leaves any existing ``path`` untouched and no partial file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
        _publish(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` for writers that want a file name
    (e.g. ``xarray.Dataset.to_netcdf``, ``Figure.savefig``); renamed onto ``path`` on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        _publish(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _publish(tmp: str | os.PathLike[str], target: Path) -> None:
    """Give ``tmp`` the permissions a newly created file would have, then rename it onto
    ``target`` (``mkstemp`` creates files readable by the owner only)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, target)


def remove_partial(folder: str | os.PathLike[str]) -> list[str]:
    """Delete the temporary files (:data:`PARTIAL`) that an interrupted writer left in
    ``folder`` (nothing when it does not exist); returns their names."""
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            if entry.is_file() and PARTIAL.match(entry.name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                removed.append(entry.name)
    return sorted(removed)
