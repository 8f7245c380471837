"""Click options made from the rows of :data:`rankmodels.tracking.settings.SETTINGS`: the
tracking commands' settings, each with its one name, its old spellings as hidden aliases, its
help, range and default; and the one-line error naming the option of a refused setting."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from rankmodels.errors import InputError
from rankmodels.tracking.settings import Setting, option_name, settings_of
from rankmodels_app._common import AliasedOption, BadInput, NumberRange, range_text, seed_option

F = TypeVar("F", bound=Callable[..., Any])


class WholeNumber(click.ParamType):
    """An integer, also written like ``1e4`` or ``10000.0``; its range is checked later."""

    name = "integer"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, int):
            return value
        try:
            number = float(str(value))
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number == round(number)):
            self.fail(f"{value!r} is not a whole number", param, ctx)
        return int(number)


def _type(setting: Setting) -> click.ParamType:
    if setting.kind == "choice":
        return click.Choice(setting.choices)
    if setting.kind == "text":
        return click.STRING
    if setting.checked_by == "option":
        if setting.kind == "whole":
            return click.IntRange(setting.lo, setting.hi, setting.lo_open, setting.hi_open)
        return NumberRange(setting.lo, setting.hi, setting.lo_open, setting.hi_open)
    return WholeNumber() if setting.kind == "whole" else click.FLOAT


def setting_option(setting: Setting) -> Callable[[F], F]:
    """The click option of one table row (its aliases hidden from ``--help`` and errors)."""
    if setting.kind == "seed":
        return seed_option(default=setting.default, help=setting.help)  # type: ignore[arg-type]
    text = setting.help
    if "{range}" in text:
        text = text.replace(
            "{range}", range_text(setting.lo, setting.hi, setting.lo_open, setting.hi_open)
        )
    names = [f"{setting.option}/--no-{setting.option[2:]}"] if setting.kind == "flag" else []
    names = names or list(setting.names)
    kwargs: dict[str, Any] = {"default": setting.default, "help": text}
    if setting.show_default:
        kwargs["show_default"] = True
    if setting.kind != "flag":
        kwargs["type"] = _type(setting)
    return click.option(
        *names, setting.field, cls=AliasedOption, hidden_aliases=setting.aliases, **kwargs
    )


def setting_options(command: str, *fields: str) -> Callable[[F], F]:
    """Add ``command``'s settings ``fields`` (table rows), in this order, to a command."""
    table = settings_of(command)
    options = [setting_option(table[field]) for field in fields]

    def add(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return add


def bad_setting(command: str, err: InputError) -> BadInput:
    """The one-line error of a setting the library refused (``err.field`` the setting),
    naming ``command``'s option for it."""
    field = err.field or ""
    option = option_name(command, field) or "--" + field.replace("_", "-")
    return BadInput(f"{option}: {err.message}")
