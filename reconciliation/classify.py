"""Message level: one row per message_id with its status, from one union of all sources and one group-by.

The naive plan (outbox full-outer-join ledger, then dead letters, then processed_messages) shuffles the
big tables once per join. Here every source is projected to one narrow, tagged shape, unioned, and
grouped once by message_id: one shuffle of the large data, whatever the number of sources.

Names (correlation_id, tenant_id, currency, reason) travel as 64-bit hashes and are decoded on the driver
(names.py): with only fixed-width aggregation buffers Spark runs a code-generated hash aggregate; a single
string or struct buffer drops it to an interpreted sort aggregate, several times slower.
The match key itself stays the exact message_id string.
"""

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from reconciliation import statuses as st

# Source tags carried through the union (a byte each, to keep the shuffle narrow).
SRC_OUTBOX = 1
SRC_LEDGER = 2
SRC_PROCESSED = 3
SRC_DEAD_LETTER = 4

_TAGGED_COLUMNS = (
    "message_id",
    "src",
    "corr_h",
    "tenant_h",
    "ccy_h",
    "amount_cents",
    "ts",
    "expires_at",
    "reason_h",
    "dl_terminal",
)


def hashed(column: str) -> Column:
    """The 64-bit hash standing for a name; null stays null (xxhash64 of null is the seed, not null)."""
    return F.when(F.col(column).isNotNull(), F.xxhash64(column))


def _tagged(df: DataFrame, src: int, ts: str, **overrides: Column) -> DataFrame:
    """Project one source onto the shared tagged shape; columns a source lacks are typed nulls."""
    defaults: dict[str, Column] = {
        "message_id": F.col("message_id"),
        "src": F.lit(src).cast("tinyint"),
        "corr_h": hashed("correlation_id"),
        "tenant_h": hashed("tenant_id"),
        "ccy_h": F.lit(None).cast("bigint"),
        "amount_cents": F.lit(None).cast("bigint"),
        "ts": F.col(ts),
        "expires_at": F.lit(None).cast("timestamp"),
        "reason_h": F.lit(None).cast("bigint"),
        "dl_terminal": F.lit(None).cast("boolean"),
    }
    defaults.update(overrides)
    return df.select(*[defaults[name].alias(name) for name in _TAGGED_COLUMNS])


def tag_sources(tables: dict[str, DataFrame]) -> DataFrame:
    """All message-level sources as one DataFrame, one row per source row."""
    money = {"ccy_h": hashed("currency"), "amount_cents": F.col("amount_cents")}
    dead = tables["dead_letters"].where(F.col("message_id").isNotNull())  # unparseable: nothing to match
    return (
        _tagged(tables["outbox"], SRC_OUTBOX, "accepted_at", expires_at=F.col("expires_at"), **money)
        .unionByName(_tagged(tables["ledger"], SRC_LEDGER, "booked_at", **money))
        .unionByName(_tagged(tables["processed_messages"], SRC_PROCESSED, "processed_at"))
        .unionByName(
            _tagged(
                dead,
                SRC_DEAD_LETTER,
                "last_failed_at",
                reason_h=hashed("reason"),
                # A replayed dead letter went back to the queue: it ends nothing by itself.
                dl_terminal=F.col("status") != F.lit(st.REPLAYED_DL_STATUS),
                **money,
            )
        )
    )


def _count_where(cond: Column) -> Column:
    return F.sum(F.when(cond, 1).otherwise(0))


def _per_message(tagged: DataFrame) -> DataFrame:
    src = F.col("src")
    is_outbox, is_ledger, is_other = src == SRC_OUTBOX, src == SRC_LEDGER, src >= SRC_PROCESSED
    terminal_dl = (src == SRC_DEAD_LETTER) & F.col("dl_terminal")
    is_expiry = F.col("reason_h") == F.xxhash64(F.lit(st.EXPIRED_REASON))

    def outbox(col: str) -> Column:  # outbox rows are unique per message_id: max() just picks it
        return F.max(F.when(is_outbox, F.col(col)))

    def earliest(col: str, cond: Column) -> Column:
        return F.min_by(F.col(col), F.when(cond, F.col("ts")))

    def latest(col: str, cond: Column) -> Column:
        return F.max_by(F.col(col), F.when(cond, F.col("ts")))

    # Repartitioning on the key first lets the aggregate run on the reduce side only: a map-side partial
    # aggregate would be work for nothing, since a message's rows come from different files.
    return (
        tagged.repartition("message_id")
        .groupBy("message_id")
        .agg(
            _count_where(is_outbox).alias("n_outbox"),
            _count_where(is_ledger).alias("n_ledger"),
            _count_where(src == SRC_PROCESSED).alias("n_processed"),
            _count_where(terminal_dl & is_expiry).alias("n_expired"),
            _count_where(terminal_dl & ~is_expiry).alias("n_dead"),
            outbox("corr_h").alias("o_corr_h"),
            outbox("tenant_h").alias("o_tenant_h"),
            outbox("ccy_h").alias("o_ccy_h"),
            outbox("amount_cents").alias("o_amount"),
            outbox("expires_at").alias("o_expires"),
            F.min(F.when(is_ledger, F.col("amount_cents"))).alias("l_amount_min"),
            F.max(F.when(is_ledger, F.col("amount_cents"))).alias("l_amount_max"),
            F.min(F.when(is_ledger, F.col("ccy_h"))).alias("l_ccy_min"),
            F.max(F.when(is_ledger, F.col("ccy_h"))).alias("l_ccy_max"),
            # The earliest ledger row speaks for an unexpected message.
            earliest("corr_h", is_ledger).alias("l_corr_h"),
            earliest("tenant_h", is_ledger).alias("l_tenant_h"),
            earliest("ccy_h", is_ledger).alias("l_ccy_h"),
            earliest("amount_cents", is_ledger).alias("l_amount"),
            # The latest terminal dead letter gives the reason.
            latest("reason_h", terminal_dl & ~is_expiry).alias("dl_reason_h"),
            # Attribution for rows seen only in processed_messages / dead_letters: the latest of them.
            latest("corr_h", is_other).alias("x_corr_h"),
            latest("tenant_h", is_other).alias("x_tenant_h"),
            latest("ccy_h", src == SRC_DEAD_LETTER).alias("x_ccy_h"),
        )
    )


def _status(as_of: datetime, grace: timedelta) -> Column:
    """The precedence of statuses.py as one CASE expression (first match wins)."""
    n_ledger = F.col("n_ledger")
    out_amount, out_ccy = F.col("o_amount"), F.col("o_ccy_h")
    differs = (
        (F.col("l_amount_min") != out_amount)
        | (F.col("l_amount_max") != out_amount)
        | (F.col("l_ccy_min") != out_ccy)
        | (F.col("l_ccy_max") != out_ccy)
    )
    accepted = F.col("n_outbox") > 0
    return (
        F.when((n_ledger > 0) & ~accepted, F.lit(st.UNEXPECTED))
        .when((n_ledger > 0) & differs, F.lit(st.MISMATCH))
        .when(n_ledger > 1, F.lit(st.DUPLICATE))
        .when(n_ledger == 1, F.lit(st.PROCESSED))
        .when(~accepted, F.lit(None).cast("string"))  # never accepted, no money moved: not reconciled
        .when(F.col("n_dead") > 0, F.lit(st.DEAD_LETTERED))
        .when(F.col("n_expired") > 0, F.lit(st.EXPIRED))
        # An idempotency row means redeliveries are skipped: no money will ever move.
        .when(F.col("n_processed") > 0, F.lit(st.MISSING))
        .when(F.col("o_expires") > F.lit(as_of - grace), F.lit(st.IN_FLIGHT))
        .otherwise(F.lit(st.MISSING))
    )


def classify_messages(tables: dict[str, DataFrame], as_of: datetime, grace: timedelta) -> DataFrame:
    """One row per message_id: where it belongs (hashed batch, tenant, currency), amount, status, evidence."""
    per_message = _per_message(tag_sources(tables)).withColumn("status", _status(as_of, grace))
    status = F.col("status")
    return per_message.select(
        "message_id",
        F.coalesce("o_corr_h", "l_corr_h", "x_corr_h").alias("corr_h"),
        F.coalesce("o_tenant_h", "l_tenant_h", "x_tenant_h").alias("tenant_h"),
        F.coalesce("o_ccy_h", "l_ccy_h", "x_ccy_h").alias("ccy_h"),
        (F.col("n_outbox") > 0).alias("accepted"),
        F.coalesce("o_amount", "l_amount", F.lit(0).cast("bigint")).alias("amount_cents"),
        "status",
        F.when(status == st.DEAD_LETTERED, F.col("dl_reason_h"))
        .when(status == st.EXPIRED, F.xxhash64(F.lit(st.EXPIRED_REASON)))
        .alias("reason_h"),
        # Evidence for the break detail line, built on the driver.
        "n_ledger",
        "n_processed",
        "l_amount",
        "l_ccy_h",
        "o_amount",
        "o_ccy_h",
        "o_expires",
    )
