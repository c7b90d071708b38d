"""Never trust a client-supplied tenant: a message whose tenant its publisher's identity does not vouch for is
quarantined (dead-lettered tenant_mismatch), filed under the tenant the identity decided, never processed."""

from app.messaging import headers
from app.tenancy.broker_users import broker_user
from tests.unit.consumer.harness import VHOST, Consumer, direct, relayed
from tests.utils.factories import make_message


def quarantined(consumer: Consumer) -> dict[str, object]:
    assert consumer.ledger() == []
    assert consumer.reasons() == ["tenant_mismatch"]
    [attempt] = consumer.attempts()
    assert attempt.error_type == "TenantMismatch"
    return dict(consumer.republisher.dead_lettered[0].headers)


async def test_a_header_tenant_other_than_the_bodys_is_quarantined(consumer: Consumer, db_tenants: list[str]) -> None:
    ours, theirs = db_tenants
    payment = make_message(tenant_id=theirs)

    assert await consumer.deliver(relayed(payment, headers={headers.TENANT: ours})) == [True]

    sent = quarantined(consumer)
    # The relay is trusted: its header names the tenant the message is filed under.
    assert sent[headers.IDENTITY_TENANT] == ours


async def test_a_tenants_own_user_publishing_for_another_tenant_is_quarantined_under_its_own_tenant(
    consumer: Consumer, db_tenants: list[str]
) -> None:
    attacker, victim = db_tenants
    payment = make_message(tenant_id=victim)
    forged = direct(
        payment, user_id=broker_user(attacker, VHOST), headers={headers.TENANT: victim, "remit-tenant": victim}
    )

    assert await consumer.deliver(forged) == [True]

    sent = quarantined(consumer)
    assert sent[headers.IDENTITY_TENANT] == attacker
    assert sent[headers.PUBLISHED_BY] == broker_user(attacker, VHOST)
    assert sent[headers.CLAIMS] == {"remit-tenant": victim}  # its own remit-* header, kept only as a claim
    [attempt] = consumer.attempts()
    assert attempt.tenant_id == attacker


async def test_a_message_without_user_id_is_quarantined(consumer: Consumer, tenant: str) -> None:
    assert await consumer.deliver(relayed(make_message(tenant_id=tenant), user_id=None)) == [True]

    sent = quarantined(consumer)
    assert headers.PUBLISHED_BY not in sent
    assert sent[headers.IDENTITY_TENANT] == tenant  # no login: the routing key RabbitMQ authorised decides


async def test_another_deployments_tenant_user_may_publish_for_no_tenant(consumer: Consumer, tenant: str) -> None:
    payment = make_message(tenant_id=tenant)

    assert await consumer.deliver(direct(payment, user_id=broker_user(tenant, "elsewhere"))) == [True]

    sent = quarantined(consumer)
    assert headers.IDENTITY_TENANT not in sent
