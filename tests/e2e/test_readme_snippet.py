"""The README's direct AMQP publishing program, run as it is printed there: an operator adds the tenant with
`remit tenants add`, the tenant runs the program with the login it printed, and the consumer books the
payment. If the README and the code disagree (a queue, a header, a field, the vhost), this goes red."""

import asyncio
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.cli import remit
from tests.utils.factories import new_tenant_id
from tests.utils.services import (
    MANAGEMENT_AUTH,
    MANAGEMENT_URL,
    ROOT,
    ServiceEnv,
    ServiceProcess,
    eventually,
    queue_depth,
)
from tests.utils.world import ledger_count

pytestmark = pytest.mark.e2e

README = ROOT / "README.md"
HEADING = "Publishing as a tenant, directly over AMQP"


def readme_program() -> str:
    """The first Python block after the paragraph that introduces it."""
    text = README.read_text()
    after = text[text.index(HEADING) :]
    match = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert match, f"no python block after {HEADING!r} in README.md"
    return match.group(1)


@pytest.fixture
def tenant(vhost: str) -> Iterator[str]:
    tenant_id = new_tenant_id()
    yield tenant_id
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
        client.delete(f"/api/users/tenant-{tenant_id}@{vhost}")


async def run_readme_program(service_env: ServiceEnv, vhost: str, tenant: str, tmp_path: Path) -> str:
    """Add the tenant as an operator does and run the README's program with the login it printed: the message_id."""
    code, out = await remit(service_env.env(COLUMNS="300"), "tenants", "add", tenant, "--name", "README Pty")
    assert code == 0, out
    login = re.search(r"RabbitMQ publisher: user (\S+) password (\S+) ", out)
    assert login, out
    assert login.group(1) == f"tenant-{tenant}@{vhost}"

    program = tmp_path / "publish.py"
    program.write_text(readme_program())
    env = {**os.environ, "TENANT": tenant, "AMQP_VHOST": vhost, "TENANT_PASSWORD": login.group(2)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(program), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output = (await asyncio.wait_for(process.communicate(), 60))[0].decode()
    assert process.returncode == 0, output
    published = re.fullmatch(r"published ([0-9a-f-]{36})\n", output)
    assert published, output
    return published.group(1)


async def test_the_readme_programs_payment_has_an_age_while_it_waits_in_its_queue(
    service_env: ServiceEnv, vhost: str, tenant: str, tmp_path: Path
) -> None:
    """The program stamps its message (the AMQP `timestamp`), so `remit queues list` tells how long it has waited
    (its `oldest` column, read from the head's timestamp: `?` when a message has none). No consumer runs."""
    await run_readme_program(service_env, vhost, tenant, tmp_path)

    async def counted() -> bool:  # the management API's figures are sampled every few seconds
        return queue_depth(vhost, "payments.work.basic") == 1

    await eventually(counted, timeout=30, poll=0.5)
    code, out = await remit(service_env.env(COLUMNS="300"), "queues", "list")
    assert code == 0, out
    [row] = [line for line in out.splitlines() if "payments.work.basic " in line]  # `remit tenants add`'s tier
    cells = [cell.strip() for cell in re.split(r"[│┃|]", row) if cell.strip()]
    assert cells[2] == "1", out  # ready
    assert re.fullmatch(r"\d+s", cells[-1]), out  # oldest: seconds old, not `?`


async def test_the_readme_program_publishes_a_payment_the_consumer_books(
    service_env: ServiceEnv,
    consumer: ServiceProcess,
    uow_factory: UnitOfWorkFactory,
    vhost: str,
    tenant: str,
    tmp_path: Path,
) -> None:
    await consumer.ready()
    message_id = await run_readme_program(service_env, vhost, tenant, tmp_path)

    async def booked() -> bool:
        return await ledger_count(uow_factory, message_id) == 1

    await eventually(booked, timeout=60)
