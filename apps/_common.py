"""Shared plumbing for the commands: one-line errors, atomic outputs, progress bars, and the
options every command spells the same way (docs/cli.md states the convention)."""

from __future__ import annotations

import contextlib
import difflib
import functools
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from rankmodels import __version__
from rankmodels.errors import InputError
from rankmodels.files import atomic_output as atomic_output  # re-exported for the commands
from rankmodels.files import atomic_path as atomic_path
from rankmodels.text import printable

F = TypeVar("F", bound=Callable[..., Any])

EXIT_BAD_INPUT = 2
MAX_SEED = 2**63 - 1
"""Largest ``--seed``: seeds are stored as int64 (NetCDF attributes, study tables)."""


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
    ``Error: ...`` line with exit status 2 (Click prints the usage and a hint too), and
    ``-h`` is ``--help`` however the command is invoked (Click caches a command's help
    option the first time it is built: a command first run on its own, outside the group
    that sets ``help_option_names``, would otherwise keep ``--help`` alone)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = kwargs.setdefault("context_settings", {}) or {}
        settings.setdefault("help_option_names", ["-h", "--help"])
        kwargs["context_settings"] = settings
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]

    def get_help_option_names(self, ctx: click.Context) -> list[str]:
        """``-h`` and ``--help`` (this command's ``help_option_names``) and the context's,
        less the names another parameter takes: the same whichever context first asks."""
        own = self.context_settings.get("help_option_names", ())  # type: ignore[attr-defined]
        names = dict.fromkeys([*own, *ctx.help_option_names])
        for param in self.params:  # type: ignore[attr-defined]
            for name in (*param.opts, *param.secondary_opts):
                names.pop(name, None)
        return list(names)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _one_line_usage_errors():
            return super().make_context(*args, **kwargs)  # type: ignore[misc]

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line_usage_errors():
            return super().invoke(ctx)  # type: ignore[misc]


class OneLineCommand(OneLineErrors, click.Command):
    """A :class:`click.Command` with one-line usage errors (``cls=`` of ``click.command``)."""


class OneLineGroup(OneLineErrors, click.Group):
    """A :class:`click.Group` with one-line usage errors, its subcommands' included, that
    suggests the nearest subcommand for a mistyped one (``agregate``: "Did you mean
    'aggregate'?"). Its subcommands are one-line commands (:class:`OneLineCommand`) unless
    they say otherwise."""

    command_class = OneLineCommand

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as err:
            if args and "Did you mean" not in err.format_message():  # click >= 8.4 suggests
                close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1)
                if close:  # for its plain groups, not for lazy ones like ``rankmodels``
                    err.message = f"{err.message} Did you mean {close[0]!r}?"
            raise


# What a bad path given by the user raises (a missing file, a folder, a file where a folder
# should be, no permission).
_FILE_SYSTEM_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)


MISSING_FILE = "no such file"
"""How every command says that an input path does not exist: ``Error: PATH: no such file``
(after the option's name when an option names it)."""

_FILE_ERROR_WORDS = {FileNotFoundError: MISSING_FILE}


class InputPath(click.Path):
    """A :class:`click.Path` that must exist, refused in the shared wording
    (``PATH: no such file``, :data:`MISSING_FILE`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(exists=True, **kwargs)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not Path(value).exists():
            self.fail(f"{value}: {MISSING_FILE}", param, ctx)
        return super().convert(value, param, ctx)


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
            raise BadInput(
                f"{err.filename}: {_FILE_ERROR_WORDS.get(type(err), err.strerror)}"
            ) from None

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


def _range_number(value: float) -> str:
    """``600``, ``0.5``, ``1000000``: whole numbers without a decimal point."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def range_text(
    lo: float | None, hi: float | None, lo_open: bool = False, hi_open: bool = False
) -> str:
    """A range in the one style of every help page, as click writes its own: ``0<x<=600``,
    ``x>=1``, ``-1<=x<=1`` (no spaces, no units, no thousands separators)."""
    if lo is None:
        return f"x{'<' if hi_open else '<='}{_range_number(hi)}"  # type: ignore[arg-type]
    if hi is None:
        return f"x{'>' if lo_open else '>='}{_range_number(lo)}"
    lop, hop = "<" if lo_open else "<=", "<" if hi_open else "<="
    return f"{_range_number(lo)}{lop}x{hop}{_range_number(hi)}"


class SeedRange(click.IntRange):
    """The range ``0 <= seed <= 2**63 - 1``, shown in help as ``0<=x<2**63`` (not as 19
    digits)."""

    def __init__(self) -> None:
        super().__init__(min=0, max=MAX_SEED)

    def _describe_range(self) -> str:
        return "0<=x<2**63"


class NumberRange(click.FloatRange):
    """A :class:`click.FloatRange` that refuses ``nan`` too (it passes every comparison)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number

    def _describe_range(self) -> str:
        return range_text(self.min, self.max, self.min_open, self.max_open)


def count(n: float, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun agreeing with it: ``1 cycle``, ``2 cycles``, ``1 EM pass``."""
    return f"{n:g} {singular if n == 1 else plural or singular + 's'}"


quiet_option = click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress bar and no summary on stderr (warnings and errors still show).",
)


def status(text: str, quiet: bool) -> None:
    """A line about the work done (what was written where, how it went): on stderr, unless
    ``--quiet``. Results a user pipes on go to stdout instead, and only when no ``--out``."""
    if not quiet:
        click.echo(text, err=True)


class AliasedOption(click.Option):
    """An option with old spellings that still work but are left out of ``--help`` and of
    error messages (``--output`` of ``-o, --out``)."""

    def __init__(self, *args: Any, hidden_aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = hidden_aliases

    @contextlib.contextmanager
    def _shown_names(self) -> Iterator[None]:
        opts = self.opts
        self.opts = [o for o in opts if o not in self.hidden_aliases]
        try:
            yield
        finally:
            self.opts = opts

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        with self._shown_names():
            return super().get_help_record(ctx)

    def get_error_hint(self, ctx: click.Context) -> str:
        with self._shown_names():
            return super().get_error_hint(ctx)


def out_option(help: str, *, name: str = "out", folder: bool = False, **kwargs: Any) -> Any:
    """The output option of every command: ``-o, --out FILE`` (a folder, ``OUT``, with ``folder``),
    ``--output`` kept as a hidden alias; ``name`` is the Python parameter it fills."""
    return click.option(
        "-o",
        "--out",
        "--output",
        name,
        cls=AliasedOption,
        hidden_aliases=("--output",),
        metavar="OUT" if folder else "FILE",
        type=click.Path(file_okay=not folder, dir_okay=folder, path_type=Path),
        help=help,
        **kwargs,
    )


def version_option(program: str) -> Callable[[F], F]:
    """``--version`` of an entry point: prints ``PROGRAM, version X`` and exits."""
    return click.version_option(__version__, "--version", prog_name=program)


def seed_option(
    default: int = 0, help: str = "Seed of the random number generator."
) -> Callable[[F], F]:
    """The ``--seed`` option every command shares: an integer in ``[0, 2**63 - 1]``.

    Out-of-range seeds are rejected by Click before any work starts (exit 2).
    """
    return click.option(
        "--seed",
        type=SeedRange(),
        default=default,
        show_default=True,
        help=help,
    )
