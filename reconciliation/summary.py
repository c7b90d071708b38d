"""Batch x currency level, Spark side: the per-message rows collapsed to a few rows per group.

One hash aggregate (fixed-width buffers, partial aggregation before the shuffle) groups by
batch x tenant x currency x status; a broken message keeps its own row (its message_id joins the key,
next to its tenant), so the same action yields the summary and the break detail. batch_totals rows
join the same group-by as tagged rows instead of through a join. The pivot to one row per group
happens on the driver (fold.py, in Arrow), on a few rows per batch.
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from reconciliation import statuses as st
from reconciliation.classify import MESSAGE_KEY, hashed
from reconciliation.rows import BREAK_EVIDENCE, BREAK_KEY, GROUP_KEYS, TOTALS


def _message_rows(messages: DataFrame) -> DataFrame:
    is_break = F.col("status").isin(*st.BREAK_STATUSES)
    return messages.select(
        "corr_h",
        "tenant_h",
        "ccy_h",
        "status",
        "origin",
        "in_core",
        F.lit(False).alias("is_totals"),
        *[F.when(is_break, F.col(half)).alias(key) for half, key in zip(MESSAGE_KEY, BREAK_KEY, strict=True)],
        "amount_cents",
        # Evidence only on break rows, so the other rows of a group stay identical and collapse.
        *[F.when(is_break, F.col(c)).alias(c) for c in BREAK_EVIDENCE],
    )


def _totals_rows(batch_totals: DataFrame) -> DataFrame:
    return batch_totals.select(
        hashed("correlation_id").alias("corr_h"),
        hashed("tenant_id").alias("tenant_h"),
        hashed("currency").alias("ccy_h"),
        F.lit(None).cast("string").alias("status"),
        F.lit(True).alias("is_totals"),
        F.col("accepted_count").alias("totals_accepted_count"),
        F.col("accepted_cents").alias("totals_accepted_cents"),
        "control_count",
        "control_cents",
    )


def summarize(messages: DataFrame, batch_totals: DataFrame) -> DataFrame:
    """Rows keyed by GROUP_KEYS with message count, cents (int64, ANSI-checked), evidence and totals."""
    rows = _message_rows(messages).unionByName(_totals_rows(batch_totals), allowMissingColumns=True)
    return rows.groupBy(*GROUP_KEYS).agg(
        F.sum(F.when(~F.col("is_totals"), 1).otherwise(0)).alias("messages"),
        F.sum("amount_cents").alias("cents"),
        *[F.max(c).alias(c) for c in (*BREAK_EVIDENCE, *TOTALS)],
    )
