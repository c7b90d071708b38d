"""Reading a quorum queue's messages where they are, without delivering them: RabbitMQ's own
`rabbitmq-queues peek`, which reads the queue's state at a position.

Why not read and requeue over AMQP: on RabbitMQ 3.10 every way of giving a delivered message back to a
quorum queue (basic.nack or basic.reject with requeue, basic.recover, closing the channel, the management
API's "get" with requeue) raises its `x-delivery-count` by one (measured, tests/integration/
test_queue_peek.py). With `x-delivery-limit` 20 on the work queues, twenty peeks would dead-letter a
payment that was only being looked at. The broker's peek delivers nothing: order, delivery count and
the `redelivered` flag stay as they were.

Its costs: it needs the broker's CLI and Erlang cookie where it runs (REMIT_RABBITMQ_QUEUES_COMMAND can
reach another host, e.g. `docker compose exec -T rabbitmq rabbitmq-queues`), each position is one call
(about 0.5 s, most of it the CLI starting), and it shows at most the body's first 64 bytes.
"""

import asyncio
import json
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.errors import ServiceUnavailable, UsageError

CALL_TIMEOUT_SECONDS = 30.0
BODY_PREFIX_BYTES = 64  # what `rabbitmq-queues peek` shows of a body ("payload (max 64 bytes)")
PAYLOAD = f"payload (max {BODY_PREFIX_BYTES} bytes)"
UNREADABLE = "(unreadable: its headers are nested deeper than can be read)"
# The peek's own top-level fields, found in text json cannot read as a whole (a publisher's headers nested a few
# hundred levels deep). Nested values are arrays in the peek's format, and a quote inside a string is escaped, so
# a key preceded by { or , is one of the message's own.
_SCALARS = re.compile(r'[{,]"(message_id|user_id|timestamp|routing_keys)":("(?:[^"\\]|\\.)*"|\d+|\["(?:[^"\\]|\\.)*")')
_END_OF_QUEUE = "does not have a message at that position"
_NO_QUEUE = "was not found"


@dataclass(frozen=True, slots=True)
class PeekedMessage:
    position: int
    message_id: str | None
    user_id: str | None
    routing_key: str | None
    timestamp: datetime | None  # the `timestamp` property, whoever set it
    headers: dict[str, Any]
    body_prefix: str  # the body's first BODY_PREFIX_BYTES bytes at most, as the broker shows them

    @property
    def delivery_count(self) -> int:
        """Deliveries given back to the queue so far (`x-delivery-count`, absent or 0 before any)."""
        count = self.headers.get("x-delivery-count")
        return count if isinstance(count, int) else 0

    @classmethod
    def of(cls, position: int, raw: dict[str, Any]) -> "PeekedMessage":
        stamp = raw.get("timestamp")
        keys = raw.get("routing_keys") or []
        return cls(
            position=position,
            message_id=_text(raw.get("message_id")),
            user_id=_text(raw.get("user_id")),
            routing_key=_text(keys[0]) if keys else None,
            timestamp=datetime.fromtimestamp(stamp, UTC) if isinstance(stamp, int) else None,
            headers={k.removeprefix("header."): v for k, v in raw.items() if k.startswith("header.")},
            body_prefix=str(raw.get(PAYLOAD, "")),
        )


class BrokerPeek:
    def __init__(self, command: Sequence[str], niceness: int = 0) -> None:
        """`niceness` > 0: the CLI runs under `nice` at that niceness (where `nice` exists), so a peek made in
        the background waits while the processes beside it need the CPU."""
        self._command = list(command)
        self._nice = ["nice", "-n", str(niceness)] if niceness > 0 and shutil.which("nice") else []

    @property
    def available(self) -> bool:
        return bool(self._command) and shutil.which(self._command[0]) is not None

    async def at(self, vhost: str, queue: str, position: int) -> PeekedMessage | None:
        """The message at `position` (1 is the head), or None past the end of the queue."""
        if not self.available:
            what = f"{self._command[0]!r} is not on this machine" if self._command else "it is turned off"
            raise ServiceUnavailable(
                f"cannot peek: {what}; REMIT_RABBITMQ_QUEUES_COMMAND says how to run rabbitmq-queues (docs/queues.md)"
            )
        args = ["peek", "--vhost", vhost, queue, str(position), "--formatter", "json"]
        out, err, code = await self._run(args)
        if code == 0:
            try:
                return PeekedMessage.of(position, json.loads(out)["message"])
            except RecursionError:
                return PeekedMessage.of(
                    position, _scalars(out) | {f"payload (max {BODY_PREFIX_BYTES} bytes)": UNREADABLE}
                )
        problem = _problem(err or out)
        if _END_OF_QUEUE in problem:
            return None
        if _NO_QUEUE in problem:
            raise UsageError(f"no queue {queue!r} in vhost {vhost!r}")
        raise ServiceUnavailable(f"rabbitmq-queues peek failed (exit {code}): {problem}")

    async def _run(self, args: list[str]) -> tuple[str, str, int]:
        process = await asyncio.create_subprocess_exec(
            *self._nice, *self._command, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), CALL_TIMEOUT_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise ServiceUnavailable(f"rabbitmq-queues peek did not answer in {CALL_TIMEOUT_SECONDS:.0f}s") from None
        return out.decode(errors="replace"), err.decode(errors="replace"), process.returncode or 0


def _problem(output: str) -> str:
    try:
        return str(json.loads(output)["message"])
    except (ValueError, KeyError, TypeError):
        return output.strip().splitlines()[-1][:300] if output.strip() else "no output"


def _scalars(text: str) -> dict[str, Any]:
    """The message's own scalar fields (ids, publisher, timestamp, routing key) out of a peek json cannot parse."""
    found: dict[str, Any] = {}
    for name, value in _SCALARS.findall(text):
        if name not in found:
            found[name] = json.loads(value + ("]" if value.startswith("[") else ""))
    return found


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
