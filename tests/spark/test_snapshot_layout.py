"""The snapshot's message key: a message_id stored as its two 64-bit halves, the same from PostgreSQL's export,
from Python (the core's journal, the builders) and back to text for the break lines."""

import asyncio
import uuid
from pathlib import Path

import asyncpg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from app.cli.remit import cli
from reconciliation.export import _select_expr
from reconciliation.snapshot import OUTBOX, UUID, SnapshotLayoutError, read_snapshot, uuid_halves, uuid_text
from tests.spark.builders import Snapshot

pytestmark = pytest.mark.spark

INT64 = range(-(1 << 63), 1 << 63)
EDGES = [0, 1, (1 << 64) - 1, 1 << 63, (1 << 63) - 1, 1 << 64, ((1 << 63) << 64) | 1, (1 << 128) - 1]


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_halves_are_signed_64_bit_and_give_the_uuid_back(value: int) -> None:
    text = str(uuid.UUID(int=value))
    hi, lo = uuid_halves(text)
    assert isinstance(hi, int)
    assert isinstance(lo, int)
    assert hi in INT64
    assert lo in INT64
    assert (hi % (1 << 64), lo % (1 << 64)) == (value >> 64, value & ((1 << 64) - 1))
    assert uuid_text(hi, lo) == text


def test_postgres_splits_a_message_id_as_python_does(database: str) -> None:
    ids = [uuid.UUID(int=v) for v in EDGES] + [uuid.uuid4() for _ in range(20)]

    async def split() -> list[tuple[int, int]]:
        conn = await asyncpg.connect(database.replace("+asyncpg", ""))
        try:
            sql = f"SELECT {_select_expr('message_id', UUID, '')} FROM unnest($1::uuid[]) AS t(message_id)"
            return [(r["message_id_hi"], r["message_id_lo"]) for r in await conn.fetch(sql, ids)]
        finally:
            await conn.close()

    assert asyncio.run(split()) == [uuid_halves(str(i)) for i in ids]


def _with_an_old_outbox(tmp_path: Path, as_part_files: bool = False) -> Path:
    """A snapshot whose outbox an older remit wrote: message_ids as text (as one file, or as a directory of
    part files the way Spark writes a table, which only Spark's own schema inference reads)."""
    directory = Path(Snapshot().accept(1).book(1).write(tmp_path / "snapshot"))
    old = pa.table({"message_id": [str(uuid.uuid4())], "tenant_id": ["tenant-a"]})
    path = OUTBOX.path(directory)
    path.unlink()
    if as_part_files:
        path.mkdir()
        path = path / "part-00000.parquet"
    pq.write_table(old, path)
    return directory


@pytest.mark.parametrize("as_part_files", [False, True], ids=["file", "part-files"])
def test_a_snapshot_with_message_ids_as_text_is_refused(
    spark: SparkSession, tmp_path: Path, as_part_files: bool
) -> None:
    """An older remit's snapshot would read its missing key columns as null: every message one group."""
    directory = _with_an_old_outbox(tmp_path, as_part_files)

    with pytest.raises(SnapshotLayoutError, match=r"outbox\.parquet has no column message_id_hi, message_id_lo"):
        read_snapshot(spark, str(directory))


def test_the_cli_says_to_export_such_a_snapshot_again(spark: SparkSession, tmp_path: Path) -> None:
    directory = _with_an_old_outbox(tmp_path)
    out_dir = str(tmp_path / "out")
    args = ["reconcile", "--as-of", "2025-05-02T00:00:00Z", "--out", out_dir, "--snapshot", str(directory)]

    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 2, result.output
    out = " ".join(result.output.replace("│", " ").split())
    assert "Invalid value for '--snapshot'" in out
    assert "has no column message_id_hi, message_id_lo" in out
    assert "export the snapshot again (drop --snapshot)" in out
