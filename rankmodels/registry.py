"""One registry pattern for the package's pluggable parts: likelihood engines, aggregation rules
and learning-to-rank losses.

Each kind of part describes an entry with its own small frozen dataclass (what to call, what it
supports, which model settings it needs) that has at least a ``name`` and a one-line
``summary``; a :class:`Registry` holds the entries of one kind in a fixed order. The CLI's
choices, the validation of settings and the documentation tables all read the registry, so a
new entry is one ``register`` call.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Colour:
...     name: str
...     summary: str
>>> colours = Registry[Colour]("colour")
>>> colours.register(Colour("red", "warm"))
Colour(name='red', summary='warm')
>>> colours.names
('red',)
>>> colours["blue"]
Traceback (most recent call last):
...
ValueError: unknown colour 'blue'; expected one of: red
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar

__all__ = ["Registry", "RegistryEntry"]


class RegistryEntry(Protocol):
    """What every entry has: a unique ``name`` and a one-line ``summary`` for help and docs."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...


E = TypeVar("E", bound=RegistryEntry)


class Registry(Generic[E]):
    """Named entries of one kind, in registration order.

    ``kind`` names the kind in error messages ("unknown engine 'x'; expected one of: ...").
    Lookups of unknown names raise ``ValueError`` listing the known names.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, E] = {}

    def register(self, entry: E) -> E:
        """Add ``entry``; its name must be new. Returns the entry (usable as a decorator result)."""
        if not isinstance(entry.name, str) or not entry.name:
            raise TypeError(f"a {self.kind} entry needs a non-empty string name")
        if entry.name in self._entries:
            raise ValueError(f"{self.kind} {entry.name!r} is registered already")
        self._entries[entry.name] = entry
        return entry

    def __getitem__(self, name: str) -> E:
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise ValueError(
                f"unknown {self.kind} {name!r}; expected one of: {', '.join(self._entries)}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[E]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def names(self) -> tuple[str, ...]:
        """Entry names in registration order (the CLI's choices)."""
        return tuple(self._entries)

    def markdown_table(self) -> str:
        """A two-column markdown table ``| name | summary |`` for the docs."""
        rows = [f"| `{e.name}` | {e.summary} |" for e in self]
        return "\n".join([f"| {self.kind} | what it is |", "|---|---|", *rows])
