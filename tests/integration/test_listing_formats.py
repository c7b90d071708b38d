"""Issue 37, item 5: the listing commands off a terminal. Each runs as a real process with its stdout in a file or a
pipe, as cron or a script runs it; `--format json` and `--format csv` are parsed back (json.loads, csv.DictReader)
and compared with what PostgreSQL holds for this test's fresh tenant, batch and dead letters. Tables: full values
when stdout is not a terminal, whatever COLUMNS says (before: cells of one or two characters, `b…`); on a terminal
160 columns wide no id is split across lines (before: `PAY-ANZ-2025-000005` / `39`).

`remit reconcile`'s formats need Spark: tests/e2e/test_reconcile_formats.py."""

import csv
import io
import json
import os
import pty
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aio_pika.abc import AbstractChannel

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.dead_letters import archive_as_consumer
from tests.utils.factories import make_wire_dict
from tests.utils.queues import publish_like_the_relay, require_broker_cli
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL, ROOT, ServiceEnv
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration

BASIC = "payments.work.basic"
# The same number of minor units in currencies of 2, 0 and 3 decimal places (ISO 4217): 450.50 AUD, 45,050 JPY,
# 45.050 KWD.
AMOUNTS = [(45_050, "AUD"), (45_050, "JPY"), (45_050, "KWD"), (7, "AUD")]
NOTE = "customer called about 123456789"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Scene:
    tenant: str
    batch: str
    references: list[str]  # 21 characters each, like PAY-ANZ-2025-00000539
    message_ids: list[str]  # the batch's, in row order
    dead_letters: list[int]
    dead_message_ids: list[str]
    dead_references: list[str]
    env: dict[str, str]
    database_url: str


def reference() -> str:
    return f"PAY-LST-{uuid.uuid4().hex[:13].upper()}"  # 21 characters


@pytest.fixture
async def scene(
    channel: AbstractChannel,  # declares the topology: the queues `remit queues` lists
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    service_env: ServiceEnv,
    database_url: str,
    tmp_path: Path,
) -> Scene:
    tenant = await fresh_tenant(uow_factory)
    references = [reference() for _ in AMOUNTS]
    rows = [
        payment_row(n, payment_reference=ref, amount_cents=cents, currency=currency)
        for n, (ref, (cents, currency)) in enumerate(zip(references, AMOUNTS, strict=True))
    ]
    accepted = await submit_batch(SubmitBatch(tenant, write_csv(tmp_path / "batch.csv", rows)), uow_factory, settings)
    outbox = await outbox_rows(uow_factory, accepted.correlation_id)
    await publish_like_the_relay(settings.amqp_url, outbox[:2])  # waiting in the basic queue, nobody consuming
    wires = [make_wire_dict(tenant_id=tenant, amount_cents=c, currency=cur, payment_reference=reference())
             for c, cur in AMOUNTS[:3]]  # fmt: skip
    dead = [await archive_as_consumer(uow_factory, wire, "account_closed") for wire in wires]
    made = Scene(
        tenant,
        accepted.correlation_id,
        references,
        [str(r.message_id) for r in outbox],
        dead,
        [str(w["message_id"]) for w in wires],
        [str(w["payment_reference"]) for w in wires],
        service_env.env(),
        database_url,
    )
    remit_piped(made, "dlq", "discard", str(dead[0]), "--reason", NOTE, "--actor", "lister")  # an audit entry
    return made


async def sql(scene: Scene, query: str, *args: object) -> list[dict[str, Any]]:
    """What PostgreSQL holds, read as its owner, nothing of remit's code between."""
    conn = await asyncpg.connect(scene.database_url.replace("+asyncpg", ""))
    try:
        return [dict(r) for r in await conn.fetch(query, *args)]
    finally:
        await conn.close()


def remit_to_file(scene: Scene, tmp_path: Path, *args: str, **env: str) -> str:
    """`remit ARGS` with its stdout in a file, as `remit ... > out` in cron; the file's text."""
    out = tmp_path / f"out-{uuid.uuid4().hex[:6]}"
    with out.open("wb") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            cwd=ROOT,
            env={**scene.env, **env},
            stdout=sink,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    assert done.returncode == 0, (args, done.stderr.decode()[-3_000:])
    return out.read_text()


def remit_piped(scene: Scene, *args: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", *args], cwd=ROOT, env={**scene.env, **env}, capture_output=True, timeout=120
    )
    assert done.returncode == 0, (args, done.stderr.decode()[-3_000:])
    return done.stdout.decode()


def remit_refused(scene: Scene, *args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=scene.env, capture_output=True)
    return done.returncode, done.stderr.decode()


def remit_on_a_terminal(scene: Scene, columns: int, *args: str) -> str:
    """`remit ARGS` with a pseudo-terminal `columns` wide as its stdout; what it printed, styles taken out."""
    controller, terminal = pty.openpty()
    env = {**scene.env, "COLUMNS": str(columns), "TERM": "xterm-256color"}
    process = subprocess.Popen([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env, stdout=terminal)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the process closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert process.wait(timeout=120) == 0, args
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def parsed_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


# ------------------------------------------------------------------------------------------------ json and csv


async def test_status_as_json_and_csv_is_what_the_database_holds(scene: Scene, tmp_path: Path) -> None:
    held = await sql(
        scene,
        "SELECT currency, accepted_count, accepted_cents FROM batch_totals WHERE correlation_id = $1 ORDER BY currency",
        scene.batch,
    )
    assert [(r["currency"], r["accepted_count"], r["accepted_cents"]) for r in held] == [
        ("AUD", 2, 45_057),
        ("JPY", 1, 45_050),
        ("KWD", 1, 45_050),
    ]
    args = ("status", "--batch", scene.batch, "--tenant", scene.tenant)
    as_json = json.loads(remit_to_file(scene, tmp_path, *args, "--format", "json"))
    assert isinstance(as_json, list)
    shown = sorted(
        (r["tenant_id"], r["correlation_id"], r["currency"], r["accepted"], r["accepted_cents"], r["in_flight"])
        for r in as_json
    )
    assert shown == [(scene.tenant, scene.batch, r["currency"], r["accepted_count"], r["accepted_cents"],
                      r["accepted_count"]) for r in held]  # fmt: skip
    assert all(type(r["accepted_cents"]) is int for r in as_json)  # exact: integers, never "45050.0" or text
    as_csv = parsed_csv(remit_to_file(scene, tmp_path, *args, "--format", "csv"))
    assert [{k: str(v) for k, v in r.items()} for r in sorted(as_json, key=lambda r: r["currency"])] == sorted(
        as_csv, key=lambda r: r["currency"]
    )


async def test_dead_letters_list_stats_and_audit_as_json_and_csv(scene: Scene, tmp_path: Path) -> None:
    held = await sql(
        scene,
        "SELECT dead_letter_id, message_id::text, payment_reference, amount_cents, currency, reason, status "
        "FROM dead_letters WHERE tenant_id = $1 ORDER BY dead_letter_id",
        scene.tenant,
    )
    assert [r["dead_letter_id"] for r in held] == scene.dead_letters
    fields = list(held[0])

    listed = json.loads(remit_to_file(scene, tmp_path, "dlq", "list", "--tenant", scene.tenant, "--status", "all",
                                      "--format", "json"))["dead_letters"]  # fmt: skip
    assert sorted(({k: r[k] for k in fields} for r in listed), key=lambda r: r["dead_letter_id"]) == held
    as_csv = parsed_csv(
        remit_piped(scene, "dlq", "list", "--tenant", scene.tenant, "--status", "all", "--format", "csv")
    )
    assert sorted(({k: r[k] for k in fields} for r in as_csv), key=lambda r: int(r["dead_letter_id"])) == [
        {k: str(v) for k, v in r.items()} for r in held
    ]

    # Value at risk: the open ones, per currency, never summed across currencies.
    stats = parsed_csv(remit_piped(scene, "dlq", "stats", "--tenant", scene.tenant, "--format", "csv"))
    open_ones = [r for r in held if r["status"] == "open"]
    assert {(r["currency"], int(r["count"]), int(r["amount_cents"])) for r in stats if r["by"] == "total"} == {
        (r["currency"], 1, r["amount_cents"]) for r in open_ones
    }
    assert json.loads(remit_piped(scene, "dlq", "stats", "--tenant", scene.tenant, "--format", "json"))["total"] == [
        {"group": "all", "currency": r["currency"], "count": 1, "amount_cents": r["amount_cents"]}
        for r in sorted(open_ones, key=lambda r: r["currency"])
    ]

    [entry] = await sql(scene, "SELECT audit_id, actor, action, dead_letter_id FROM dead_letter_audit "
                               "WHERE tenant_id = $1", scene.tenant)  # fmt: skip
    audit = parsed_csv(remit_piped(scene, "dlq", "audit", "--tenant", scene.tenant, "--format", "csv"))
    assert [(r["record"], r["audit_id"], r["actor"], r["action"], r["dead_letter_id"], r["why"]) for r in audit] == [
        (
            "entry",
            str(entry["audit_id"]),
            "lister",
            "discard",
            str(scene.dead_letters[0]),
            "customer called about ******789",
        )
    ]
    trail = json.loads(remit_piped(scene, "dlq", "audit", "--tenant", scene.tenant, "--format", "json"))
    assert [(e["audit_id"], e["action"]) for e in trail["audit"]] == [(entry["audit_id"], "discard")]


async def test_a_trace_as_json_and_csv_is_the_payments_own_row(scene: Scene, tmp_path: Path) -> None:
    [row] = await sql(
        scene,
        "SELECT message_id::text, payment_reference, amount_cents, currency, correlation_id FROM outbox "
        "WHERE tenant_id = $1 AND payment_reference = $2",
        scene.tenant,
        scene.references[2],
    )
    traced = json.loads(remit_to_file(scene, tmp_path, "trace", scene.references[2], "--tenant", scene.tenant,
                                      "--format", "json"))  # fmt: skip
    assert {k: traced[k] for k in row} == row
    assert (traced["amount_cents"], traced["currency"]) == (45_050, "KWD")
    events = parsed_csv(remit_piped(scene, "trace", row["message_id"], "--tenant", scene.tenant, "--format", "csv"))
    assert [e["stage"] for e in events] == [e["stage"] for e in traced["events"]]
    assert {(e["message_id"], e["payment_reference"], e["correlation_id"]) for e in events} == {
        (row["message_id"], row["payment_reference"], row["correlation_id"])
    }
    assert [int(e["n"]) for e in events] == list(range(1, len(events) + 1))


async def test_tenants_list_as_json_and_csv(scene: Scene, tmp_path: Path) -> None:
    [held] = await sql(
        scene,
        "SELECT tenant_id, name, tier, status, default_ttl_seconds FROM tenants WHERE tenant_id = $1",
        scene.tenant,
    )
    listed = json.loads(remit_to_file(scene, tmp_path, "tenants", "list", "--format", "json"))
    assert [{k: t[k] for k in held} for t in listed if t["tenant_id"] == scene.tenant] == [held]
    as_csv = parsed_csv(remit_piped(scene, "tenants", "list", "--format", "csv"))
    assert [{k: t[k] for k in held} for t in as_csv if t["tenant_id"] == scene.tenant] == [
        {k: str(v) for k, v in held.items()}
    ]


async def test_queues_list_and_peek_as_json_and_csv(scene: Scene, tmp_path: Path) -> None:
    require_broker_cli()
    import httpx  # the management API, as RabbitMQ itself reports the vhost's queues

    vhost = scene.env["REMIT_AMQP_URL"].rsplit("/", 1)[1]
    async with httpx.AsyncClient(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
        queues = {q["name"] for q in (await client.get(f"/api/queues/{vhost}")).json()}
    overview = json.loads(
        remit_to_file(scene, tmp_path, "queues", "list", "--tenant", scene.tenant, "--format", "json")
    )
    listed = {q["name"] for q in overview["live"]["queues"]}
    assert BASIC in listed
    assert listed <= queues
    [load] = overview["tenants"]
    [held] = await sql(scene, "SELECT tier, status FROM tenants WHERE tenant_id = $1", scene.tenant)
    assert (load["tenant_id"], load["tier"], load["status"], load["in_flight"]) == (
        scene.tenant,
        held["tier"],
        held["status"],
        len(AMOUNTS),
    )
    as_csv = parsed_csv(remit_piped(scene, "queues", "list", "--tenant", scene.tenant, "--format", "csv"))
    assert {r["name"] for r in as_csv if r["record"] == "queue"} == {q["name"] for q in overview["live"]["queues"]}
    assert [(r["tenant_id"], r["in_flight"]) for r in as_csv if r["record"] == "tenant"] == [
        (scene.tenant, str(len(AMOUNTS)))
    ]

    peek = ("queues", "peek", BASIC, "--tenant", scene.tenant)
    peeked = json.loads(remit_piped(scene, *peek, "--format", "json"))["payments"]
    assert [p["message_id"] for p in peeked] == scene.message_ids[:2]  # what was published, in order
    as_csv = parsed_csv(remit_piped(scene, *peek, "--format", "csv"))
    assert [(r["message_id"], r["payment_reference"], r["amount_cents"], r["currency"]) for r in as_csv] == [
        (scene.message_ids[0], scene.references[0], "45050", "AUD"),
        (scene.message_ids[1], scene.references[1], "45050", "JPY"),
    ]


async def test_json_and_format_json_are_the_same_and_a_contradiction_is_refused(scene: Scene) -> None:
    args = ("dlq", "list", "--tenant", scene.tenant)
    assert json.loads(remit_piped(scene, *args, "--json")) == json.loads(remit_piped(scene, *args, "--format", "json"))
    code, err = remit_refused(scene, *args, "--json", "--format", "csv")
    assert code == 2
    assert "--json and --format csv contradict each other" in err


# ------------------------------------------------------------------------------------------------ tables


def tables(scene: Scene) -> dict[tuple[str, ...], list[str]]:
    """Each listing command's table, with the ids it shows."""
    t, batch, refs, ids = scene.tenant, scene.batch, scene.references, scene.message_ids
    return {
        ("status", "--batch", batch, "--tenant", t): [t, batch],
        ("dlq", "list", "--tenant", t, "--status", "all"): [t, *scene.dead_references],
        ("dlq", "stats", "--tenant", t): [t],
        ("dlq", "audit", "--tenant", t): [t],
        ("trace", refs[0], "--tenant", t): [t, batch, refs[0], ids[0]],
        ("tenants", "list"): [t],
        ("queues", "list", "--tenant", t): [t, BASIC],
    }


def whole_on_a_line(text: str, value: str) -> bool:
    return any(value in line for line in text.splitlines())


async def test_tables_off_a_terminal_show_full_values_whatever_the_width(scene: Scene) -> None:
    """COLUMNS=40 with stdout a pipe (a cron job's log): every value whole on its row's line, nothing cut to `…`."""
    shown = {args: remit_piped(scene, *args, COLUMNS="40") for args in tables(scene)}
    assert all("…" not in text for text in shown.values()), [a for a, t in shown.items() if "…" in t]
    for args, ids in tables(scene).items():
        assert [i for i in ids if not whole_on_a_line(shown[args], i)] == [], (args, shown[args])
    commands = list(tables(scene))
    status, listed, traced = shown[commands[0]], shown[commands[1]], shown[commands[4]]
    for amount in ("450.57 (45,057)", " 45,050 ", "45.050 (45,050)"):  # AUD, JPY, KWD in their own units
        assert amount in status
    lines = [line for line in status.splitlines() if scene.batch in line]
    assert {next(c for c in ("AUD", "JPY", "KWD") if f" {c} " in line) for line in lines} == {"AUD", "JPY", "KWD"}
    for dead_letter_id in scene.dead_letters:
        assert re.search(rf"│ +{dead_letter_id} │ {scene.tenant} +│", listed), listed
    for value in (scene.tenant, scene.batch, scene.references[0], scene.message_ids[0], "450.50 AUD (45,050 cents)"):
        assert whole_on_a_line(traced, value), (value, traced)


async def test_tables_on_a_160_column_terminal_split_no_id(scene: Scene) -> None:
    """COLUMNS=160 on a terminal: each id whole on one line (before: `PAY-ANZ-2025-000005` / `39`)."""
    require_broker_cli()
    peek = ("queues", "peek", BASIC, "--tenant", scene.tenant)
    shown_ids = {**tables(scene), peek: [*scene.references[:2], *scene.message_ids[:2]]}
    for args, ids in shown_ids.items():
        shown = remit_on_a_terminal(scene, 160, *args)
        assert "…" not in shown, (args, shown)
        assert [i for i in ids if not whole_on_a_line(shown, i)] == [], (args, shown)
    listed = remit_on_a_terminal(scene, 160, "dlq", "list", "--tenant", scene.tenant, "--status", "all")
    assert max(map(len, listed.splitlines())) <= 160  # it fits the terminal: no line for the terminal to fold
