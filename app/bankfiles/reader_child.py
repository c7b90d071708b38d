"""The child side of reader_process.py: `python -m app.bankfiles.reader_child <format> <name> <answers fd>`.

Reads the file's bytes from stdin, writes length-prefixed pickles to the answers pipe: lists of encoded rows
(reader_process.encode_row), then one of ("done", facts), ("refused", message, iso_code) or ("failed", why).
"""

import pickle
import sys
from typing import IO

from app.bankfiles.formats import BankFormat
from app.bankfiles.reader import READERS
from app.bankfiles.reader_process import FRAME, EncodedRow, encode_row
from app.bankfiles.rows import FileFacts
from app.errors import FileRefused

ROWS_PER_MESSAGE = 512


def _send(out: IO[bytes], message: object) -> None:
    blob = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(FRAME.pack(len(blob)))
    out.write(blob)


def _read(bank_format: BankFormat, name: str, source: IO[bytes], out: IO[bytes]) -> None:
    rows = READERS[bank_format](source, name)  # type: ignore[arg-type]
    batch: list[EncodedRow] = []
    while True:
        try:
            batch.append(encode_row(next(rows)))
        except StopIteration as done:
            facts: FileFacts = done.value
            break
        if len(batch) >= ROWS_PER_MESSAGE:
            _send(out, batch)
            batch = []
    while source.read(1 << 16):
        pass  # the parent's feeder must be able to finish writing (it hashes every byte)
    _send(out, batch)
    _send(out, ("done", facts))


def main(argv: list[str]) -> int:
    bank_format, name = BankFormat(argv[0]), argv[1]
    out = open(int(argv[2]), "wb")  # noqa: SIM115  # closed at exit, after the last answer is flushed
    try:
        _read(bank_format, name, sys.stdin.buffer, out)
    except FileRefused as refused:
        _send(out, ("refused", str(refused), refused.iso_code))
    except Exception as exc:  # a bug or a resource limit, reported with its type; the ingest fails whole
        _send(out, ("failed", f"{type(exc).__name__}: {exc}"))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
