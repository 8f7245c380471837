"""Exceptions shared by the readers and validators.

:class:`InputError` is a :class:`ValueError` that knows *which file* and *which field*
was wrong and *what was expected*, so the command-line app can print it as one line
(``FILE: FIELD: MESSAGE``) and exit with status 2.
"""

from __future__ import annotations

import os


class InputError(ValueError):
    """Invalid input data.

    Parameters
    ----------
    message:
        What was wrong and what was expected, e.g. ``"must be ascending within each cycle"``.
    path:
        The file the data came from, if any.
    field:
        The variable, column or line the problem is in (e.g. ``"toa"``, ``"line 17"``).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else os.fspath(path)
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [p for p in (self.path, self.field) if p]
        return ": ".join([*parts, self.message])

    def with_path(self, path: str | os.PathLike[str]) -> InputError:
        """Return a copy of this error that names ``path`` (when it named no file yet)."""
        if self.path is not None:
            return self
        return InputError(self.message, path=path, field=self.field)
