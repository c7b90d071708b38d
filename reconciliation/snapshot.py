"""The snapshot layout: one Parquet file per table with an explicit schema, shared by export and job.

Only the columns reconciliation needs are exported (never account numbers or message bodies).
uuids are strings, cents and counts int64, timestamps microseconds in UTC.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STRING: Final = "string"
INT64: Final = "int64"
TIMESTAMP: Final = "timestamp"

_ARROW_TYPES: Final = {STRING: pa.string(), INT64: pa.int64(), TIMESTAMP: pa.timestamp("us", tz="UTC")}
_SPARK_TYPES: Final = {STRING: "STRING", INT64: "BIGINT", TIMESTAMP: "TIMESTAMP"}


@dataclass(frozen=True)
class SnapshotTable:
    name: str
    columns: tuple[tuple[str, str], ...]
    as_of_column: str  # rows after as_of are left out of the snapshot

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(col, _ARROW_TYPES[kind]) for col, kind in self.columns])

    def spark_ddl(self) -> str:
        return ", ".join(f"{col} {_SPARK_TYPES[kind]}" for col, kind in self.columns)

    def path(self, snapshot_dir: Path) -> Path:
        return snapshot_dir / f"{self.name}.parquet"


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
        ("message_id", STRING),
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
        ("message_id", STRING),
        ("tenant_id", STRING),
        ("correlation_id", STRING),
        ("processed_at", TIMESTAMP),
        # An external core's id of the transfer (0014); NULL when the embedded ledger booked it.
        ("core_transfer_id", STRING),
        # 'amqp' for a payment published directly (no outbox row), with what it moved (0016).
        ("source", STRING),
        ("amount_cents", INT64),
        ("currency", STRING),
    ),
    "processed_at",
)
LEDGER: Final = SnapshotTable(
    "ledger",
    (
        ("message_id", STRING),
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
        ("message_id", STRING),
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
        ("message_id", STRING),
        ("transfer_id", STRING),
        ("amount_cents", INT64),
        ("currency", STRING),
        ("booked_at", TIMESTAMP),
    ),
    "booked_at",
)


def read_snapshot(spark: "SparkSession", snapshot_dir: str) -> dict[str, "DataFrame"]:
    """Read every snapshot table with its declared schema (no inference, so a drifted file fails loudly);
    `core_journal` only when the snapshot has one (a three-way run). Columns a file predates read as null."""
    # Plain string joins keep remote URIs (hdfs://, s3a://) intact, which pathlib would mangle.
    base = snapshot_dir.rstrip("/")
    tables = {t.name: spark.read.schema(t.spark_ddl()).parquet(f"{base}/{t.name}.parquet") for t in TABLES}
    if has_core_journal(spark, snapshot_dir):
        tables[CORE_JOURNAL.name] = spark.read.schema(CORE_JOURNAL.spark_ddl()).parquet(
            f"{base}/{CORE_JOURNAL.name}.parquet"
        )
    return tables


def has_core_journal(spark: "SparkSession", snapshot_dir: str) -> bool:
    local = Path(snapshot_dir)
    if local.is_dir():
        return CORE_JOURNAL.path(local).is_file()
    # Remote storage (hdfs://, s3a://): ask Hadoop's file system, as Spark itself would.
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(f"{snapshot_dir.rstrip('/')}/{CORE_JOURNAL.name}.parquet")  # type: ignore[union-attr]
    return bool(path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(path))
