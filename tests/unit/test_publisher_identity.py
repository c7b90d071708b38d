"""Whose a delivery is: decided by what RabbitMQ vouches for (the validated user_id, the authorised
routing key), and by our own headers only when a trusted publisher sent them."""

import pytest

from app.messaging import headers
from app.tenancy.identity import Attribution, PublisherIdentity

SERVICE = "remit-service"
identity = PublisherIdentity(frozenset({SERVICE, "partner-gateway"}), "prod")
CLAIMING_WESTPAC = {headers.TENANT: "westpac", headers.IDENTITY_TENANT: "westpac"}


def test_a_tenants_own_user_decides_whatever_the_message_says() -> None:
    got = identity.attribute("tenant-anz@prod", "anz.payment", CLAIMING_WESTPAC)
    assert got == Attribution("anz", "login")


def test_a_trusted_publisher_names_the_tenant_in_our_header_first() -> None:
    both = {headers.TENANT: "westpac", headers.IDENTITY_TENANT: "anz"}
    assert identity.attribute(SERVICE, "westpac.payment", both) == Attribution("anz", "trusted")
    assert identity.attribute("partner-gateway", None, {headers.TENANT: "westpac"}) == Attribution("westpac", "trusted")
    assert identity.attribute(SERVICE, None, {headers.TENANT: "Not A Tenant!"}) == Attribution(None, "trusted")
    assert identity.attribute(SERVICE, None, {headers.TENANT: b"anz"}) == Attribution("anz", "trusted")


@pytest.mark.parametrize(
    ("routing_key", "tenant"),
    [
        ("anz.payment", "anz"),
        ("anz.anything.else", "anz"),
        ("anz", None),
        ("", None),
        (None, None),
        ("#.payment", None),
    ],
)
def test_without_user_id_the_routing_key_decides(routing_key: str | None, tenant: str | None) -> None:
    assert identity.attribute(None, routing_key, CLAIMING_WESTPAC) == Attribution(tenant, "routing_key")


@pytest.mark.parametrize("login", ["tenant-anz@staging", "tenant-anz", "guest", "tenant-@prod"])
def test_any_other_login_gets_no_tenant(login: str) -> None:
    assert identity.attribute(login, "anz.payment", CLAIMING_WESTPAC) == Attribution(None, "none")
