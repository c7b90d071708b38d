"""The snapshot layout: one Parquet file per table with an explicit schema, shared by export and job.

Only the columns reconciliation needs are exported (never account numbers or message bodies).
Cents and counts are int64, timestamps microseconds in UTC. A message_id, the key every large table is
grouped on, is stored as its 128 bits in two int64 columns (`message_id_hi`, `message_id_lo`): Spark then
hashes, shuffles and compares a fixed-width key instead of a 36-character string, exactly (measured in
docs/benchmarks.md, "Reconciliation"). Other uuids (transfer ids) stay strings.
"""

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STRING: Final = "string"
INT64: Final = "int64"
TIMESTAMP: Final = "timestamp"
UUID: Final = "uuid"  # stored as two int64 columns, see physical_columns()

_ARROW_TYPES: Final = {STRING: pa.string(), INT64: pa.int64(), TIMESTAMP: pa.timestamp("us", tz="UTC")}
_SPARK_TYPES: Final = {STRING: "STRING", INT64: "BIGINT", TIMESTAMP: "TIMESTAMP"}


@dataclass(frozen=True)
class SnapshotTable:
    name: str
    columns: tuple[tuple[str, str], ...]
    as_of_column: str  # rows after as_of are left out of the snapshot

    def uuid_columns(self) -> tuple[str, ...]:
        return tuple(col for col, kind in self.columns if kind == UUID)

    def physical_columns(self) -> tuple[tuple[str, str], ...]:
        """The columns as stored: a uuid column becomes `<name>_hi` and `<name>_lo` (signed int64 halves)."""
        stored: list[tuple[str, str]] = []
        for col, kind in self.columns:
            stored.extend([(half, INT64) for half in halves(col)] if kind == UUID else [(col, kind)])
        return tuple(stored)

    def key_columns(self) -> tuple[str, ...]:
        """The stored halves of the uuid columns: a file without them cannot be reconciled."""
        return tuple(half for col in self.uuid_columns() for half in halves(col))

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(col, _ARROW_TYPES[kind]) for col, kind in self.physical_columns()])

    def spark_ddl(self) -> str:
        return ", ".join(f"{col} {_SPARK_TYPES[kind]}" for col, kind in self.physical_columns())

    def to_arrow(self, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
        """Rows with uuids as text (the core's journal, test builders) in the stored layout."""
        uuids = self.uuid_columns()
        stored = []
        for row in rows:
            split = dict(row)
            for col in uuids:
                split.update(zip(halves(col), uuid_halves(split.pop(col, None)), strict=True))
            stored.append(split)
        return pa.Table.from_pylist(stored, schema=self.arrow_schema())

    def to_rows(self, stored: pa.Table) -> list[dict[str, Any]]:
        """The inverse of to_arrow: the stored columns read (all or some), uuids as text again."""
        rows: list[dict[str, Any]] = stored.to_pylist()
        for col in self.uuid_columns():
            hi, lo = halves(col)
            for row in rows:
                if hi in row:
                    high, low = row.pop(hi), row.pop(lo)
                    row[col] = None if high is None else uuid_text(high, low)
        return rows

    def path(self, snapshot_dir: Path) -> Path:
        return snapshot_dir / f"{self.name}.parquet"


def halves(column: str) -> tuple[str, str]:
    """The stored columns of a uuid column: its high and low 64 bits."""
    return f"{column}_hi", f"{column}_lo"


def uuid_halves(text: str | None) -> tuple[int | None, int | None]:
    """A uuid's 128 bits as two signed 64-bit integers, high half first (as the export computes them)."""
    if text is None:
        return None, None
    value = uuid.UUID(text).int
    return _signed(value >> 64), _signed(value & _MASK64)


def uuid_text(hi: int, lo: int) -> str:
    """The canonical text of the uuid stored as (hi, lo)."""
    return str(uuid.UUID(int=((hi & _MASK64) << 64) | (lo & _MASK64)))


_MASK64: Final = (1 << 64) - 1


def _signed(half: int) -> int:
    return half - (1 << 64) if half >= 1 << 63 else half


BATCHES: Final = SnapshotTable(
    "batches",
    (
        ("correlation_id", STRING),
        ("tenant_id", STRING),
        ("accepted_count", INT64),
        ("rejected_count", INT64),
        ("submitted_at", TIMESTAMP),
    ),
    "submitted_at",
)
BATCH_TOTALS: Final = SnapshotTable(
    "batch_totals",
    (
        ("correlation_id", STRING),
        ("currency", STRING),
        ("tenant_id", STRING),
        ("accepted_count", INT64),
        ("accepted_cents", INT64),
        ("control_count", INT64),
        ("control_cents", INT64),
    ),
    "submitted_at",  # of the owning batch
)
OUTBOX: Final = SnapshotTable(
    "outbox",
    (
        ("message_id", UUID),
        ("tenant_id", STRING),
        ("correlation_id", STRING),
        ("amount_cents", INT64),
        ("currency", STRING),
        ("accepted_at", TIMESTAMP),
        ("expires_at", TIMESTAMP),
    ),
    "accepted_at",
)
PROCESSED_MESSAGES: Final = SnapshotTable(
    "processed_messages",
    (
        ("message_id", UUID),
        ("tenant_id", STRING),
        ("correlation_id", STRING),
        ("processed_at", TIMESTAMP),
        # An external core's id of the transfer (0014); NULL when the embedded ledger booked it.
        ("core_transfer_id", STRING),
        # 'amqp' for a payment published directly (no outbox row), with what it moved (0016).
        ("source", STRING),
        ("amount_cents", INT64),
        ("currency", STRING),
        # The key generation the external core booked it under (0020): NULL for the first, `<tenant>:<message_id>`.
        ("core_key_generation", INT64),
    ),
    "processed_at",
)
LEDGER: Final = SnapshotTable(
    "ledger",
    (
        ("message_id", UUID),
        ("tenant_id", STRING),
        ("correlation_id", STRING),
        ("amount_cents", INT64),
        ("currency", STRING),
        ("booked_at", TIMESTAMP),
    ),
    "booked_at",
)
DEAD_LETTERS: Final = SnapshotTable(
    "dead_letters",
    (
        ("message_id", UUID),
        ("tenant_id", STRING),
        ("correlation_id", STRING),
        ("amount_cents", INT64),
        ("currency", STRING),
        ("reason", STRING),
        ("status", STRING),
        ("first_failed_at", TIMESTAMP),
        ("last_failed_at", TIMESTAMP),
    ),
    "first_failed_at",
)

TABLES: Final = (BATCHES, BATCH_TOTALS, OUTBOX, PROCESSED_MESSAGES, LEDGER, DEAD_LETTERS)

# The external core's booked transfers (its GET /journal), written by core_journal.py when a core is configured.
# Only keys of remit's form `<tenant_id>:<message_id>` are kept; booked_at is the core's.
CORE_JOURNAL: Final = SnapshotTable(
    "core_journal",
    (
        ("tenant_id", STRING),
        ("message_id", UUID),
        ("transfer_id", STRING),
        ("amount_cents", INT64),
        ("currency", STRING),
        ("booked_at", TIMESTAMP),
    ),
    "booked_at",
)


class SnapshotLayoutError(ValueError):
    """A snapshot file lacks a key column: written by an older remit (message_ids as text), or not a snapshot."""


def read_snapshot(spark: "SparkSession", snapshot_dir: str) -> dict[str, "DataFrame"]:
    """Read every snapshot table with its declared schema (no inference, so a drifted file fails loudly);
    `core_journal` only when the snapshot has one (a three-way run). Columns a file predates read as null,
    except the message key: a file without it would match every message to every other, so it is refused."""
    # Plain string joins keep remote URIs (hdfs://, s3a://) intact, which pathlib would mangle.
    base = snapshot_dir.rstrip("/")
    wanted = (*TABLES, CORE_JOURNAL) if has_core_journal(spark, snapshot_dir) else TABLES
    tables = {}
    for table in wanted:
        path = f"{base}/{table.name}.parquet"
        _check_key_columns(spark, table, path)
        tables[table.name] = spark.read.schema(table.spark_ddl()).parquet(path)
    return tables


def _stored_columns(spark: "SparkSession", path: str) -> set[str]:
    """The stored schema, from the files' footers (no data is read): pyarrow reads a local file's in a
    millisecond, Spark's schema inference takes about 60 ms per table (0.3 s of every run)."""
    if Path(path).is_file():
        return set(pq.read_schema(path).names)
    return set(spark.read.parquet(path).columns)  # remote storage, or a directory of part files


def _check_key_columns(spark: "SparkSession", table: SnapshotTable, path: str) -> None:
    if not (keys := table.key_columns()):
        return
    stored = _stored_columns(spark, path)
    if missing := [key for key in keys if key not in stored]:
        raise SnapshotLayoutError(
            f"{path} has no column {', '.join(missing)}: it was written by an older remit (message_ids as text) "
            "or is not a remit snapshot; export the snapshot again (drop --snapshot)"
        )


def has_core_journal(spark: "SparkSession", snapshot_dir: str) -> bool:
    local = Path(snapshot_dir)
    if local.is_dir():
        return CORE_JOURNAL.path(local).is_file()
    # Remote storage (hdfs://, s3a://): ask Hadoop's file system, as Spark itself would.
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(f"{snapshot_dir.rstrip('/')}/{CORE_JOURNAL.name}.parquet")  # type: ignore[union-attr]
    return bool(path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(path))
