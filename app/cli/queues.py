"""`remit queues`: remit's queues live (depths, rates, oldest message, tenants in flight), a look at what
waits in one without taking it, and the safe deletion of a dedicated queue."""

import dataclasses
from datetime import datetime

import typer

from app.bootstrap import Operator, Ports, publisher_identity, queue_watch
from app.cli.common import console, friendly_errors, run, with_operator, with_uow
from app.cli.listing import FORMAT, JSON, Format, chosen, print_csv, print_json, print_table
from app.cli.queue_views import PEEK_FIELDS, overview_csv, overview_tables, peek_records, peek_table
from app.errors import UsageError
from app.known_filters import check_known
from app.observability.live_queues import kind_of
from app.observability.peek import Peeked, PeekRequest, peek_queue
from app.observability.queue_overview import QueueOverview, queue_overview
from app.settings import get_settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.queues import delete_when_drained

queues_app = typer.Typer(
    help="Work, delay and dead-letter queues: live figures, a look inside, safe deletion.", no_args_is_help=True
)


async def _overview(tenant: str | None) -> QueueOverview:
    watch = queue_watch(get_settings(), Ports())

    async def overview(uow: UnitOfWorkFactory) -> QueueOverview:
        await check_known(uow, tenant, dash="--")
        return await queue_overview(watch, uow, tenant, _now())

    return await with_uow(overview)


@queues_app.command("list")
@friendly_errors
def list_queues(
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's queues and in-flight count."),
    fmt: Format = FORMAT,
    as_json: bool = JSON,
) -> None:
    """remit's queues: ready, unacked, consumers, messages in and out per second, the oldest message's age;
    and each tenant's payments in flight against its limit.

    --format csv gives one table: `record` is `queue` or `tenant`.

    Example: remit queues list            remit queues list --tenant anz --format json
    """
    fmt = chosen(fmt, as_json)
    overview = run(_overview(tenant))
    if fmt is Format.JSON:
        print_json(console, dataclasses.asdict(overview))
    elif fmt is Format.CSV:
        print_csv(console, *overview_csv(overview))
    else:
        print_table(console, *overview_tables(overview))


async def _peek(request: PeekRequest) -> Peeked:
    settings = get_settings()
    watch = queue_watch(settings, Ports())
    if kind_of(watch.topology, request.queue) is None:
        raise UsageError(f"{request.queue!r} is not one of remit's queues (see `remit queues list`)")
    identity = publisher_identity(settings)

    async def peek(uow: UnitOfWorkFactory) -> Peeked:
        await check_known(uow, request.tenant, dash="--")
        return await peek_queue(watch.peek, identity, uow, watch.vhost, request, _now())

    return await with_uow(peek)


@queues_app.command("peek")
@friendly_errors
def peek(
    queue: str = typer.Argument(..., help="The queue, e.g. payments.work.basic."),
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's messages, by publisher identity."),
    limit: int = typer.Option(20, "--limit", min=1, max=1000, help="Show at most this many messages."),
    scan: int = typer.Option(200, "--scan", min=1, max=2000, help="Read at most this many from the head."),
    fmt: Format = FORMAT,
    as_json: bool = JSON,
) -> None:
    """Show messages waiting in a queue without taking them: RabbitMQ's own peek, so nothing is delivered,
    order and delivery counts stay as they were. Tenants are told apart as the consumer tells them (the
    publisher's validated login, a trusted publisher's headers, the routing key), never by the body.
    Account numbers are masked. About 0.5 s per position read (operators only: it needs the broker's CLI).

    Example: remit queues peek payments.work.basic --tenant anz --limit 20
    """
    fmt = chosen(fmt, as_json)
    peeked = run(_peek(PeekRequest(queue, tenant, limit, scan)))
    if fmt is Format.JSON:
        print_json(console, dataclasses.asdict(peeked))
    elif fmt is Format.CSV:
        print_csv(console, PEEK_FIELDS, peek_records(peeked))
    else:
        print_table(console, peek_table(queue, tenant, peeked))


def _now() -> datetime:
    return datetime.now().astimezone()


async def _delete_when_drained(op: Operator, tenant: str, timeout: float) -> str:
    name = op.broker.topology.dedicated_queue(tenant)
    if (await op.tenants.show(tenant)).dedicated_queue:
        raise UsageError(f"{tenant} still uses {name}: run `remit tenants dedicate {tenant} --off` first")
    await delete_when_drained(op.broker.connection, op.management, op.vhost, name, timeout)
    return name


@queues_app.command("delete")
@friendly_errors
def delete(
    tenant: str = typer.Argument(..., help="The tenant whose dedicated queue to remove."),
    timeout: float = typer.Option(300, help="Seconds to wait for the queue to drain."),
) -> None:
    """Delete a tenant's dedicated queue, safely: only after the tenant was moved back to its tier
    (`remit tenants dedicate T --off`), and only once the queue is seen empty twice, ready and unacked.

    Example: remit tenants dedicate anz --off && remit queues delete anz
    """
    name = run(with_operator(lambda op: _delete_when_drained(op, tenant, timeout)))
    console.print(f"{name} drained and deleted")
