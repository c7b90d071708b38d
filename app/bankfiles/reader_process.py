"""A format reader run in a child process: the parent feeds it the file's bytes and gets its rows back.

pain.001's reader is libxml2 parsing every byte twice (xml_safety) plus a look-up per field: two thirds of an
ingest's CPU, in the same interpreter (one GIL) as the validation and the COPY that follow it. In a child it
runs beside them on the second core (docs/benchmarks.md, "Bank-file ingest").

The parent stays the only reader of the file (its bytes are hashed as they pass, for the file's identity):
a feeder thread writes them to the child's stdin, and the child writes rows back on a pipe of their own (not
its stdout, where a library's stray print would corrupt them), a list at a time, each list a length-prefixed
pickle (reader_child.py). Both pipes block when full, so neither side gets
ahead of the other by more than a pipe and a list of rows: memory stays that of a chunk, whatever the file's
size. A refusal crosses as its message and ISO code; a child that dies is an error of the ingest, which then
commits nothing. A plain interpreter (`python -m`), not multiprocessing: spawn would re-run the parent's main
script in the child, and fork would copy an event loop and threads half-way.
"""

import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Generator
from typing import IO, Any, BinaryIO

from app.bankfiles.formats import BankFormat
from app.bankfiles.rows import BankRow, FileFacts, Origin
from app.errors import FileRefused

FEED_BYTES = 1024 * 1024  # the feeder holds the GIL once per block: small blocks left the child waiting for input
FRAME = struct.Struct(">I")
# A row as a plain tuple: pickle rebuilds slotted frozen dataclasses through copyreg, about twice as slow. The
# fields dict crosses as it is (pickle writes its repeated keys once per list of rows): no copy on either side.
EncodedRow = tuple[int, dict[str, Any], bool, tuple[str, str, str | None] | None]


def encode_row(row: BankRow) -> EncodedRow:
    o = row.origin
    origin = None if o is None else (o.payment_information_id, o.end_to_end_id, o.instruction_id)
    return row.number, row.fields, row.typed, origin


def decode_row(encoded: EncodedRow) -> BankRow:
    number, fields, typed, origin = encoded
    return BankRow(number, fields, typed, None if origin is None else Origin(*origin))


class ReaderProcessFailed(RuntimeError):
    """The child reading the file died or failed for a reason that is not the file's fault."""


def _feed(stream: BinaryIO, pipe: IO[bytes]) -> None:
    try:
        while chunk := stream.read(FEED_BYTES):
            pipe.write(chunk)
        pipe.close()
    except (BrokenPipeError, OSError, ValueError):
        pass  # the child is gone (or the parent closed the pipe): the parent's side reports why


def _frames(pipe: IO[bytes], name: str) -> Generator[Any, None, None]:
    while head := pipe.read(FRAME.size):
        size = FRAME.unpack(head)[0] if len(head) == FRAME.size else -1  # -1: the length itself was cut off
        blob = pipe.read(size) if size > 0 else b""
        if len(blob) != size:
            raise ReaderProcessFailed(f"{name}: the process reading the file sent a cut-off answer")
        try:
            # Our own child's output, on a pipe only it writes, from our own code: the one place pickle is safe.
            yield pickle.loads(blob)  # noqa: S301
        except pickle.UnpicklingError as exc:
            raise ReaderProcessFailed(f"{name}: the process reading the file sent an unreadable answer") from exc


def read_in_child(bank_format: BankFormat, stream: BinaryIO, name: str) -> Generator[BankRow, None, FileFacts]:
    """The format reader's rows and facts, as if it ran here; FileRefused as it would have raised it."""
    answers_in, answers_out = os.pipe()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "app.bankfiles.reader_child", bank_format.value, name, str(answers_out)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            pass_fds=(answers_out,),
        )
    except BaseException:
        os.close(answers_in)
        raise
    finally:
        os.close(answers_out)  # the child holds its own copy: its exit is the pipe's end
    answers = os.fdopen(answers_in, "rb")
    assert child.stdin is not None
    feeder = threading.Thread(target=_feed, args=(stream, child.stdin), name=f"feed:{name}", daemon=True)
    feeder.start()
    finished = False
    try:
        for message in _frames(answers, name):
            if isinstance(message, list):
                for encoded in message:
                    yield decode_row(encoded)
                continue
            finished = True
            kind, *details = message
            if kind == "done":
                facts: FileFacts = details[0]
                return facts
            if kind == "refused":
                raise FileRefused(details[0], details[1])
            raise ReaderProcessFailed(f"{name}: reading the file failed: {details[0]}")
        child.wait(5)
        raise ReaderProcessFailed(
            f"{name}: the process reading the file ended without an answer (exit code {child.returncode})"
        )
    finally:
        _stop(child, feeder, finished)
        answers.close()


def _stop(child: "subprocess.Popen[bytes]", feeder: threading.Thread, finished: bool) -> None:
    """A child that answered ends by itself; one the parent gave up on (an error here, a closed generator) is
    killed. Its end breaks the feeder's pipe, so the feeder ends too, whatever it was blocked on."""
    try:
        if finished:
            child.wait(5)
    except subprocess.TimeoutExpired:
        pass
    if child.poll() is None:
        child.kill()
        child.wait()
    feeder.join(5)
    # A feeder still blocked holds the pipe's lock: closing it would wait for ever (and at interpreter exit
    # abort the process). The pipe is closed with the process then.
    if child.stdin is not None and not feeder.is_alive():
        child.stdin.close()
