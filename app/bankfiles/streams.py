"""Byte and line streams with bounded memory: the file's hash as it is read, lines of a bounded length."""

import hashlib
import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from app.errors import FileRefused

# A payment row is a few hundred characters; a longer line is a wrong file or an attack, and reading it whole
# would put an unbounded amount of it in memory.
MAX_LINE_BYTES = 64 * 1024


class HashingReader(io.RawIOBase):
    """Reads a binary stream and hashes every byte that passes, so the digest needs no second pass."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._sha256 = hashlib.sha256()
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(buffer))
        self._sha256.update(data)
        self.bytes_read += len(data)
        buffer[: len(data)] = data
        return len(data)

    def hexdigest(self) -> str:
        return self._sha256.hexdigest()


@contextmanager
def text_of(stream: BinaryIO, encoding: str, newline: str | None) -> Iterator[io.TextIOWrapper]:
    """A text view of a binary stream that leaves the stream open afterwards (a TextIOWrapper closes it)."""
    text = io.TextIOWrapper(stream, encoding=encoding, newline=newline)
    try:
        yield text
    finally:
        text.detach()


def bounded_lines(stream: BinaryIO, name: str, encoding: str = "utf-8") -> Iterator[str]:
    """The lines of a binary stream decoded one by one, line ends kept ("\r\n" too): a line over
    MAX_LINE_BYTES, or bytes that are not in the encoding, refuse the file with the line's number."""
    number = 0
    while line := stream.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise FileRefused(f"{name}: line {number} is longer than {MAX_LINE_BYTES} bytes; not a payment file")
        try:
            yield line.decode(encoding)
        except UnicodeDecodeError:
            raise FileRefused(f"{name} is not {encoding} text (line {number}); save it as UTF-8") from None
