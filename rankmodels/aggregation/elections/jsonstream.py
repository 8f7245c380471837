"""A JSON object read member by member, one array streamed element by element.

Large cast-vote-record exports are one JSON object whose bulk is a single array (the
``CVR`` array of a NIST Common Data Format record). :func:`members` yields the object's
members in file order and, for the array members named in ``streamed``, each element on
its own, so memory holds one element (and a read buffer) instead of the whole file. The
text is decoded with :class:`json.JSONDecoder` from a buffer refilled in blocks; a value
cut by the end of a block is decoded again once more text is in (blocks double while a
value does not fit).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO, Any

from rankmodels.errors import InputError

__all__ = ["members"]

_BLOCK = 1 << 20
_TAIL = 64  # a value ending this close to the end of the text read is read again with more
_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


class _Buffer:
    """Text of ``handle`` from position ``pos`` on, read in blocks as needed."""

    def __init__(self, handle: IO[str], path: Path) -> None:
        self.handle = handle
        self.path = path
        self.text = ""
        self.pos = 0
        self.block = _BLOCK
        self.done = False

    def more(self) -> bool:
        """Read another block (dropping what was consumed); False at the end of file."""
        if self.done:
            return False
        chunk = self.handle.read(self.block)
        self.done = not chunk
        self.text = self.text[self.pos :] + chunk
        self.pos = 0
        return bool(chunk)

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of file)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.text) or not self.more():
                return self.text[self.pos : self.pos + 1]

    def expect(self, chars: str) -> str:
        char = self.peek()
        if not char or char not in chars:
            found = repr(char) if char else "the end of the file"
            raise InputError(f"not JSON: expected one of {chars!r}, found {found}", path=self.path)
        self.pos += 1
        return char

    def value(self) -> Any:
        """The next JSON value."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as err:
                if self.done or not _cut(self.text, err):
                    raise InputError(f"not JSON: {err.msg}", path=self.path) from None
                self.block *= 2
                self.more()
                continue
            if len(self.text) - end < _TAIL and not self.done:  # a number may go on
                self.more()
                continue
            self.pos = end
            self.block = _BLOCK
            return value


def _cut(text: str, err: json.JSONDecodeError) -> bool:
    """Whether a decoding error may come from the text being cut short: it is at the end
    (within an escape's length) or a string is not terminated."""
    return err.pos >= len(text) - 8 or err.msg.startswith("Unterminated")


def members(
    path: str | Path, streamed: Collection[str] = ("CVR",), what: str = "a JSON object"
) -> Iterator[tuple[str, Any]]:
    """``(key, value)`` for each member of the JSON object in ``path`` (UTF-8, a
    byte-order mark allowed), and ``(key, element)`` for each element of a member named in
    ``streamed`` whose value is an array. :class:`InputError` naming ``path`` for a file
    that is missing or not such a JSON object."""
    path = Path(path)
    try:
        handle = open(path, encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    with handle:
        buf = _Buffer(handle, path)
        try:
            if buf.peek() != "{":
                raise InputError(f"not {what}: expected a JSON object", path=path)
            buf.pos += 1
            if buf.peek() == "}":
                return
            while True:
                key = buf.value()
                if not isinstance(key, str):
                    raise InputError("not JSON: expected a member name", path=path)
                buf.expect(":")
                if key in streamed and buf.peek() == "[":
                    buf.pos += 1
                    if buf.peek() == "]":
                        buf.pos += 1
                    else:
                        while True:
                            yield key, buf.value()
                            if buf.expect(",]") == "]":
                                break
                else:
                    yield key, buf.value()
                if buf.expect(",}") == "}":
                    break
            if buf.peek():
                raise InputError("not JSON: text after the object", path=path)
        except UnicodeDecodeError as err:
            raise InputError(f"not {what}: {err}", path=path) from None
