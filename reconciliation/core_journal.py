"""Snapshot step for three-way reconciliation: the external core's journal (its `GET /journal` export) into
`<snapshot>/core_journal.parquet`, next to remit's tables.

The export pages booked transfers from a cursor in a stable order (docs/core-banking.md); every page is read
and written as it comes, so memory stays one page. Read after remit's own snapshot: the core commits a
transfer before remit records it, so every transfer remit's snapshot names is already in the core's export.

Only keys of remit's form, `<tenant_id>:<message_id>` or, for a new attempt a forced replay opened after the
core refused the key before it, `<tenant_id>:<message_id>:<generation>` (app/consumer/core_keys.py), are remit's:
a real core books other channels' transfers too, which are counted as `foreign` and left out. Every generation of
a payment's key is the same payment (tenant_id, message_id): two transfers under any two of its keys are two
transfers of one payment. Transfers booked after
`as_of + grace` are left out; those in between are kept so that a payment remit recorded just before the
as-of time still finds its transfer (the core books it a moment later); classify.py counts them only then.

The export holds back every transfer of a transaction younger than the oldest one still running on the
core's database server (so that a cursor never skips a late commit): one long transaction there, any, delays
transfers that are long committed. So the export is followed until every transfer remit's snapshot names
(records with a core transfer id) has come, or `catch_up` has passed. Only transfers the core says it booked
(`POST /transfers/status`) are waited for: a key it does not know will never come (remit only, at once). What
is still missing at the end is reported as in remit only; the count of transfers waited for in vain is
returned as `core_journal_awaited`.
"""

import re
import ssl
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

import httpx
import pyarrow.parquet as pq

from reconciliation.config import CoreTls
from reconciliation.snapshot import CORE_JOURNAL, PROCESSED_MESSAGES, halves

PAGE_SIZE: Final = 5000  # the core's largest page
STATUS_CHUNK: Final = 1000  # keys per status query: the reference core's limit
_KEY = re.compile(
    r"([a-z0-9][a-z0-9_-]{1,31}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?::([2-9]|[1-9][0-9]+))?"
)


class CoreJournalError(RuntimeError):
    """The core's export could not be read (unreachable, an error answer, or a page not in its contract)."""


def split_key(key: str) -> tuple[str, str] | None:
    """(tenant_id, message_id) of a key in remit's form, whatever its generation; None for another channel's key."""
    match = _KEY.fullmatch(key)
    return (match.group(1), match.group(2)) if match else None


def remit_key(tenant_id: str, message_id: str, generation: int | None) -> str:
    """The key remit booked a payment under (app/consumer/core_keys.py): generation 1 (or none recorded) is
    `<tenant_id>:<message_id>`."""
    return (
        f"{tenant_id}:{message_id}"
        if generation is None or generation <= 1
        else f"{tenant_id}:{message_id}:{generation}"
    )


def _rows(transfers: list[dict[str, Any]], until: datetime) -> tuple[list[dict[str, Any]], int, set[str]]:
    """remit's transfers of a page as rows, the other channels' count, and the keys the rows came under."""
    rows, foreign, keys = [], 0, set()
    for t in transfers:
        key = split_key(str(t["idempotency_key"]))
        booked_at = datetime.fromisoformat(str(t["booked_at"]))
        if key is None:
            foreign += 1
        elif booked_at <= until:
            keys.add(str(t["idempotency_key"]))
            rows.append(
                {"tenant_id": key[0], "message_id": key[1], "transfer_id": str(t["transfer_id"]),
                 "amount_cents": int(t["amount_cents"]), "currency": str(t["currency"]), "booked_at": booked_at}
            )  # fmt: skip
    return rows, foreign, keys


def _get_json(client: httpx.Client, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    try:
        response = client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise CoreJournalError(f"cannot reach the core at {client.base_url}: {type(exc).__name__}") from exc
    if response.status_code != 200:
        raise CoreJournalError(f"the core answered {method} {path} with {response.status_code}: {response.text[:200]}")
    body: dict[str, Any] = response.json()
    return body


def _page(client: httpx.Client, after: str) -> dict[str, Any]:
    page = _get_json(client, "GET", "/journal", params={"after": after, "limit": PAGE_SIZE})
    if not isinstance(page.get("transfers"), list) or not isinstance(page.get("cursor"), str):
        raise CoreJournalError("the core's journal export answered a page without transfers and cursor")
    return page


def _booked(client: httpx.Client, keys: set[str]) -> set[str]:
    """Those of the keys the core says it booked (or is booking): the only ones its export will still show."""
    ordered, booked = sorted(keys), set[str]()
    for start in range(0, len(ordered), STATUS_CHUNK):
        chunk = ordered[start : start + STATUS_CHUNK]
        results = _get_json(client, "POST", "/transfers/status", json={"idempotency_keys": chunk})["results"]
        booked.update(r["idempotency_key"] for r in results if r["status"] in ("booked", "in_progress"))
    return booked


def _credential(token: str | None) -> dict[str, str]:
    """The bearer token the core gave remit (docs/core-banking.md, "Authentication"), on every request."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def _verify(tls: CoreTls | None) -> ssl.SSLContext | bool:
    """The core's certificate verified with its CA file (else the default trust store), and remit's client
    certificate presented where the core requires mutual TLS."""
    if tls is None or (tls.ca_file is None and tls.client_cert_file is None):
        return True
    context = ssl.create_default_context(cafile=tls.ca_file)
    if tls.client_cert_file is not None:
        context.load_cert_chain(tls.client_cert_file, tls.client_key_file)
    return context


def awaited_keys(snapshot_dir: Path) -> set[str]:
    """The core's keys of every transfer remit's snapshot recorded (its idempotency records with a core id), each
    under the key generation it was booked with."""
    columns = ["tenant_id", *halves("message_id"), "core_transfer_id", "core_key_generation"]
    records = pq.read_table(PROCESSED_MESSAGES.path(snapshot_dir), columns=columns)
    recorded = PROCESSED_MESSAGES.to_rows(records.filter(records["core_transfer_id"].is_valid()))
    return {remit_key(r["tenant_id"], r["message_id"], r["core_key_generation"]) for r in recorded}


def export_core_journal(
    core_url: str,
    as_of: datetime,
    grace: timedelta,
    snapshot_dir: Path,
    catch_up: timedelta = timedelta(minutes=2),
    timeout: float = 60.0,
    token: str | None = None,
    tls: CoreTls | None = None,
) -> dict[str, int]:
    """Write `<snapshot_dir>/core_journal.parquet` (after remit's snapshot, which it reads for the keys to
    wait for); returns its row count, the foreign transfers left out and the awaited ones that never came."""
    until = as_of + grace
    awaited = awaited_keys(snapshot_dir)
    deadline = time.monotonic() + catch_up.total_seconds()
    kept = foreign = 0
    asked = False
    after = "0.0"
    with (
        httpx.Client(base_url=core_url, timeout=timeout, headers=_credential(token), verify=_verify(tls)) as client,
        pq.ParquetWriter(CORE_JOURNAL.path(snapshot_dir), CORE_JOURNAL.arrow_schema(), compression="snappy") as writer,
    ):
        while True:
            page = _page(client, after)
            rows, skipped, keys = _rows(page["transfers"], until)
            if rows:
                writer.write_table(CORE_JOURNAL.to_arrow(rows))
                awaited.difference_update(keys)
            kept, foreign = kept + len(rows), foreign + skipped
            after = page["cursor"]
            if page.get("has_more"):
                continue
            if awaited and not asked:
                awaited, asked = _booked(client, awaited), True
            if not awaited or time.monotonic() >= deadline:
                return {CORE_JOURNAL.name: kept, f"{CORE_JOURNAL.name}_foreign": foreign,
                        f"{CORE_JOURNAL.name}_awaited": len(awaited)}  # fmt: skip
            time.sleep(1.0)  # a transaction still running on the core's server holds the rest back
