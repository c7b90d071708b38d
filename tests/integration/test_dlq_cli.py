"""`remit dlq` and `remit purge` as a user runs them: output shape, exit codes, error messages.

Most tests call the typer app in-process (CliRunner); two run it as a real process. The tests are
synchronous because each command runs its own event loop, as it does from a shell.
"""

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from app.cli.dlq import dlq_app
from app.cli.purge import purge_command
from app.resources import uow_factory_for
from app.settings import get_settings
from app.storage.engine import make_engine
from app.tracing.lookup import PaymentQuery
from app.tracing.model import PaymentTrace
from app.tracing.service import trace_payment
from tests.utils.dead_letters import archive_as_consumer
from tests.utils.factories import make_wire_dict, new_tenant_id
from tests.utils.services import ROOT

pytestmark = pytest.mark.integration

cli = typer.Typer()
cli.add_typer(dlq_app, name="dlq")
cli.command("purge")(purge_command)
runner = CliRunner()


@pytest.fixture(autouse=True)
def env(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REMIT_DATABASE_URL", database_url)
    monkeypatch.setenv("USER", "cli-tester")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def seed(database_url: str, *dead: tuple[dict[str, Any], str]) -> list[int]:
    """Store consumer-style dead letters; return their ids in the order given."""

    async def store() -> list[int]:
        engine = make_engine(database_url, pool_size=1)
        try:
            return [await archive_as_consumer(uow_factory_for(engine), wire, reason) for wire, reason in dead]
        finally:
            await engine.dispose()

    return asyncio.run(store())


def invoke(*args: str) -> Any:
    return runner.invoke(cli, list(args))


def as_json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_list_shows_only_the_tenants_dead_letters_as_json_and_as_a_table(database_url: str) -> None:
    a, b = new_tenant_id(), new_tenant_id()
    mine, _ = seed(
        database_url,
        (make_wire_dict(tenant_id=a, amount_cents=1234), "retries_exhausted"),
        (make_wire_dict(tenant_id=b), "retries_exhausted"),
    )
    listed = as_json(invoke("dlq", "list", "--tenant", a, "--json"))["dead_letters"]
    assert [(d["dead_letter_id"], d["tenant_id"], d["amount_cents"], d["status"]) for d in listed] == [
        (mine, a, 1234, "open")
    ]
    assert set(listed[0]) >= {"message_id", "correlation_id", "reason", "currency", "first_failed_at", "attempts"}
    table = invoke("dlq", "list", "--tenant", a)
    assert table.exit_code == 0
    assert a in table.stdout
    assert b not in table.stdout
    assert as_json(invoke("dlq", "list", "--tenant", a, "--reason", "invalid", "--json")) == {"dead_letters": []}


def test_show_masks_account_numbers_unless_unmasked_and_hides_other_tenants(database_url: str) -> None:
    a, b = new_tenant_id(), new_tenant_id()
    wire = make_wire_dict(tenant_id=a, debtor_account="123456789")
    [dead] = seed(database_url, (wire, "permanent_failure"))
    shown = as_json(invoke("dlq", "show", str(dead), "--tenant", a, "--json"))
    assert shown["body_json"]["debtor_account"] == "******789"
    assert "123456789" not in json.dumps(shown)
    assert shown["summary"]["reason"] == "permanent_failure"
    unmasked = as_json(invoke("dlq", "show", str(dead), "--unmask", "--json"))
    assert unmasked["body_json"]["debtor_account"] == "123456789"
    assert "******789" in invoke("dlq", "show", str(dead)).stdout

    hidden = invoke("dlq", "show", str(dead), "--tenant", b)
    assert hidden.exit_code == 2
    assert f"no dead letter {dead} for tenant {b}" in hidden.stderr


def test_stats_give_value_at_risk_per_currency_never_summed_across(database_url: str) -> None:
    tenant = new_tenant_id()
    seed(
        database_url,
        (make_wire_dict(tenant_id=tenant, currency="AUD", amount_cents=100), "retries_exhausted"),
        (make_wire_dict(tenant_id=tenant, currency="AUD", amount_cents=50), "permanent_failure"),
        (make_wire_dict(tenant_id=tenant, currency="USD", amount_cents=7), "retries_exhausted"),
    )
    stats = as_json(invoke("dlq", "stats", "--tenant", tenant, "--json"))
    assert [(r["currency"], r["count"], r["amount_cents"]) for r in stats["total"]] == [("AUD", 2, 150), ("USD", 1, 7)]
    assert {(r["group"], r["currency"], r["amount_cents"]) for r in stats["by_reason"]} == {
        ("permanent_failure", "AUD", 50),
        ("retries_exhausted", "AUD", 100),
        ("retries_exhausted", "USD", 7),
    }
    assert "value at risk" in invoke("dlq", "stats", "--tenant", tenant).stdout


def test_replay_errors_say_how_to_fix_them(database_url: str) -> None:
    tenant = new_tenant_id()
    [permanent] = seed(database_url, (make_wire_dict(tenant_id=tenant), "invalid"))

    nothing = invoke("dlq", "replay")
    assert nothing.exit_code == 2
    assert "an ID, a filter" in nothing.stderr
    assert "--all" in nothing.stderr

    refused = invoke("dlq", "replay", str(permanent), "--tenant", tenant)
    assert refused.exit_code == 2
    assert "--force" in refused.stderr

    bad_time = invoke("dlq", "list", "--since", "yesterday")
    assert bad_time.exit_code == 2
    assert "30m, 2h, 7d" in bad_time.stderr


def test_a_dry_run_replay_reports_and_audits_but_changes_nothing(database_url: str) -> None:
    tenant = new_tenant_id()
    [dead, expired] = seed(
        database_url,
        (make_wire_dict(tenant_id=tenant), "retries_exhausted"),
        (make_wire_dict(tenant_id=tenant), "expired"),
    )
    result = invoke("dlq", "replay", "--tenant", tenant, "--dry-run", "--json")
    assert result.exit_code == 1  # one was refused
    report = json.loads(result.stdout)
    assert report["summary"] == {"refused": 1, "would replay": 1}
    assert {o["dead_letter_id"]: o["action"] for o in report["outcomes"]} == {dead: "would replay", expired: "refused"}
    listed = as_json(invoke("dlq", "list", "--tenant", tenant, "--json"))["dead_letters"]
    assert {d["status"] for d in listed} == {"open"}
    trail = as_json(invoke("dlq", "audit", "--tenant", tenant, "--json"))
    assert {(e["dead_letter_id"], e["action"], e["dry_run"], e["actor"]) for e in trail["audit"]} == {
        (dead, "replay", True, "cli-tester"),
        (expired, "refuse", True, "cli-tester"),  # refusals are audited too, with why
    }
    [request] = trail["requests"]
    assert (request["actor"], request["dry_run"], request["force"], request["tenant_id"]) == (
        "cli-tester",
        True,
        False,
        tenant,
    )
    assert request["outcome"] == "refused: 1, would replay: 1"


def test_a_bulk_replay_shows_its_progress_as_plain_lines_when_not_on_a_terminal(database_url: str) -> None:
    tenant = new_tenant_id()
    ids = seed(database_url, *[(make_wire_dict(tenant_id=tenant), "retries_exhausted") for _ in range(3)])
    bulk = invoke("dlq", "replay", "--tenant", tenant, "--dry-run")
    assert bulk.exit_code == 0, bulk.output
    progress = [line for line in bulk.stderr.splitlines() if line.startswith("replaying")]
    assert progress[:4] == [
        "replaying (dry run) ...",
        "replaying (dry run): 1/3 (33%)",
        "replaying (dry run): 2/3 (66%)",
        "replaying (dry run): 3/3 (100%)",
    ]
    assert progress[4].startswith("replaying (dry run): done in ")
    assert "replaying" not in bulk.stdout  # stdout keeps the report alone

    one = invoke("dlq", "replay", str(ids[0]), "--dry-run")
    assert one.exit_code == 0, one.output
    assert "replaying" not in one.stderr  # one dead letter: nothing to watch
    scripted = invoke("dlq", "replay", "--tenant", tenant, "--dry-run", "--json")
    assert "replaying" not in scripted.stderr


def test_discard_needs_a_reason_marks_it_and_shows_in_the_audit(database_url: str) -> None:
    tenant = new_tenant_id()
    [dead] = seed(database_url, (make_wire_dict(tenant_id=tenant), "permanent_failure"))
    missing = invoke("dlq", "discard", str(dead))
    assert missing.exit_code == 2
    assert "--reason" in missing.output

    done = as_json(invoke("dlq", "discard", str(dead), "--reason", "paid by phone", "--actor", "ops", "--json"))
    assert done == {"dead_letter_id": dead, "status": "discarded", "actor": "ops", "reason": "paid by phone"}
    [entry] = as_json(invoke("dlq", "audit", "--id", str(dead), "--json"))["audit"]
    assert (entry["action"], entry["actor"], entry["why"], entry["dry_run"]) == (
        "discard",
        "ops",
        "paid by phone",
        False,
    )
    assert "discard" in invoke("dlq", "audit", "--tenant", tenant).stdout


def test_the_audit_masks_an_operators_note_as_the_trace_does(database_url: str) -> None:
    """An account number typed into a note (`--why`, a discard's `--reason`): the audit trail showed it in full
    while `remit trace` masked it; both mask it now, in the table, JSON and CSV alike."""
    tenant = new_tenant_id()
    wire = make_wire_dict(tenant_id=tenant)
    [replayed, discarded] = seed(
        database_url, (make_wire_dict(tenant_id=tenant), "retries_exhausted"), (wire, "invalid")
    )
    note = "customer 987654321 called; account 123456789 reopened"
    masked = "customer ******321 called; account ******789 reopened"
    assert invoke("dlq", "replay", str(replayed), "--dry-run", "--why", note).exit_code == 0
    assert invoke("dlq", "discard", str(discarded), "--reason", note).exit_code == 0

    trail = as_json(invoke("dlq", "audit", "--tenant", tenant, "--json"))
    assert [e["why"] for e in trail["audit"]] == [masked, masked]
    assert [r["why"] for r in trail["requests"]] == [masked]
    assert [e["why"] for e in as_json(invoke("dlq", "show", str(discarded), "--json"))["audit"]] == [masked]
    shown = invoke("dlq", "audit", "--tenant", tenant, "--format", "csv").stdout + invoke("dlq", "audit").stdout
    assert "******789" in shown
    assert "123456789" not in shown
    assert "987654321" not in shown
    traced = asyncio.run(_trace(database_url, str(wire["message_id"]), tenant))
    assert [e.details["why"] for e in traced.events if e.details.get("why")] == [masked]  # the same words


async def _trace(database_url: str, message_id: str, tenant: str) -> PaymentTrace:
    engine = make_engine(database_url, pool_size=1)
    try:
        return await trace_payment(uow_factory_for(engine), PaymentQuery(message_id, None), tenant)
    finally:
        await engine.dispose()


def test_every_command_has_an_example_in_its_help() -> None:
    for command in ("list", "show", "stats", "replay", "discard", "audit"):
        result = invoke("dlq", command, "--help")
        assert result.exit_code == 0
        assert f"remit dlq {command}" in result.stdout, command
    assert "remit purge" in invoke("purge", "--help").stdout


def test_purge_refuses_a_retention_shorter_than_ttl_plus_delay_plus_window() -> None:
    result = invoke("purge", "--days", "2", "--dry-run")
    assert result.exit_code == 2
    assert "Use at least" in result.stderr
    report = as_json(invoke("purge", "--dry-run", "--json"))
    kinds = {"processed_messages", "delivery_attempts", "dead_letters", "transfer_key_generations", "deleted_tenants"}
    assert set(report["deleted"]) == kinds


def test_the_commands_run_as_real_processes(database_url: str) -> None:
    tenant = new_tenant_id()
    [dead] = seed(database_url, (make_wire_dict(tenant_id=tenant), "retries_exhausted"))
    env = {"REMIT_DATABASE_URL": database_url, "PATH": "/usr/bin:/bin", "USER": "smoke"}
    dlq = "from app.cli.dlq import dlq_app; dlq_app()"
    listed = subprocess.run(
        [sys.executable, "-c", dlq, "list", "--tenant", tenant, "--json"], cwd=ROOT, env=env, capture_output=True
    )
    assert listed.returncode == 0, listed.stderr
    assert [d["dead_letter_id"] for d in json.loads(listed.stdout)["dead_letters"]] == [dead]
    purge = "import typer; from app.cli.purge import purge_command; typer.run(purge_command)"
    dry = subprocess.run([sys.executable, "-c", purge, "--dry-run"], cwd=ROOT, env=env, capture_output=True)
    assert dry.returncode == 0, dry.stderr
    assert b"would delete" in dry.stdout


def test_a_filter_naming_an_unknown_reason_tenant_or_batch_is_an_error_with_the_known_values(
    database_url: str,
) -> None:
    tenant = new_tenant_id()
    wire = make_wire_dict(tenant_id=tenant)
    batch = wire["correlation_id"]  # published directly: no batches row knows it, its dead letter does
    seed(database_url, (wire, "retries_exhausted"))
    known = as_json(
        invoke("dlq", "list", "--tenant", tenant, "--batch", batch, "--reason", "retries_exhausted", "--json")
    )
    assert len(known["dead_letters"]) == 1

    reason = invoke("dlq", "list", "--reason", "retries_exhaustd")
    assert reason.exit_code == 2, reason.output
    assert "--reason 'retries_exhaustd' is not a dead-letter reason" in reason.stderr
    assert "did you mean 'retries_exhausted'?" in reason.stderr
    assert "account_closed" in reason.stderr  # the known values are listed

    typo = tenant[:-1] + ("x" if tenant[-1] != "x" else "y")
    for command in (("list",), ("stats",), ("audit",), ("replay", "--all", "--dry-run")):
        wrong = invoke("dlq", *command, "--tenant", typo)
        assert wrong.exit_code == 2, (command, wrong.output)
        assert f"--tenant {typo!r} is not a tenant; did you mean" in wrong.stderr, command
        assert repr(tenant) in wrong.stderr, command

    other = invoke("dlq", "list", "--tenant", tenant, "--batch", batch + "9")
    assert other.exit_code == 2, other.output
    assert f"--batch {batch + '9'!r} is not a batch of tenant {tenant}; did you mean {batch!r}?" in other.stderr
    replay = invoke("dlq", "replay", "--tenant", tenant, "--batch", batch + "9", "--dry-run")
    assert replay.exit_code == 2, replay.output
    assert "is not a batch of tenant" in replay.stderr
