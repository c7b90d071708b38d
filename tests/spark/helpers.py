"""Run the job's steps on a test snapshot."""

from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from reconciliation.classify import MESSAGE_KEY, classify_messages
from reconciliation.config import RunConfig
from reconciliation.job import reconcile
from reconciliation.names import resolve_names
from reconciliation.result import ReconcileResult
from reconciliation.snapshot import read_snapshot
from tests.spark.builders import AS_OF, GRACE, Snapshot


def classified(spark: SparkSession, snap: Snapshot, tmp_path: Path) -> DataFrame:
    """Message-level output with the dead-letter reason decoded back to text."""
    tables = read_snapshot(spark, snap.write(tmp_path / "snapshot"))
    names = resolve_names(tables, set())
    reasons = spark.createDataFrame(list(names.items()) or [(0, "")], "reason_h bigint, reason string")
    messages = classify_messages(tables, AS_OF, GRACE).withColumn("message_id", _uuid_text(*MESSAGE_KEY))
    return messages.join(reasons, "reason_h", "left")


def _uuid_text(hi: str, lo: str) -> Column:
    """The canonical text of the stored halves, in Spark (hex() of a negative long is its two's complement)."""
    digits = F.concat(*(F.lpad(F.lower(F.hex(half)), 16, "0") for half in (hi, lo)))
    parts = ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
    return F.concat_ws("-", *(F.substring(digits, start, length) for start, length in parts))


def summary(spark: SparkSession, snap: Snapshot, tmp_path: Path) -> DataFrame:
    """The job's batch x currency summary, as a DataFrame."""
    table = run(spark, snap, tmp_path).summary
    return spark.createDataFrame(
        table.to_pylist(), schema=", ".join(f"{f.name} {_DDL[str(f.type)]}" for f in table.schema)
    )


_DDL = {"string": "string", "int64": "bigint", "bool": "boolean"}


def run(spark: SparkSession, snap: Snapshot, tmp_path: Path) -> ReconcileResult:
    snapshot_dir = snap.write(tmp_path / "snapshot")
    config = RunConfig(as_of=AS_OF, out_dir=str(tmp_path / "out"), snapshot_dir=snapshot_dir, grace=GRACE)
    return reconcile(spark, config)
