"""A batch's status report (pain.002, CSV, JSON) on the real services: per original transaction, with the
original references, valid against the official XSD, scoped to the batch's tenant; and, round trip, a
pain.001 of random payments (some that remit must reject) submitted, relayed and consumed: the pain.002
says ACSC for every payment booked and RJCT with the right reason code for every rejected one."""

import csv
import io
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from aio_pika.abc import AbstractChannel
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from lxml import etree
from sqlalchemy import func, select

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.reporting.status_report import ReportChoice, write_batch_report
from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.tables import ledger
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, bearer, tenant_key
from tests.utils.bankfile_writers import PAIN_001_03, PAIN_001_09, Tx, pain001
from tests.utils.pain002 import read_pain002, xsd_errors
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


@pytest.fixture
async def app_uow(settings: Settings) -> AsyncIterator[UnitOfWorkFactory]:
    engine = make_engine(settings.database_url, pool_size=2)
    yield uow_factory_for(engine)
    await engine.dispose()


@pytest.fixture
def relay(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    process = ServiceProcess.relay(service_env.env(), logs_dir / "relay.log")
    yield process
    process.stop()


async def test_the_report_is_the_batch_tenants_in_every_form(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, app_uow: UnitOfWorkFactory, settings: Settings
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    batch = await submit_batch(SubmitBatch(a, EXAMPLES / "acme_20250501.pain.001.001.09.xml"), app_uow, settings)
    url = f"/v1/batches/{batch.correlation_id}/status-report"
    as_a = bearer(await tenant_key(uow_factory, a))

    xml = await client.get(url, headers=as_a)  # pain.002: the version that answers a pain.001.001.09
    assert xml.status_code == 200, xml.text
    assert xml.headers["content-type"].startswith("application/xml")
    assert f'filename="{batch.correlation_id}.pain.002.001.10.xml"' in xml.headers["content-disposition"]
    assert xsd_errors(xml.content, "pain.002.001.10") == []
    report = read_pain002(xml.content)
    assert (report.original_message_id, report.group_status, report.per_status) == (
        "ACME-20250501-0001",
        "PDNG",  # nothing consumes in this test: every accepted payment is pending
        {"PDNG": 35, "RJCT": 7},
    )
    assert report.transactions[0] == ("ACME-PMT-20250501-OPS", "ACME-I-00001", "ACME-INV-00001", "PDNG", None)
    rejected = {tx[2]: tx[4] for tx in report.transactions if tx[3] == "RJCT"}
    assert rejected == {
        "ACME-INV-90001": "AC01",  # IBAN
        "ACME-INV-90002": "AC01",  # BIC only
        "ACME-INV-00004": "AM05",  # the repeated EndToEndId
        "ACME-INV-90003": "AC01",  # another clearing system
        "ACME-INV-90004": "CH20",  # 1250.005 AUD
        "ACME-INV-90005": "CH16",  # EqvtAmt
        "ACME-INV-90006": "AC01",  # account digits
    }

    older = await client.get(url + "?format=pain.002.001.03", headers=as_a)
    assert xsd_errors(older.content, "pain.002.001.03") == []
    rows = list(csv.DictReader(io.StringIO((await client.get(url + "?format=csv", headers=as_a)).text)))
    assert [r["level"] for r in rows] == ["group"] + ["transaction"] * 42
    assert rows[1]["instruction_id"] == "ACME-I-00001"
    document = (await client.get(url + "?format=json", headers=as_a)).json()
    assert (document["original_count"], document["original_control_sum"]) == (42, "546670.965")

    assert (await client.get(url, headers=bearer(await tenant_key(uow_factory, b)))).status_code == 404
    assert (await client.get(url, headers=bearer(await admin_key(uow_factory)))).status_code == 200
    unknown = await client.get(url + "?format=mt940", headers=as_a)
    assert unknown.status_code == 422
    assert "pain.002, pain.002.001.10, pain.002.001.03, csv, json" in unknown.json()["detail"]


async def test_a_csv_batch_is_reported_under_its_batch_id(
    uow_factory: UnitOfWorkFactory, app_uow: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    good, bad = payment_row(1), payment_row(2, currency="ABC", payment_reference="")
    batch = await submit_batch(SubmitBatch(tenant, write_csv(tmp_path / "b.csv", [good, bad])), app_uow, settings)
    sink = io.BytesIO()
    await write_batch_report(app_uow, tenant, batch.correlation_id, ReportChoice.PAIN_002, sink, datetime.now(UTC))
    assert xsd_errors(sink.getvalue(), "pain.002.001.10") == []
    report = read_pain002(sink.getvalue())
    short_id = batch.correlation_id.removeprefix(f"bulk_{tenant}_")  # ISO ids are at most 35 characters
    assert report.original_message_id == (batch.correlation_id if len(batch.correlation_id) <= 35 else short_id)
    assert [tx[2:] for tx in report.transactions] == [
        (good["payment_reference"], "PDNG", None),
        ("NOTPROVIDED", "RJCT", "CH16"),  # no reference to repeat: ISO's word for it, and the row in AddtlInf
    ]
    assert b"row 3: " in sink.getvalue()


async def test_a_long_reason_reaches_the_pain002_whole_words_at_a_time(
    uow_factory: UnitOfWorkFactory, app_uow: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    """What ingress said of a row with several faults, longer than one AddtlInf: cut between words, never inside."""
    tenant = await fresh_tenant(uow_factory)
    faults = {"currency": "ABC", "creditor_account": "12", "debtor_bsb": "01-2345"}
    path = write_csv(tmp_path / "faults.csv", [payment_row(1), payment_row(2, **faults)])
    batch = await submit_batch(SubmitBatch(tenant, path), app_uow, settings)
    sinks = {choice: io.BytesIO() for choice in (ReportChoice.PAIN_002_10, ReportChoice.PAIN_002_03, ReportChoice.CSV)}
    for choice, sink in sinks.items():
        await write_batch_report(app_uow, tenant, batch.correlation_id, choice, sink, datetime.now(UTC))
    [row] = [r for r in csv.DictReader(io.StringIO(sinks[ReportChoice.CSV].getvalue().decode())) if r["detail"]]
    assert 105 < len(row["detail"]) <= 3 * 105, row["detail"]  # the whole reason, as the CSV form has it
    for choice in (ReportChoice.PAIN_002_10, ReportChoice.PAIN_002_03):
        data = sinks[choice].getvalue()
        assert xsd_errors(data, choice.value) == []
        parts = [str(t) for t in etree.fromstring(data).xpath("//*[local-name()='AddtlInf']/text()")]
        assert len(parts) > 1
        assert " ".join(parts) == row["detail"]


@dataclass(frozen=True)
class Payment:
    kind: str  # "valid" or what makes remit reject it
    cents: int


KINDS = {  # what remit must say of each kind: (TxSts, reason)
    "valid": ("ACSC", None),
    "iban": ("RJCT", "AC01"),
    "bic_only": ("RJCT", "AC01"),
    "account_digits": ("RJCT", "AC01"),
    "finer_than_cents": ("RJCT", "CH20"),
    "over_limit": ("RJCT", "AM02"),
    "not_provided": ("RJCT", "CH16"),
    "duplicate": ("RJCT", "AM05"),
}
payments = st.lists(
    st.builds(Payment, st.sampled_from(sorted(KINDS)), st.integers(1, 100_000_000)), min_size=1, max_size=12
)


def _tx(n: int, p: Payment, first_reference: str, version: str) -> Tx:
    amount = str(Decimal(p.cents).scaleb(-2))
    reference = f"E2E-{n:04d}"
    account = f"{10_000_000 + n}"
    if p.kind == "iban":
        return Tx(reference, amount, creditor_account_xml="<Id><IBAN>DE89370400440532013000</IBAN></Id>")
    if p.kind == "bic_only":
        bic = "BIC" if version == PAIN_001_03 else "BICFI"  # the element's name in each version
        return Tx(reference, amount, creditor_agent_xml=f"<FinInstnId><{bic}>WPACAU2SXXX</{bic}></FinInstnId>")
    if p.kind == "account_digits":
        return Tx(reference, amount, creditor_account="12AB5678")
    if p.kind == "finer_than_cents":
        return Tx(reference, amount + "5", creditor_account=account)
    if p.kind == "over_limit":
        return Tx(reference, str(Decimal(100_000_000 + p.cents).scaleb(-2)), creditor_account=account)
    if p.kind == "not_provided":
        return Tx("NOTPROVIDED", amount, creditor_account=account)
    if p.kind == "duplicate":
        return Tx(first_reference, amount, creditor_account=account)
    return Tx(reference, amount, creditor_account=account, instruction_id=f"I-{n}")


@hsettings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=payments, version=st.sampled_from([PAIN_001_09, PAIN_001_03]))
async def test_round_trip_pain001_in_pain002_out(
    sent: list[Payment],
    version: str,
    uow_factory: UnitOfWorkFactory,
    app_uow: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    relay: ServiceProcess,
    tmp_path: Path,
) -> None:
    sent = [Payment("valid", sent[0].cents), *sent]  # a valid first: a duplicate repeats it, and a batch needs one
    txs = [_tx(n, p, "E2E-0000", version) for n, p in enumerate(sent)]
    path = tmp_path / "round-trip.xml"
    path.write_bytes(pain001(version, txs, message_id=f"RT-{datetime.now(UTC):%H%M%S%f}"))
    tenant = await fresh_tenant(uow_factory)
    batch = await submit_batch(SubmitBatch(tenant, path), app_uow, settings)
    valid = sum(p.kind == "valid" for p in sent)
    assert batch.accepted == valid

    async def all_booked() -> bool:
        async with uow_factory() as u:
            query = select(func.count()).where(ledger.c.correlation_id == batch.correlation_id)
            return bool((await u.connection.execute(query)).scalar_one() == valid)

    await eventually(all_booked, timeout=60)
    sink = io.BytesIO()
    written = await write_batch_report(
        app_uow, tenant, batch.correlation_id, ReportChoice.PAIN_002, sink, datetime.now(UTC)
    )
    form = "pain.002.001.03" if version == PAIN_001_03 else "pain.002.001.10"
    assert written.form.value == form
    assert xsd_errors(sink.getvalue(), form) == []
    report = read_pain002(sink.getvalue())
    assert [(tx.end_to_end_id, tx.instruction_id) for tx in txs] == [(t[2], t[1]) for t in report.transactions]
    assert [KINDS[p.kind] for p in sent] == [(t[3], t[4]) for t in report.transactions]
    assert report.group_status == ("ACSC" if valid == len(sent) else "PART")


def test_the_kinds_cover_every_rejection_code_remit_gives_at_ingress() -> None:
    ingress_codes = {
        "AC01",
        "AM02",
        "AM05",
        "CH16",
        "CH20",
    }  # invalid_account, over_limit, duplicate, invalid, precision
    assert {reason for _, reason in KINDS.values() if reason} == ingress_codes
