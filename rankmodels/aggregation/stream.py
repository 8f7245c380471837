"""Feeding a vote file to a reader in chunks of bytes, with progress and UTF-8 checks.

A reader is a :class:`ChunkReader`: :meth:`~ChunkReader.feed` takes a buffer (the unused
tail of the previous chunk followed by the next chunk) and returns how many bytes it used,
stopping at a line or record boundary; :func:`run` keeps the rest for the next call. Memory
therefore stays at a few chunks plus what the reader keeps (the distinct ballots).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, Protocol

import numpy as np

from rankmodels.errors import InputError

__all__ = ["CHUNK_BYTES", "ChunkReader", "Progress", "check_utf8", "file_chunks", "run"]

CHUNK_BYTES = 1 << 20
"""Bytes read at a time (1 MiB)."""

_BOM = b"\xef\xbb\xbf"

Progress = Callable[[int], None]
"""Called now and then with the number of bytes read since the previous call; the calls add
up to the file size."""


class ChunkReader(Protocol):
    def feed(self, buf: np.ndarray, final: bool, offset: int) -> int:
        """Read the complete lines or records of ``buf`` (uint8; ``offset`` is the file
        position of ``buf[0]``; ``final``: nothing follows) and return how many bytes were
        used."""


def file_chunks(
    handle: BinaryIO, progress: Progress | None = None, size: int = CHUNK_BYTES
) -> Iterator[bytes]:
    """The bytes of an open binary file, ``size`` at a time, a leading UTF-8 byte-order mark
    dropped; ``progress`` hears of every byte read."""
    block = handle.read(max(size, len(_BOM)))
    if progress is not None and block:
        progress(len(block))
    if block.startswith(_BOM):
        block = block[len(_BOM) :]
    while True:
        if block:
            yield block
        block = handle.read(size)
        if not block:
            return
        if progress is not None:
            progress(len(block))


def text_chunks(lines: Iterable[str]) -> Iterator[bytes]:
    """Text (an open text handle or any iterable of strings) as one chunk of UTF-8 bytes."""
    yield "".join(lines).encode("utf-8", "surrogatepass")


def run(reader: ChunkReader, chunks: Iterable[bytes]) -> None:
    """Feed ``chunks`` to ``reader``, carrying what it leaves unused into the next call."""
    carry = b""
    offset = 0
    iterator = iter(chunks)
    block = next(iterator, None)
    while block is not None:
        following = next(iterator, None)
        data = carry + block if carry else block
        used = reader.feed(np.frombuffer(data, np.uint8), following is None, offset)
        carry = data[used:]
        offset += used
        block = following


def check_utf8(
    buf: np.ndarray, offset: int, first_line: int, path: str | os.PathLike[str] | None
) -> None:
    """Raise :class:`InputError` naming the byte and the line when ``buf`` (complete lines,
    starting at file position ``offset`` on line ``first_line``) is not UTF-8."""
    data = buf.tobytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = first_line + _count_lines(data[: err.start])
        raise InputError(
            f"not UTF-8 text (byte {offset + err.start} cannot be decoded)",
            path=path,
            field=f"line {line}",
        ) from None


def _count_lines(data: bytes) -> int:
    """Line ends in ``data`` (``\\r\\n``, ``\\r`` or ``\\n``)."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
