"""Attacks on the admin process's HTTP edge, and what they cost it, measured from outside (tests/hostile/).

`send_body` writes a request over a raw socket, the way an attacker would: a declared Content-Length or
chunked transfer, the body pushed while the answer is read at the same time, so that an early answer (and a
closed connection) is seen instead of being hidden by a client that insists on sending everything first.
`ProcessCost` samples what the process holds while it runs: resident memory, bytes it read from sockets and
files (/proc/<pid>/io `rchar`), and bytes on disk under its temporary directory, counting files already
unlinked but still open (a spooled upload is one: it has no name, only a descriptor).
"""

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

MIB = 1024 * 1024
CHUNK = 256 * 1024


@dataclass
class Answer:
    status: int | None  # None: the connection ended with no answer at all
    headers: dict[str, str]
    body: bytes
    sent: int  # body bytes the socket took before the answer came (or the connection closed)


def multipart_parts(boundary: str, fields: dict[str, str], filename: str) -> tuple[bytes, bytes]:
    """What goes before and after a file part's bytes in a multipart/form-data body."""
    head = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    )
    head += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    return head, f"\r\n--{boundary}--\r\n".encode()


async def send_body(
    port: int,
    path: str,
    size: int,
    *,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
    chunked: bool = False,
    head: bytes = b"",
    tail: bytes = b"",
    filler: bytes = b" ",
    timeout: float = 120,
) -> Answer:
    """POST a body of `size` bytes (`head`, then `filler` repeated, then `tail`) and read the answer while
    sending. Sending stops once an answer has arrived or the server stopped taking bytes; the answer is read
    even then (a plain socket, unlike a stream writer, stays readable after a failed send)."""
    loop = asyncio.get_running_loop()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setblocking(False)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    request = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n{framing}\r\n"
    answered = asyncio.Event()
    sent = 0

    async def push() -> None:
        nonlocal sent
        block = (filler * (CHUNK // len(filler) + 1))[:CHUNK]
        with contextlib.suppress(OSError):
            await loop.sock_sendall(sock, f"{request}{extra}\r\n".encode())
            for piece in _pieces(head, block, tail, size):
                if answered.is_set():
                    return
                await loop.sock_sendall(sock, b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                sent += len(piece)
            if chunked:
                await loop.sock_sendall(sock, b"0\r\n\r\n")

    pushing = asyncio.create_task(push())
    try:
        answer = await asyncio.wait_for(_read_answer(loop, sock), timeout)
    finally:
        answered.set()
        await asyncio.wait_for(pushing, timeout)
        sock.close()
    answer.sent = sent
    return answer


def _pieces(head: bytes, block: bytes, tail: bytes, size: int) -> Iterator[bytes]:
    """The body as pieces, made as they are sent: a 200 MiB body is never held."""
    if head:
        yield head
    left = size - len(head) - len(tail)
    while left > 0:
        piece = block[: min(left, len(block))]
        left -= len(piece)
        yield piece
    if tail:
        yield tail


async def _read_answer(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> Answer:
    """The status, headers and (Content-Length) body of the answer, as far as the connection gave them."""
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data:
            if not (more := await loop.sock_recv(sock, 65536)):
                break
            data += more
    if b"\r\n\r\n" not in data:
        return Answer(None, {}, data, 0)
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    length = int(headers.get("content-length", "0"))
    with contextlib.suppress(OSError):
        while len(body) < length and (more := await loop.sock_recv(sock, 65536)):
            body += more
    return Answer(int(status_line.split()[1]), headers, body, 0)


@dataclass
class Cost:
    rss_before: int = 0
    rss_peak: int = 0
    rss_after: int = 0
    read_before: int = 0
    read_after: int = 0
    disk_peak: int = 0
    disk_after: int = 0
    files_after: list[str] = field(default_factory=list)

    @property
    def rss_growth(self) -> int:
        return self.rss_peak - self.rss_before

    @property
    def read(self) -> int:
        return self.read_after - self.read_before

    def describe(self) -> str:
        return (
            f"RSS {self.rss_before / MIB:.0f} -> peak {self.rss_peak / MIB:.0f} -> {self.rss_after / MIB:.0f} MiB; "
            f"read {self.read / MIB:.1f} MiB; disk peak {self.disk_peak / MIB:.1f} MiB, left {self.disk_after} bytes"
        )


class ProcessCost:
    """Peak RSS and on-disk bytes under `tmp` of process `pid` while the block runs; bytes it read."""

    def __init__(self, pid: int, tmp: Path, every: float = 0.01) -> None:
        self.process = psutil.Process(pid)
        self.tmp = tmp
        self.every = every
        self.cost = Cost()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Cost:
        self.cost.rss_before = self.cost.rss_peak = self.process.memory_info().rss
        self.cost.read_before = _rchar(self.process.pid)
        self._task = asyncio.create_task(self._sample())
        return self.cost

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        await asyncio.sleep(0.5)  # what the process does right after its answer counts too
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.cost.rss_after = self.process.memory_info().rss
        self.cost.read_after = _rchar(self.process.pid)
        self.cost.disk_after = disk_use(self.process.pid, self.tmp)
        self.cost.files_after = [str(p.relative_to(self.tmp)) for p in self.tmp.rglob("*")]

    async def _sample(self) -> None:
        while True:
            with contextlib.suppress(psutil.Error, OSError):
                self.cost.rss_peak = max(self.cost.rss_peak, self.process.memory_info().rss)
                self.cost.disk_peak = max(self.cost.disk_peak, disk_use(self.process.pid, self.tmp))
            await asyncio.sleep(self.every)


def _rchar(pid: int) -> int:
    io = Path(f"/proc/{pid}/io").read_text()
    return int(next(line for line in io.splitlines() if line.startswith("rchar:")).split()[1])


def disk_use(pid: int, tmp: Path) -> int:
    """Bytes of the files under `tmp`, plus those of unlinked files under it the process still holds open."""
    total = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
    folder = str(tmp)
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith(folder) and target.endswith(" (deleted)"):
                total += fd.stat().st_size
    return total
