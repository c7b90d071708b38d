"""A misspelled `--tenant` or `--batch` of `remit status`, `report`, `trace` and `queues list/peek` (and the
`tenant` of `GET /v1/batches` and `GET /v1/payments/{id}`) is an error that names the value and the known
ones, never an empty table and exit 0; the known values offered are those of the caller's scope only."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

from app.cli.queues import queues_app
from app.cli.report import report
from app.cli.status import status
from app.cli.trace import trace
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings, get_settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, bearer, tenant_key
from tests.utils.outside_loop import seeded
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration

cli = typer.Typer()
cli.command("status")(status)
cli.command("report")(report)
cli.command("trace")(trace)
cli.add_typer(queues_app, name="queues")
runner = CliRunner()


@pytest.fixture
def cli_env(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REMIT_DATABASE_URL", database_url)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


async def two_tenants_with_a_batch_each(uow: UnitOfWorkFactory, tmp_path: Path) -> dict[str, str]:
    world = {}
    for name in ("a", "b"):
        tenant = await fresh_tenant(uow)
        batch = await submit_batch(
            SubmitBatch(tenant, write_csv(tmp_path / f"{name}.csv", [payment_row(1)])), uow, Settings()
        )
        world[name], world[f"batch_{name}"] = tenant, batch.correlation_id
    return world


def typo(value: str) -> str:
    return value[:-1] + ("x" if value[-1] != "x" else "y")


def refused(*args: str) -> Any:
    result = runner.invoke(cli, list(args))
    assert result.exit_code == 2, (args, result.output)
    return result.stderr


def test_the_cli_filters_name_the_known_values(cli_env: None, database_url: str, tmp_path: Path) -> None:
    w = seeded(database_url, lambda uow: two_tenants_with_a_batch_each(uow, tmp_path))
    a, b, batch_a, batch_b = w["a"], w["b"], w["batch_a"], w["batch_b"]

    for args in (
        ("status", "--tenant", typo(a)),
        ("trace", "PAY-ANY", "--tenant", typo(a)),
        ("report", batch_a, "--tenant", typo(a)),
        ("queues", "list", "--tenant", typo(a)),
        ("queues", "peek", "payments.work.basic", "--tenant", typo(a)),
    ):
        told = refused(*args)
        assert f"--tenant '{typo(a)}' is not a tenant; did you mean '{a}'" in told, args

    told = refused("status", "--tenant", a, "--batch", typo(batch_a))
    assert f"--batch '{typo(batch_a)}' is not a batch of tenant {a}; did you mean '{batch_a}'" in told
    told = refused("report", typo(batch_a), "--tenant", a)
    assert f"did you mean '{batch_a}'" in told

    # Another tenant's batch is unknown in a tenant's scope, and never offered there.
    for args in (("status", "--tenant", b, "--batch", batch_a), ("report", batch_a, "--tenant", b)):
        told = refused(*args).replace(f"'{batch_a}' is not", "")
        assert batch_a not in told, args
        assert batch_b in told, args

    shown = runner.invoke(cli, ["status", "--tenant", a, "--batch", batch_a])
    assert shown.exit_code == 0, shown.output
    assert batch_a in shown.stdout


async def test_the_http_tenant_filters_name_the_known_tenants_to_an_admin(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    w = await two_tenants_with_a_batch_each(uow_factory, tmp_path)
    as_admin = bearer(await admin_key(uow_factory))
    for path in (f"/v1/batches?tenant={typo(w['a'])}", f"/v1/payments/PAY-ANY?tenant={typo(w['a'])}"):
        answer = await client.get(path, headers=as_admin)
        assert answer.status_code == 422, (path, answer.text)
        assert f"tenant '{typo(w['a'])}' is not a tenant; did you mean '{w['a']}'" in answer.json()["detail"]
        assert "--tenant" not in answer.json()["detail"]

    # A tenant's key is held to its own tenant whatever it names: nothing to refuse, nothing of a's shown.
    as_b = bearer(await tenant_key(uow_factory, w["b"]))
    mine = await client.get(f"/v1/batches?tenant={typo(w['a'])}", headers=as_b)
    assert mine.status_code == 200, mine.text
    assert w["batch_a"] not in mine.text
    assert w["batch_b"] in mine.text
