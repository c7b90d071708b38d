"""A tenant publishing directly over AMQP is held to the limits ingress holds its batches to.

A delivery whose `user_id` is a tenant's own RabbitMQ user never passed ingress, so before it is read it
is admitted or refused, in arrival order per tenant:
- a suspended tenant's publishes are refused (`tenant_suspended`);
- in flight: its payments accepted at ingress and not finished (counted as ingress counts them, at most
  `refresh_seconds` old) plus its direct payments this process is working on; past `max_in_flight`
  payments, or past `max_bytes_in_flight` bytes of bodies (the byte quota), the rest are refused
  (`over_limit`);
- publish rate: the same two token buckets ingress draws on, a payment and its body's bytes each (an
  oversize or malformed publish is charged too); what does not fit is refused (`over_limit`).
A refused publish is dead-lettered at once with the reason, so nothing is lost and nothing waits in a
shared queue in front of other tenants. What remit published itself (the relay, retries, replays) was
admitted at ingress and is never charged again.
"""

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from app.consumer.delivery import Delivery
from app.errors import MessageFailure, OverTenantLimit, TenantSuspended
from app.storage.ports.tenants import InFlight, TenantLimits, Tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.identity import PublisherIdentity
from app.tenancy.limits import Rates, take_in_order

Refusal = MessageFailure | None


@dataclass(frozen=True, slots=True)
class Admitted:
    refusals: list[Refusal]  # one per delivery: None when admitted (or not a direct publish)
    held: Counter[str]  # direct payments admitted per tenant: in flight until released
    held_bytes: Counter[str]  # and their bodies' bytes


class DirectAdmission:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        publishers: PublisherIdentity,
        refresh_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._uow_factory = uow_factory
        self._publishers = publishers
        self._refresh = refresh_seconds
        self._clock = clock
        self._held: Counter[str] = Counter()
        self._held_bytes: Counter[str] = Counter()
        self._ingress: dict[str, tuple[float, InFlight]] = {}  # tenant -> (counted at, accepted in flight)

    def tenant_of(self, delivery: Delivery) -> str | None:
        """The tenant whose own user published the delivery; None for remit's own publishes."""
        return self._publishers.tenant_of(delivery.user_id)

    async def admit(
        self, deliveries: Sequence[Delivery], tenants: Mapping[str, TenantLimits], now: datetime
    ) -> Admitted:
        direct: dict[str, list[int]] = defaultdict(list)
        for i, delivery in enumerate(deliveries):
            tenant = self.tenant_of(delivery)
            if tenant is not None:
                direct[tenant].append(i)
        admitted = Admitted([None] * len(deliveries), Counter(), Counter())
        try:
            for tenant, indexes in direct.items():
                limits = tenants.get(tenant)
                if limits is None:
                    continue  # no such tenant: the committer refuses its payments as unknown_tenant
                verdicts = await self._verdicts(limits, [deliveries[i].size for i in indexes], now, admitted)
                for i, verdict in zip(indexes, verdicts, strict=True):
                    admitted.refusals[i] = verdict
        except BaseException:
            self.release(admitted)
            raise
        return admitted

    def release(self, admitted: Admitted) -> None:
        """The admitted direct payments are settled: no longer in flight here."""
        self._held -= admitted.held
        self._held_bytes -= admitted.held_bytes

    async def _verdicts(
        self, limits: TenantLimits, sizes: list[int], now: datetime, admitted: Admitted
    ) -> list[Refusal]:
        tenant = limits.tenant_id
        if not limits.active:
            suspended = TenantSuspended(f"tenant {tenant!r} is {limits.status}: its own publishes are not processed")
            return [suspended] * len(sizes)
        async with self._uow_factory(tenant) as uow:
            ingress = await self._ingress_in_flight(uow.tenants, tenant, now)
            in_flight = InFlight(ingress.payments + self._held[tenant], ingress.bytes + self._held_bytes[tenant])
            room = max(limits.max_in_flight - in_flight.payments, 0)
            candidates = _fitting(sizes[:room], limits.max_bytes_in_flight - in_flight.bytes)
            # Held before the next await, so that a batch of the same tenant in another worker counts them.
            self._hold(admitted, tenant, candidates)
            taken = await take_in_order(uow.rate_buckets, Rates.of(limits), candidates, now) if candidates else 0
            await uow.commit()
        self._unhold(admitted, tenant, candidates[taken:])  # the rate refused the rest
        over_rate = OverTenantLimit(
            f"tenant {tenant!r} is over its publish rate ({limits.publish_rate_per_second} payments/s, "
            f"{limits.publish_bytes_per_second} bytes/s): publish more slowly"
        )
        verdicts: list[Refusal] = [None] * taken
        verdicts += [over_rate] * (len(candidates) - taken)
        return verdicts + [_over_in_flight(limits, in_flight, len(candidates) < room)] * (len(sizes) - len(candidates))

    def _hold(self, admitted: Admitted, tenant: str, sizes: list[int]) -> None:
        admitted.held[tenant] += len(sizes)
        admitted.held_bytes[tenant] += sum(sizes)
        self._held[tenant] += len(sizes)
        self._held_bytes[tenant] += sum(sizes)

    def _unhold(self, admitted: Admitted, tenant: str, sizes: list[int]) -> None:
        admitted.held[tenant] -= len(sizes)
        admitted.held_bytes[tenant] -= sum(sizes)
        self._held[tenant] -= len(sizes)
        self._held_bytes[tenant] -= sum(sizes)

    async def _ingress_in_flight(self, tenants: Tenants, tenant: str, now: datetime) -> InFlight:
        counted = self._ingress.get(tenant)
        if counted is None or self._clock() - counted[0] >= self._refresh:
            counted = (self._clock(), await tenants.in_flight(tenant, now))
            self._ingress[tenant] = counted
        return counted[1]


def _fitting(sizes: list[int], byte_room: int) -> list[int]:
    """The publishes that fit in the byte quota's room, in order, up to the first that does not."""
    for n, size in enumerate(sizes):
        byte_room -= size
        if byte_room < 0:
            return sizes[:n]
    return sizes


def _over_in_flight(limits: TenantLimits, in_flight: InFlight, by_bytes: bool) -> OverTenantLimit:
    tenant = limits.tenant_id
    if by_bytes:
        return OverTenantLimit(
            f"tenant {tenant!r} has {in_flight.bytes} bytes of payments in flight, its quota is "
            f"{limits.max_bytes_in_flight} bytes: publish again when some have been processed"
        )
    return OverTenantLimit(
        f"tenant {tenant!r} has {in_flight.payments} payments in flight, its limit is {limits.max_in_flight}: "
        "publish again when some have been processed"
    )
