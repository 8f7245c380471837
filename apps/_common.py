"""Shared plumbing for the commands: one-line errors, atomic outputs, progress bars."""

from __future__ import annotations

import contextlib
import functools
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from rankmodels.errors import InputError
from rankmodels.files import atomic_output as atomic_output  # re-exported for the commands
from rankmodels.files import atomic_path as atomic_path
from rankmodels.text import printable

F = TypeVar("F", bound=Callable[..., Any])

EXIT_BAD_INPUT = 2


class BadInput(click.ClickException):
    """A one-line error for bad input: printed as ``Error: ...`` and exit status 2.

    Control characters in the message (a file name holding a newline, say) are shown as
    spaces or U+FFFD (:func:`rankmodels.text.printable`), so the message stays one line.
    """

    exit_code = EXIT_BAD_INPUT

    def format_message(self) -> str:
        return printable(self.message)


@contextlib.contextmanager
def _one_line_usage_errors() -> Iterator[None]:
    """Re-raise Click's usage errors (bad option value, missing argument, unknown command) and
    file errors as :class:`BadInput`: exit status 2, without the usage and help-hint lines."""
    try:
        yield
    except click.exceptions.NoArgsIsHelpError:
        raise  # a bare group prints its help
    except (click.UsageError, click.FileError) as err:  # FileError: a click.File cannot open
        raise BadInput(err.format_message()) from None


class OneLineErrors:
    """Mixin for Click commands and groups: every usage error below them is one
    ``Error: ...`` line with exit status 2 (Click prints the usage and a hint too)."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _one_line_usage_errors():
            return super().make_context(*args, **kwargs)  # type: ignore[misc]

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line_usage_errors():
            return super().invoke(ctx)  # type: ignore[misc]


class OneLineCommand(OneLineErrors, click.Command):
    """A :class:`click.Command` with one-line usage errors (``cls=`` of ``click.command``)."""


class OneLineGroup(OneLineErrors, click.Group):
    """A :class:`click.Group` with one-line usage errors, its subcommands' included."""


# What a bad path given by the user raises (a missing file, a folder, a file where a folder
# should be, no permission).
_FILE_SYSTEM_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)


def reports_bad_input(func: F) -> F:
    """Turn :class:`InputError` and file-system errors raised by ``func`` into exit 2.

    The message is one line naming the file, the field and what was expected; no traceback.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as err:
            raise BadInput(str(err)) from None
        except _FILE_SYSTEM_ERRORS as err:
            raise BadInput(f"{err.filename}: {err.strerror}") from None

    return wrapper  # type: ignore[return-value]


def refuse_to_overwrite(output: Path, inputs: Iterable[Path]) -> None:
    """Raise :class:`BadInput` when ``output`` is one of the ``inputs`` (never write over input)."""
    out = Path(output).resolve()
    for path in inputs:
        if Path(path).resolve() == out:
            raise BadInput(f"{output}: refusing to write an output over the input file")


def show_progress(quiet: bool) -> bool:
    """Progress bars go to stderr, only when it is a terminal and ``--quiet`` is not given."""
    return not quiet and sys.stderr.isatty()


def progressbar(length: int, label: str, quiet: bool) -> Any:
    """A Click progress bar on stderr, or a silent stand-in (same ``update`` interface)."""
    if show_progress(quiet):
        return click.progressbar(length=length, label=label, file=sys.stderr)
    return _SilentBar()


class _SilentBar:
    def __enter__(self) -> _SilentBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n_steps: int) -> None:
        return None


class NumberRange(click.FloatRange):
    """A :class:`click.FloatRange` that refuses ``nan`` too (it passes every comparison)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number


def count(n: float, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun agreeing with it: ``1 cycle``, ``2 cycles``, ``1 EM pass``."""
    return f"{n:g} {singular if n == 1 else plural or singular + 's'}"


quiet_option = click.option(
    "--quiet", "-q", is_flag=True, help="No progress bar and no summary chatter on stderr."
)
MAX_SEED = 2**63 - 1
"""Largest ``--seed``: seeds are stored as int64 (NetCDF attributes, study tables)."""


def seed_option(
    default: int = 0, help: str = "Seed of the random number generator."
) -> Callable[[F], F]:
    """The ``--seed`` option every command shares: an integer in ``[0, 2**63 - 1]``.

    Out-of-range seeds are rejected by Click before any work starts (exit 2).
    """
    return click.option(
        "--seed",
        type=click.IntRange(min=0, max=MAX_SEED),
        default=default,
        show_default=True,
        help=help,
    )
