"""`remit submit` and `remit report` as an operator runs them: every format by content, --format to name one,
an error that lists the formats remit reads, a large file accepted whole, and the status report written."""

from pathlib import Path

import pytest

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.bankfile_samples import write_sample
from tests.utils.cli import remit
from tests.utils.pain002 import read_pain002, xsd_errors
from tests.utils.services import ServiceEnv
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).parents[2] / "examples"
FORMATS = "csv, jsonl, pain.001.001.09, pain.001.001.03, aba"


async def test_a_pain001_is_submitted_and_its_pain002_written(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    code, out = await remit(
        service_env.env(COLUMNS="200"),
        "submit",
        str(EXAMPLES / "globex_20250501.pain.001.001.03.xml"),
        "--tenant",
        tenant,
    )
    assert code == 1, out  # rows were rejected; the others are accepted
    assert "(pain.001.001.03): 22 accepted, 3 rejected" in out
    batch = out.split("batch ", 1)[1].split()[0]

    report = tmp_path / "globex.pain.002.xml"
    code, out = await remit(service_env.env(COLUMNS="200"), "report", batch, "--out", str(report))
    assert code == 0, out
    assert "pain.002.001.03, group status PDNG (PDNG 22, RJCT 3)" in out
    assert xsd_errors(report.read_bytes(), "pain.002.001.03") == []
    assert read_pain002(report.read_bytes()).original_message_id == "GLX-20250501-PAY-001"

    someone_else = await fresh_tenant(uow_factory)
    code, out = await remit(
        service_env.env(COLUMNS="200"), "report", batch, "--tenant", someone_else, "--out", str(tmp_path / "x")
    )
    assert (
        code,
        f"{batch!r} is not a batch of tenant {someone_else}" in " ".join(out.split()),
        (tmp_path / "x").exists(),
    ) == (2, True, False), out


async def test_the_format_is_told_by_content_or_named(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    named_like_xml = write_csv(tmp_path / "payments.xml", [payment_row(1)])  # the name says nothing
    code, out = await remit(service_env.env(COLUMNS="200"), "submit", str(named_like_xml), "--tenant", tenant)
    assert (code, "(csv): 1 accepted, 0 rejected" in out) == (0, True), out

    letter = tmp_path / "letter.txt"
    letter.write_text("Dear bank\nplease pay\n")
    code, out = await remit(service_env.env(), "submit", str(letter), "--tenant", tenant)
    assert code == 2
    assert f"cannot tell the format of letter.txt from its content: remit reads {FORMATS}" in " ".join(out.split())
    code, out = await remit(service_env.env(), "submit", str(letter), "--tenant", tenant, "--format", "mt940")
    assert code == 2
    assert f"unknown format 'mt940': remit reads {FORMATS}" in " ".join(out.split())


async def test_a_40000_row_csv_from_the_command_line(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    # Before: exit 1 and "too many bind parameters" (one INSERT of every accepted row).
    tenant = await fresh_tenant(uow_factory)
    path = tmp_path / "big.csv"
    write_sample(path, "csv", 40_000)
    code, out = await remit(service_env.env(COLUMNS="200"), "submit", str(path), "--tenant", tenant)
    assert code == 0, out[-2000:]
    assert "(csv): 40000 accepted, 0 rejected" in out
