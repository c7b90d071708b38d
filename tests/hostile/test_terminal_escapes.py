"""A tenant's escape codes never reach an operator's terminal (issue 36, item 2).

A direct publisher (a plain aio-pika client logged in as the tenant's own RabbitMQ user) puts ESC sequences,
their 8-bit forms, BEL, a bidi override and rich markup into the payment reference, the correlation id, the
AMQP message_id and a body that is not JSON. The consumer and the archiver run as processes; then every `remit`
command that prints tenant text runs as a subprocess, and the bytes it wrote are read: no control character
(but newline) and no invisible format character in them, and the hostile text is there, shown escaped.

Before: `remit dlq list`, `remit dlq show` and `remit trace` wrote the sequences raw (a tenant could retitle the
window, erase and forge the lines above, the SECURITY flag among them, plant OSC 8 links); `remit queues peek`
stopped with a traceback (rich's MarkupError on the message_id's `[/]`), `remit submit` turned a rejected row's
`[link=...]` into a hyperlink, and the raw bytes of `remit report` went to the terminal as they were.
"""

import csv
import io
import json
import os
import pty
import re
import subprocess
import sys
import unicodedata
import uuid
from pathlib import Path

import pytest

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.bankfile_writers import PAIN_001_09, Tx, pain001
from tests.utils.cli import remit_bytes
from tests.utils.dead_letters import start_archiver, wait_for_dead_letters
from tests.utils.factories import make_wire_dict
from tests.utils.queues import require_broker_cli
from tests.utils.services import ROOT, ServiceEnv, ServiceProcess
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration

# Retitle the window; move up one line and erase it; an OSC 8 hyperlink; CSI in its 8-bit form (erase the
# screen); a right-to-left override; rich markup, a stray closing tag among it.
TITLE = "\x1b]0;owned\x07"
ERASE = "\x1b[1A\x1b[2K"
LINK = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
REFERENCE = f"PAY{TITLE}{ERASE}{LINK}\x9b2J\u202eYTIRUCES[/][link=https://evil.example/]x[/link]"
BATCH = f"bulk{ERASE}{TITLE}[bold red]SECURITY[/]"
BODY = f"not json {TITLE}{ERASE}\x9b2J\u202e SECURITY".encode()
MESSAGE_ID = f"m{TITLE}{ERASE}[/]"
MARKUP = "[link=https://evil.example/]x[/link][/]"
SHOWN = r"\x1b]0;owned\x07"  # how the window title looks once escaped


def unsafe_characters(output: bytes) -> list[str]:
    """Every character of the output a terminal would act on or hide: controls but newline (Cc), format
    characters (Cf: bidi overrides, zero-width ...), separators (Zl, Zp). Read as UTF-8, strictly."""
    text = output.decode("utf-8")
    return [repr(c) for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"}]


async def run(env: dict[str, str], *args: str) -> bytes:
    code, out, err = await remit_bytes(env, *args)
    assert code in (0, 1, 2), (args, code, out[-2_000:], err[-4_000:])  # 2: refused, as a replay of these is
    assert b"Traceback" not in err, (args, err[-4_000:])
    assert unsafe_characters(out) == [], (args, unsafe_characters(out)[:10], out[-2_000:])
    assert unsafe_characters(err) == [], (args, unsafe_characters(err)[:10], err[-2_000:])
    return out + err


def run_in_a_terminal(env: dict[str, str], *args: str) -> bytes:
    """The command with a pseudo-terminal as stdout, as an operator runs it: what the terminal was sent."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env, stdout=terminal, stderr=subprocess.PIPE
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65_536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    _, err = process.communicate(timeout=120)
    assert process.returncode in (0, 1), (args, err[-4_000:])
    return b"".join(chunks)


def unsafe_in_a_terminal(output: bytes) -> list[str]:
    """In a terminal rich writes escape sequences of its own, the styles (SGR: `ESC [ ... m`), and the terminal
    driver ends each line with CR LF: whatever else acts on the terminal is the tenant's."""
    own = re.sub(rb"\x1b\[[0-9;]*m", b"", output).replace(b"\r\r\n", b"\n").replace(b"\r\n", b"\n")
    return unsafe_characters(own)


@pytest.mark.timeout(300)
async def test_a_direct_publishers_escape_codes_reach_no_operator_terminal(
    uow_factory: UnitOfWorkFactory, service_env: ServiceEnv, logs_dir: Path, tenant_users: TenantUsers
) -> None:
    require_broker_cli()
    tenant = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(tenant)
    hostile = make_wire_dict(tenant_id=tenant, payment_reference=REFERENCE, correlation_id=BATCH)
    message_id = str(hostile["message_id"])
    async with publisher.session() as session:
        await session.publish_bytes(json.dumps(hostile).encode(), message_id=message_id)
        await session.publish_bytes(BODY, message_id=str(uuid.uuid4()))
        await session.publish_bytes(json.dumps(make_wire_dict(tenant_id=tenant)).encode(), message_id=MESSAGE_ID)
    env = service_env.env(COLUMNS="200")

    # Waiting in the queue, nobody consuming yet: the broker's own peek shows ids and the start of each body.
    peeked = await run(env, "queues", "peek", "payments.work.basic", "--tenant", tenant)
    assert rb"\u009b2J\u202e SECURITY" in peeked  # the body's start, shown escaped
    assert b"[/]" in peeked  # the message_id's markup, shown as written (it was a MarkupError and a traceback)

    # Their logs in plain text, everything from INFO: what a `tail -f` on a terminal shows.
    chatty = {**env, "REMIT_LOG_FORMAT": "plain", "REMIT_LOG_LEVEL": "INFO"}
    consumer = ServiceProcess.consumer(chatty, logs_dir / "consumer.log")
    archiver = start_archiver(chatty, logs_dir / "archiver.log")
    try:
        stored = await wait_for_dead_letters(uow_factory, tenant, 3, timeout=90)
    finally:
        consumer.stop()
        archiver.stop()
    for log in (consumer.log_path, archiver.log_path):  # FastStream's CLI colours its own lines: styles only
        assert unsafe_in_a_terminal(log.read_bytes()) == [], (log.name, log.read_bytes()[-3_000:])
    ids = [str(d.dead_letter_id) for d in stored]

    listed = await run(env, "dlq", "list", "--tenant", tenant)
    assert SHOWN.encode() in listed
    assert b"SECURITY[/]" in listed  # markup shown as written, never applied
    assert json.loads(await run(env, "dlq", "list", "--tenant", tenant, "--json"))["dead_letters"]
    for dead_letter_id in ids:
        shown = await run(env, "dlq", "show", dead_letter_id, "--tenant", tenant)
        assert SHOWN.encode() in shown
        as_json = json.loads(await run(env, "dlq", "show", dead_letter_id, "--tenant", tenant, "--json"))
        assert as_json["summary"]["tenant_id"] == tenant
        assert unsafe_in_a_terminal(run_in_a_terminal(env, "dlq", "show", dead_letter_id, "--tenant", tenant)) == []
    await run(env, "dlq", "stats", "--tenant", tenant)
    await run(env, "dlq", "replay", ids[0], "--tenant", tenant, "--dry-run", "--force")
    await run(env, "dlq", "discard", ids[0], "--tenant", tenant, "--reason", "looked at it")
    await run(env, "dlq", "audit", "--tenant", tenant)

    traced = await run(env, "trace", message_id, "--tenant", tenant)
    assert SHOWN.encode() in traced
    traced_json = json.loads(await run(env, "trace", message_id, "--tenant", tenant, "--json"))
    assert traced_json["payment_reference"] == REFERENCE  # JSON keeps the value, escaped by JSON itself
    assert unsafe_in_a_terminal(run_in_a_terminal(env, "trace", message_id, "--tenant", tenant)) == []
    assert unsafe_in_a_terminal(run_in_a_terminal(env, "dlq", "list", "--tenant", tenant)) == []
    # CSV: shown escaped on a terminal; a pipe gets the values as they are, for the program reading them.
    as_csv = ("dlq", "list", "--tenant", tenant, "--status", "all", "--format", "csv")
    assert unsafe_in_a_terminal(run_in_a_terminal(env, *as_csv)) == []
    code, piped, _ = await remit_bytes(env, *as_csv)
    assert code == 0
    assert REFERENCE in {r["payment_reference"] for r in csv.DictReader(io.StringIO(piped.decode(), newline=""))}


async def test_a_bank_files_escape_codes_reach_no_operator_terminal(
    uow_factory: UnitOfWorkFactory, service_env: ServiceEnv, tmp_path: Path
) -> None:
    """The tenant's own files, submitted for it: `remit submit` lists the rejected rows, `remit report` prints a
    batch's status report, which repeats a pain.001's original ids as the file wrote them (an EndToEndId can
    hold C1 controls and bidi overrides: XML allows them). Written to a file or a pipe, a report keeps its
    bytes (data for a program); to a terminal, those characters are shown escaped."""
    tenant = await fresh_tenant(uow_factory)
    rows = [payment_row(1), payment_row(2, payment_reference=REFERENCE), payment_row(3, payment_reference=MARKUP)]
    env = service_env.env(COLUMNS="200")
    submitted = await run(env, "submit", str(write_csv(tmp_path / "hostile.csv", rows)), "--tenant", tenant)
    assert SHOWN.encode() in submitted
    assert MARKUP.encode() in submitted

    end_to_end = "E2E\x9b2J\u202eKCOLB"
    file = tmp_path / "hostile.xml"
    file.write_bytes(pain001(PAIN_001_09, [Tx("E2E-1", "10.00"), Tx(end_to_end, "20.00")], message_id="HOSTILE-1"))
    submitted = await run(env, "submit", str(file), "--tenant", tenant)
    assert rb"E2E\u009b2J\u202eKCOLB" in submitted
    batch = submitted.decode().split("batch ", 1)[1].split()[0]
    for report_format in ("pain.002", "csv", "json"):
        on_screen = run_in_a_terminal(env, "report", batch, "--format", report_format)
        assert unsafe_in_a_terminal(on_screen) == [], (report_format, on_screen[-2_000:])
        assert rb"E2E\u009b2J\u202eKCOLB" in on_screen, (report_format, on_screen[-2_000:])
        code, piped, _ = await remit_bytes(env, "report", batch, "--format", report_format)
        assert code == 0
        # For a program: the original id as the tenant wrote it (JSON spells it with JSON's escapes).
        as_written = json.loads(piped)["transactions"][1]["end_to_end_id"] if report_format == "json" else piped
        assert end_to_end.encode() in as_written if isinstance(as_written, bytes) else as_written == end_to_end
