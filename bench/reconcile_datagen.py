"""Synthetic reconciliation snapshots: N messages across N/1000 batches with a realistic mix of fates.

Vectorized with numpy (10M messages in well under a minute); files are laid out by batch, like the
export writes them (outbox in correlation_id, seq order).
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from reconciliation.snapshot import BATCH_TOTALS, BATCHES, DEAD_LETTERS, LEDGER, OUTBOX, PROCESSED_MESSAGES

AS_OF = datetime(2025, 5, 2, tzinfo=UTC)
# Written beside a cached snapshot: one generated in an older layout (message_ids as text) is generated again.
LAYOUT = "message_id as two int64 halves\n"
_US = 1_000_000
_HOUR = 3600 * _US

# Fate of each accepted message, and its share.
FATES = {
    "processed": 0.955,
    "dead_lettered": 0.01,
    "expired": 0.005,
    "in_flight": 0.01,
    "missing": 0.003,
    "duplicate": 0.0005,
    "mismatch": 0.0005,
    "replayed_processed": 0.0015,  # dead-lettered, replayed, then booked: processed
    "resolved_processed": 0.0005,
    "idempotent_no_money": 0.0002,  # processed_messages row but no ledger row: missing
    "processed_2": 0.0138,  # remainder, processed (keeps the shares summing to 1)
}
CURRENCY_CODES = ("AUD", "USD", "NZD", "EUR")
CURRENCY_SHARES = (0.8, 0.1, 0.05, 0.05)
DL_REASONS = np.array(["invalid", "permanent_failure", "retries_exhausted", "tenant_mismatch"])
UNEXPECTED_SHARE = 0.0005  # ledger rows never accepted; half reuse another tenant's accepted message_id
BROKEN_TOTALS_SHARE = 0.001


def _uuids(rng: np.random.Generator, n: int) -> np.ndarray:
    """n random message_ids as stored in a snapshot: an (n, 2) array of their int64 halves."""
    return rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, (n, 2), dtype=np.int64, endpoint=True)


def _message_ids(ids: np.ndarray) -> dict[str, np.ndarray]:
    return {"message_id_hi": ids[:, 0], "message_id_lo": ids[:, 1]}


def _ts(values: np.ndarray) -> pa.Array:
    return pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC"))


def _write(table: pa.Table, schema: pa.Schema, path: Path) -> None:
    pq.write_table(table.select(schema.names).cast(schema), path, row_group_size=1 << 20)


def generate(out: Path, n: int, seed: int = 7, first_batch: int = 0) -> dict[str, int]:
    """Write the six snapshot tables for n accepted messages under `out`; returns rows per table.

    `first_batch` numbers the batches from there, so that parts generated apart (with their own seeds)
    together form one larger snapshot with unique batch ids (bench/reconcile_scale.py).
    """
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    n_batches = max(1, n // 1000)
    batch_of = np.sort(rng.integers(0, n_batches, n))
    batch_ids = np.array(
        [f"bulk_T{b % 20:02d}_20250501_batch_{b:07d}" for b in range(first_batch, first_batch + n_batches)],
        dtype=object,
    )
    tenants = np.array([f"tenant-{b % 20:02d}" for b in range(first_batch, first_batch + n_batches)], dtype=object)
    corr = pa.array(batch_ids[batch_of], pa.string())
    tenant = pa.array(tenants[batch_of], pa.string())
    currency_ix = rng.choice(len(CURRENCY_CODES), n, p=CURRENCY_SHARES)
    currency = pa.array(np.array(CURRENCY_CODES, dtype=object)[currency_ix], pa.string())
    amount = rng.integers(100, 1_000_000, n, dtype=np.int64)
    fate_names = np.array(list(FATES))
    fate = fate_names[rng.choice(len(FATES), n, p=np.array(list(FATES.values())) / sum(FATES.values()))]
    as_of_us = int(AS_OF.timestamp() * _US)
    age = rng.integers(1 * _HOUR, 30 * _HOUR, n)
    age = np.where(fate == "in_flight", rng.integers(1 * _HOUR, 20 * _HOUR, n), age)
    age = np.where(fate == "missing", rng.integers(25 * _HOUR, 30 * _HOUR, n), age)
    accepted_at = as_of_us - age
    expires_at = accepted_at + 24 * _HOUR
    message_id = _uuids(rng, n)

    outbox = pa.table({**_message_ids(message_id), "tenant_id": tenant, "correlation_id": corr,
                       "amount_cents": amount, "currency": currency, "accepted_at": _ts(accepted_at),
                       "expires_at": _ts(expires_at)})  # fmt: skip
    _write(outbox, OUTBOX.arrow_schema(), OUTBOX.path(out))

    booked = np.isin(fate, ["processed", "processed_2", "duplicate", "mismatch", "replayed_processed",
                            "resolved_processed"])  # fmt: skip
    ledger_ix = np.concatenate([np.flatnonzero(booked), np.flatnonzero(fate == "duplicate")])
    ledger_ix.sort()
    ledger_amount = np.where(fate[ledger_ix] == "mismatch", amount[ledger_ix] + 1, amount[ledger_ix])
    booked_at = np.minimum(accepted_at[ledger_ix] + rng.integers(1, 60 * _US, ledger_ix.size), as_of_us)
    n_unexpected = int(n * UNEXPECTED_SHARE)
    # A message is (tenant_id, message_id): a direct publisher reusing another tenant's id books its own
    # payment, which must stay unexpected and leave the other tenant's message as it was.
    reused = rng.choice(n, n_unexpected // 2, replace=False)  # once each: equal booking times tie otherwise
    unexpected_batch = np.concatenate([(batch_of[reused] + 1) % n_batches,  # the next batch: another tenant
                                       rng.integers(0, n_batches, n_unexpected - reused.size)])  # fmt: skip
    unexpected_id = np.concatenate([message_id[reused], _uuids(rng, n_unexpected - reused.size)])
    ledger = pa.table({
        **_message_ids(np.concatenate([message_id[ledger_ix], unexpected_id])),
        "tenant_id": pa.concat_arrays([tenant.take(ledger_ix), pa.array(tenants[unexpected_batch], pa.string())]),
        "correlation_id": pa.concat_arrays([corr.take(ledger_ix),
                                            pa.array(batch_ids[unexpected_batch], pa.string())]),
        "amount_cents": np.concatenate([ledger_amount, rng.integers(100, 10_000, n_unexpected)]),
        "currency": pa.concat_arrays([currency.take(ledger_ix), pa.array(["AUD"] * n_unexpected, pa.string())]),
        "booked_at": _ts(np.concatenate([booked_at, np.full(n_unexpected, as_of_us - _HOUR)])),
    })  # fmt: skip
    _write(ledger, LEDGER.arrow_schema(), LEDGER.path(out))

    pm_ix = np.flatnonzero(booked | (fate == "idempotent_no_money"))
    processed = pa.table({**_message_ids(message_id[pm_ix]), "tenant_id": tenant.take(pm_ix),
                          "correlation_id": corr.take(pm_ix),
                          "processed_at": _ts(accepted_at[pm_ix] + 30 * _US),
                          # booked in remit's own ledger: no external core's transfer id
                          "core_transfer_id": pa.nulls(pm_ix.size, pa.string()),
                          # every generated payment came through a batch's outbox (none published directly)
                          "source": pa.array(["outbox"] * pm_ix.size, pa.string()),
                          "amount_cents": pa.nulls(pm_ix.size, pa.int64()),
                          "currency": pa.nulls(pm_ix.size, pa.string())})  # fmt: skip
    _write(processed, PROCESSED_MESSAGES.arrow_schema(), PROCESSED_MESSAGES.path(out))

    dl_ix = np.flatnonzero(np.isin(fate, ["dead_lettered", "expired", "replayed_processed", "resolved_processed"]))
    dl_fate = fate[dl_ix]
    reason = np.where(dl_fate == "expired", "expired", DL_REASONS[rng.integers(0, 4, dl_ix.size)])
    status = np.select([dl_fate == "replayed_processed", dl_fate == "resolved_processed"], ["replayed", "resolved"],
                       default=np.array(["open", "open", "discarded"])[rng.integers(0, 3, dl_ix.size)])  # fmt: skip
    failed_at = accepted_at[dl_ix] + 10 * _US
    dead = pa.table({**_message_ids(message_id[dl_ix]), "tenant_id": tenant.take(dl_ix),
                     "correlation_id": corr.take(dl_ix), "amount_cents": amount[dl_ix],
                     "currency": currency.take(dl_ix), "reason": reason, "status": status,
                     "first_failed_at": _ts(failed_at), "last_failed_at": _ts(failed_at)})  # fmt: skip
    _write(dead, DEAD_LETTERS.arrow_schema(), DEAD_LETTERS.path(out))

    totals = (
        outbox.group_by(["correlation_id", "tenant_id", "currency"])
        .aggregate([("amount_cents", "sum"), ("amount_cents", "count")])
        .rename_columns(["correlation_id", "tenant_id", "currency", "accepted_cents", "accepted_count"])
    )
    broken = rng.random(totals.num_rows) < BROKEN_TOTALS_SHARE
    control_cents = np.where(broken, totals["accepted_cents"].to_numpy() + 100, totals["accepted_cents"].to_numpy())
    totals = totals.append_column("control_count", totals["accepted_count"]).append_column(
        "control_cents", pa.array(control_cents, pa.int64())
    )
    _write(totals.sort_by("correlation_id"), BATCH_TOTALS.arrow_schema(), BATCH_TOTALS.path(out))

    counts = np.bincount(batch_of, minlength=n_batches)
    batches = pa.table({"correlation_id": pa.array(batch_ids, pa.string()), "tenant_id": pa.array(tenants, pa.string()),
                        "accepted_count": counts.astype(np.int64), "rejected_count": np.zeros(n_batches, np.int64),
                        "submitted_at": _ts(np.full(n_batches, as_of_us - 30 * _HOUR))})  # fmt: skip
    _write(batches, BATCHES.arrow_schema(), BATCHES.path(out))
    return {"outbox": n, "ledger": ledger.num_rows, "processed_messages": processed.num_rows,
            "dead_letters": dead.num_rows, "batch_totals": totals.num_rows, "batches": n_batches}  # fmt: skip


GRACE = timedelta(minutes=15)
