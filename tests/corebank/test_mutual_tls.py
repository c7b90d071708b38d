"""Mutual TLS in front of the token, on the real processes, with certificates the test makes (openssl): a core
started with a server certificate and a client CA refuses, in the TLS handshake, a client without a certificate
that CA signed, whatever token it sends; a client with one still needs its token; remit's consumer, given the
CA, its certificate and its key, books over it."""

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from aio_pika.abc import AbstractChannel

from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.corebank.test_remit_consumer import consumer_on
from tests.utils.core_world import core_keys, dead_letters_left, remit_records, wire_for
from tests.utils.corebank import CoreBank, create_corebank_database, open_account, start_corebank, wait_ready
from tests.utils.services import ServiceEnv, drop_database, eventually
from tests.utils.tls import MutualTls, authority, mutual_tls
from tests.utils.world import fresh_tenant, send_payment

pytestmark = pytest.mark.integration


@pytest.fixture
async def tls_core(tmp_path: Path) -> AsyncIterator[tuple[CoreBank, MutualTls]]:
    certificates = mutual_tls(tmp_path / "tls")
    database_url = await create_corebank_database()
    core = start_corebank(database_url, tmp_path / "core.log", faults=False, tls=certificates)
    try:
        await wait_ready(core)
        yield core, certificates
    finally:
        core.process.stop()
        await drop_database(database_url)


async def test_a_client_without_a_certificate_the_core_trusts_is_refused_before_http(
    tls_core: tuple[CoreBank, MutualTls], tmp_path: Path
) -> None:
    core, certificates = tls_core
    only_the_server = ssl.create_default_context(cafile=str(certificates.ca.cert))
    stranger = authority(tmp_path / "other", "other").issue("mallory")
    attempts = {
        "no client certificate": only_the_server,
        "a certificate another CA signed": certificates.client_context(stranger),
    }
    for verify in attempts.values():  # with remit's token: the handshake fails, not one byte of HTTP answered
        async with httpx.AsyncClient(base_url=core.url, headers=core.headers, verify=verify, timeout=10) as client:
            with pytest.raises(httpx.TransportError):
                await client.get("/journal")
            with pytest.raises(httpx.TransportError):
                await client.get("/readyz")
    async with httpx.AsyncClient(base_url=core.url.replace("https", "http"), timeout=10) as plain:
        with pytest.raises(httpx.TransportError):
            await plain.get("/readyz")

    async with httpx.AsyncClient(base_url=core.url, verify=certificates.client_context(), timeout=10) as client:
        assert (await client.get("/journal")).status_code == 401  # the certificate alone is not a credential
        assert (await client.get("/journal", headers=core.headers)).status_code == 200


async def test_remit_books_over_mutual_tls(
    tls_core: tuple[CoreBank, MutualTls],
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    core, _ = tls_core
    async with core.client(timeout=10) as client:
        debtor, creditor = await open_account(client, 100_000), await open_account(client)
    tenant = await fresh_tenant(uow_factory)
    wires = [wire_for(tenant, debtor, creditor, 100 + i) for i in range(5)]
    consumer = consumer_on(core, service_env, logs_dir / "consumer.log")  # the CA, remit's certificate and key
    try:
        for wire in wires:
            await send_payment(settings, wire)

        async def booked() -> bool:
            return len(await remit_records(uow_factory, tenant)) == len(wires)

        await eventually(booked, timeout=60)
    finally:
        consumer.stop()
    keys = await core_keys(core.database_url)
    records = await remit_records(uow_factory, tenant)
    ours = {k: v for k, v in keys.items() if k.startswith(f"{tenant}:")}
    assert {f"{tenant}:{r.message_id}": ("booked", r.core_transfer_id) for r in records} == ours
    assert await dead_letters_left(channel, settings) == 0
