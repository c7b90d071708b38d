"""Message level: one row per message with its status, from one union of all sources and one group-by.

A message is (tenant_id, message_id), the consumer's idempotency key: the same message_id used by two
tenants is two messages, and one tenant's rows never settle, break or attribute another tenant's.

The naive plan (outbox full-outer-join ledger, then dead letters, then processed_messages) shuffles the
big tables once per join. Here every source is projected to one narrow, tagged shape, unioned, and
grouped once by (tenant_id, message_id): one shuffle of the large data, whatever the number of sources.

Names (correlation_id, currency, reason) travel as 64-bit hashes and are decoded on the driver
(names.py): with only fixed-width aggregation buffers Spark runs a code-generated hash aggregate; a single
string or struct buffer drops it to an interpreted sort aggregate, several times slower.
The match key itself stays exact: the tenant_id string and the message_id's 128 bits as two int64 columns
(snapshot.py), fixed-width grouping keys rather than a 36-character string.
"""

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from reconciliation import statuses as st
from reconciliation.precedence import OTHERWISE, core_transfers, in_core, status_rules
from reconciliation.rows import BREAK_EVIDENCE
from reconciliation.snapshot import halves

# Source tags carried through the union (a byte each, to keep the shuffle narrow).
SRC_OUTBOX = 1
SRC_LEDGER = 2
SRC_PROCESSED = 3
SRC_DEAD_LETTER = 4
SRC_CORE = 5  # a transfer in the external core's journal (three-way runs only)
SRC_DIRECT = 6  # an idempotency record of a payment published directly over AMQP: it is also its acceptance

MESSAGE_KEY = halves("message_id")  # a message_id as stored (snapshot.py)
_DERIVED_EVIDENCE = ("ref_differs", "n_core_transfers")  # evidence computed from the aggregates below
_TAGGED_COLUMNS = (
    "tenant_id",
    *MESSAGE_KEY,
    "src",
    "corr_h",
    "ccy_h",
    "amount_cents",
    "ts",
    "expires_at",
    "reason_h",
    "dl_terminal",
    "ref_h",
)


def hashed(column: str) -> Column:
    """The 64-bit hash standing for a name; null stays null (xxhash64 of null is the seed, not null)."""
    return F.when(F.col(column).isNotNull(), F.xxhash64(column))


def _tagged(df: DataFrame, src: int | Column, ts: str, **overrides: Column) -> DataFrame:
    """Project one source onto the shared tagged shape; columns a source lacks are typed nulls."""
    defaults: dict[str, Column] = {
        "tenant_id": F.col("tenant_id"),
        **{half: F.col(half) for half in MESSAGE_KEY},
        "src": (src if isinstance(src, Column) else F.lit(src)).cast("tinyint"),
        "corr_h": hashed("correlation_id"),
        "ccy_h": F.lit(None).cast("bigint"),
        "amount_cents": F.lit(None).cast("bigint"),
        "ts": F.col(ts),
        "expires_at": F.lit(None).cast("timestamp"),
        "reason_h": F.lit(None).cast("bigint"),
        "dl_terminal": F.lit(None).cast("boolean"),
        "ref_h": F.lit(None).cast("bigint"),
    }
    defaults.update(overrides)
    return df.select(*[defaults[name].alias(name) for name in _TAGGED_COLUMNS])


def three_way(tables: dict[str, DataFrame]) -> bool:
    """Whether the snapshot holds the external core's journal (read_snapshot adds it only then)."""
    return "core_journal" in tables


def tag_sources(tables: dict[str, DataFrame]) -> DataFrame:
    """All message-level sources as one DataFrame, one row per source row."""
    money = {"ccy_h": hashed("currency"), "amount_cents": F.col("amount_cents")}
    dead = tables["dead_letters"].where(F.col(MESSAGE_KEY[0]).isNotNull())  # unparseable: nothing to match
    direct = F.col("source") == F.lit(st.AMQP_SOURCE)
    tagged = (
        _tagged(tables["outbox"], SRC_OUTBOX, "accepted_at", expires_at=F.col("expires_at"), **money)
        .unionByName(_tagged(tables["ledger"], SRC_LEDGER, "booked_at", **money))
        .unionByName(
            _tagged(
                tables["processed_messages"],
                F.when(direct, SRC_DIRECT).otherwise(SRC_PROCESSED),
                "processed_at",
                # What a direct publish moved is known from its record alone (it has no outbox row).
                ccy_h=F.when(direct, hashed("currency")),
                amount_cents=F.when(direct, F.col("amount_cents")),
                ref_h=hashed("core_transfer_id"),
            )
        )
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
    if three_way(tables):
        core = tables["core_journal"].withColumn("correlation_id", F.lit(None).cast("string"))
        tagged = tagged.unionByName(_tagged(core, SRC_CORE, "booked_at", ref_h=hashed("transfer_id"), **money))
    return tagged


def _count_where(cond: Column) -> Column:
    return F.sum(F.when(cond, 1).otherwise(0))


def _per_message(tagged: DataFrame, as_of: datetime, with_core: bool) -> DataFrame:
    src = F.col("src")
    is_outbox, is_ledger, is_direct, is_core = (src == SRC_OUTBOX, src == SRC_LEDGER, src == SRC_DIRECT,
                                                src == SRC_CORE)  # fmt: skip
    is_processed = is_direct | (src == SRC_PROCESSED)
    is_other = is_processed | (src == SRC_DEAD_LETTER)
    terminal_dl = (src == SRC_DEAD_LETTER) & F.col("dl_terminal")
    is_expiry = F.col("reason_h") == F.xxhash64(F.lit(st.EXPIRED_REASON))
    # The core books a transfer a moment after remit's record of it starts: a core row after the as-of time
    # counts only for a payment remit recorded by then (see core_journal.py).
    late = F.col("ts") > F.lit(as_of)

    def only(col: str, cond: Column) -> Column:  # rows unique per message and kind: max() just picks it
        return F.max(F.when(cond, F.col(col)))

    def earliest(col: str, cond: Column) -> Column:
        return F.min_by(F.col(col), F.when(cond, F.col("ts")))

    def latest(col: str, cond: Column) -> Column:
        return F.max_by(F.col(col), F.when(cond, F.col("ts")))

    # Repartitioning on the key first lets the aggregate run on the reduce side only: a map-side partial
    # aggregate would be work for nothing, since a message's rows come from different files. The message_id's
    # low half alone decides the partition (all of a message's rows meet there, whichever the tenant), which
    # also satisfies the grouping by (tenant_id, message_id) without a second exchange.
    return (
        tagged.repartition(MESSAGE_KEY[1])
        .groupBy("tenant_id", *MESSAGE_KEY)
        .agg(
            _count_where(is_outbox).alias("n_outbox"),
            _count_where(is_direct).alias("n_direct"),
            _count_where(is_ledger).alias("n_ledger"),
            _count_where(is_processed).alias("n_processed"),
            _count_where(is_processed & F.col("ref_h").isNotNull()).alias("n_remit_core"),
            _count_where(terminal_dl & is_expiry).alias("n_expired"),
            _count_where(terminal_dl & ~is_expiry).alias("n_dead"),
            # What was accepted: the outbox row, else the direct publish's record.
            F.coalesce(only("corr_h", is_outbox), only("corr_h", is_direct)).alias("o_corr_h"),
            F.coalesce(only("ccy_h", is_outbox), only("ccy_h", is_direct)).alias("o_ccy_h"),
            F.coalesce(only("amount_cents", is_outbox), only("amount_cents", is_direct)).alias("o_amount"),
            only("expires_at", is_outbox).alias("o_expires"),
            F.min(F.when(is_ledger, F.col("amount_cents"))).alias("l_amount_min"),
            F.max(F.when(is_ledger, F.col("amount_cents"))).alias("l_amount_max"),
            F.min(F.when(is_ledger, F.col("ccy_h"))).alias("l_ccy_min"),
            F.max(F.when(is_ledger, F.col("ccy_h"))).alias("l_ccy_max"),
            # The earliest ledger row speaks for an unexpected message.
            earliest("corr_h", is_ledger).alias("l_corr_h"),
            earliest("ccy_h", is_ledger).alias("l_ccy_h"),
            earliest("amount_cents", is_ledger).alias("l_amount"),
            # The transfer id remit recorded for the core's transfer.
            only("ref_h", is_processed).alias("p_ref_h"),
            # The latest terminal dead letter gives the reason.
            latest("reason_h", terminal_dl & ~is_expiry).alias("dl_reason_h"),
            # Attribution for rows seen only in processed_messages / dead_letters: the latest of them.
            latest("corr_h", is_other).alias("x_corr_h"),
            latest("ccy_h", src == SRC_DEAD_LETTER).alias("x_ccy_h"),
            *(_core_aggregates(is_core, late) if with_core else _no_core()),
        )
    )


def _core_aggregates(is_core: Column, late: Column) -> list[Column]:
    """The core's transfers under the key: normally one, whose amount, currency and id these pick; more than one
    (two transfer ids) is a core_duplicate. A two-way run has no core rows and computes none of these (each
    aggregate is a buffer per message in the one large hash aggregate)."""
    return [
        _count_where(is_core & ~late).alias("n_core"),
        _count_where(is_core & late).alias("n_core_late"),
        F.max(F.when(is_core, F.col("amount_cents"))).alias("c_amount"),
        F.max(F.when(is_core, F.col("ccy_h"))).alias("c_ccy_h"),
        F.max(F.when(is_core, F.col("ref_h"))).alias("c_ref_h"),
        # Two rows of one transfer (an export that repeated one) are not two bookings: the ids must differ.
        F.min(F.when(is_core, F.col("ref_h"))).alias("c_ref_min"),
    ]


def _no_core() -> list[Column]:
    """What the core's aggregates are when there is no core: no transfer, late or not."""
    return [
        F.lit(0).cast("bigint").alias("n_core"),
        F.lit(0).cast("bigint").alias("n_core_late"),
        F.lit(None).cast("bigint").alias("c_amount"),
        F.lit(None).cast("bigint").alias("c_ccy_h"),
        F.lit(None).cast("bigint").alias("c_ref_h"),
        F.lit(None).cast("bigint").alias("c_ref_min"),
    ]


class _Aggregates:
    """A message's aggregates as Spark columns, for the precedence rules (precedence.py)."""

    def __getattr__(self, name: str) -> Column:
        if name.startswith("__"):  # Python's own protocol lookups are not aggregates
            raise AttributeError(name)
        return F.col(name)


_AGGREGATES = _Aggregates()


def _status(as_of: datetime, grace: timedelta, with_core: bool) -> Column:
    return status_column(F.lit(as_of - grace), with_core)


def status_column(ttl_edge: Column, with_core: bool) -> Column:
    """The precedence of precedence.py as one CASE expression (first match wins), over the aggregates' columns."""
    rules = status_rules(_AGGREGATES, ttl_edge, with_core)
    (first, first_status), *others = rules
    status = F.when(first, _literal(first_status))
    for condition, then in others:
        status = status.when(condition, _literal(then))
    return status.otherwise(_literal(OTHERWISE))


def _literal(status: str | None) -> Column:
    return F.lit(status).cast("string")


def classify_messages(tables: dict[str, DataFrame], as_of: datetime, grace: timedelta) -> DataFrame:
    """One row per message, (tenant_id, *MESSAGE_KEY): where it belongs (hashed batch, tenant, currency), how it
    came (origin), amount, status, evidence."""
    with_core = three_way(tables)
    per_message = _per_message(tag_sources(tables), as_of, with_core).withColumn(
        "status", _status(as_of, grace, with_core)
    )
    status = F.col("status")
    return per_message.select(
        "tenant_id",
        *MESSAGE_KEY,
        F.coalesce("o_corr_h", "l_corr_h", "x_corr_h").alias("corr_h"),
        hashed("tenant_id").alias("tenant_h"),
        F.coalesce("o_ccy_h", "l_ccy_h", "c_ccy_h", "x_ccy_h").alias("ccy_h"),
        (F.col("n_outbox") > 0).alias("accepted"),
        # How it was accepted: a batch (outbox row) or published directly over AMQP (its idempotency record).
        F.when(F.col("n_outbox") > 0, F.lit(st.ORIGIN_FILE))
        .when(F.col("n_direct") > 0, F.lit(st.ORIGIN_AMQP))
        .alias("origin"),
        in_core(_AGGREGATES).alias("in_core"),
        F.coalesce("o_amount", "l_amount", "c_amount", F.lit(0).cast("bigint")).alias("amount_cents"),
        "status",
        F.when(status == st.DEAD_LETTERED, F.col("dl_reason_h"))
        .when(status == st.EXPIRED, F.xxhash64(F.lit(st.EXPIRED_REASON)))
        .alias("reason_h"),
        # Evidence for the break detail line, built on the driver.
        *(c for c in BREAK_EVIDENCE if c not in _DERIVED_EVIDENCE),
        (F.col("c_ref_h") != F.col("p_ref_h")).alias("ref_differs"),
        core_transfers(_AGGREGATES).alias("n_core_transfers"),
    )
