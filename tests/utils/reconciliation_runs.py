"""Reconciliation runs recorded by the job's own writer (reconciliation/record.py), with the breaks a test
names, for pages that show runs without running Spark."""

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

from reconciliation.record import RunTimes, record_run
from reconciliation.result import BREAK_SCHEMA, SUMMARY_SCHEMA, ReconcileResult


async def recorded_run(
    database_url: str, breaks: Sequence[Mapping[str, Any]], as_of: datetime | None = None
) -> uuid.UUID:
    """A finished run as of `as_of` (default now) with these breaks (BREAK_SCHEMA columns); its run_id."""
    as_of = as_of or datetime.now(UTC)
    table = pa.Table.from_pylist([dict(b) for b in breaks], schema=BREAK_SCHEMA)
    result = ReconcileResult(as_of=as_of, summary=SUMMARY_SCHEMA.empty_table(), breaks=table)
    times = RunTimes(uuid.uuid4(), as_of, datetime.now(UTC), grace=timedelta(minutes=60))
    await record_run(database_url, result, times)
    return times.run_id
