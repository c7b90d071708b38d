"""Which work queue a tenant's routing key is bound to. Moving a tenant binds the new queue first and
only then unbinds the old one, so no message is ever unroutable; what already sits in the old queue is
processed there (every work queue keeps its consumers), so nothing in flight is lost."""

from collections.abc import Iterable
from dataclasses import dataclass

from aio_pika.abc import AbstractConnection

from app.messaging.queues import ready_count
from app.messaging.topology import TIERS, Topology, declare_topology, declare_work_queue, routing_key
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.tenants import list_tenants


@dataclass(frozen=True, slots=True)
class Route:
    tenant_id: str
    tier: str
    dedicated: bool
    active: bool = True


async def apply_route(connection: AbstractConnection, topology: Topology, route: Route, *, declare: bool = True) -> str:
    """Bind the tenant's key to its queue (unless suspended) and unbind it everywhere else."""
    target = topology.queue_for(route.tenant_id, route.tier, route.dedicated)
    key = routing_key(route.tenant_id)
    channel = await connection.channel()
    try:
        if declare:  # idempotent; makes sure the exchange and the tier queues exist on a fresh broker
            await declare_topology(channel, topology)
        queue = await declare_work_queue(channel, topology, target)
        if route.active:
            await queue.bind(topology.exchange, routing_key=key)
        for tier in TIERS:
            if topology.tier_queue(tier) != target or not route.active:
                await (await channel.get_queue(topology.tier_queue(tier))).unbind(topology.exchange, key)
    finally:
        await channel.close()
    if target != topology.dedicated_queue(route.tenant_id) or not route.active:
        await _unbind_if_declared(connection, topology, topology.dedicated_queue(route.tenant_id), key)
    return target


async def apply_routes(connection: AbstractConnection, topology: Topology, routes: Iterable[Route]) -> None:
    first = True
    for route in routes:
        await apply_route(connection, topology, route, declare=first)
        first = False


async def route_every_tenant(uow: UnitOfWorkFactory, connection: AbstractConnection, topology: Topology) -> None:
    """Bind every tenant's key to its queue: a consumer that starts on a fresh broker routes everyone."""
    tenants = await list_tenants(uow)
    await apply_routes(connection, topology, (Route(t.tenant_id, t.tier, t.dedicated_queue) for t in tenants))


async def _unbind_if_declared(connection: AbstractConnection, topology: Topology, name: str, key: str) -> None:
    if await ready_count(connection, name) is None:
        return  # the tenant never had a dedicated queue
    channel = await connection.channel()
    try:
        await (await channel.get_queue(name, ensure=False)).unbind(topology.exchange, key)
    finally:
        await channel.close()
