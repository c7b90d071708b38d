"""Bank-file ingest: rows per second of `remit submit` (app.publisher.accept.submit_batch, as the service's
role with row-level security on) for 100k and 1M rows of each format, as a ratio of a bare COPY of the same
number of rows (the same bodies) into the outbox, measured right after each ingest; and the peak RSS of the
ingest process, which must not grow with the file.

`.venv/bin/python bench/ingest_bench.py [--scale 1.0] [--formats csv,jsonl,pain.001,aba] [--no-write]`:
a fresh database, files in a temporary directory (about 1.3 GB in all at --scale 1, written one at a time and
removed after use); the outbox is emptied between measurements, so each starts from the same table. The
result replaces the `## Bank-file ingest` section of docs/benchmarks.md. Needs no broker.

The write path is measured on its own too (--write-path-rows, 0 to skip): the same rows inserted chunk by
chunk with INSERT ... SELECT FROM unnest(arrays), and COPY into a temporary table then INSERT ... SELECT,
both as remit_app (COPY into the outbox itself is refused under row-level security).
"""

import argparse
import asyncio
import itertools
import os
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import _report as r
import asyncpg

from tests.utils.bankfile_samples import write_sample
from tests.utils.ingest_process import ingest_in_process
from tests.utils.services import app_database_url

SIZES = (100_000, 1_000_000)
ABA_MOST = 999_999  # the ABA file total counts detail records in six digits
FORMATS = ("csv", "jsonl", "pain.001", "aba")
CHUNK = 5_000
COLUMNS = (
    "message_id",
    "tenant_id",
    "correlation_id",
    "seq",
    "payment_reference",
    "amount_cents",
    "currency",
    "body",
    "accepted_at",
    "expires_at",
    "row_number",
)
_UNNEST = f"""
    INSERT INTO outbox ({", ".join(COLUMNS)})
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[], $7::text[],
                         $8::bytea[], $9::timestamptz[], $10::timestamptz[], $11::int[])
"""


@dataclass(frozen=True, slots=True)
class Run:
    fmt: str
    rows: int
    file_mb: float
    seconds: float
    peak_mb: float
    copy_rate: float

    @property
    def rate(self) -> float:
        return self.rows / self.seconds

    @property
    def ratio(self) -> float:
        return self.rate / self.copy_rate


async def add_tenant(dsn: str, rows: int) -> str:
    """A tenant whose limits let one batch hold every row of the biggest file."""
    tenant = f"ingest_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "INSERT INTO tenants (tenant_id, name, tier, max_in_flight, publish_rate_per_second,"
            " publish_bytes_per_second) VALUES ($1::text, $1::text, 'enterprise', $2, $2, $3)",
            tenant,
            rows,
            rows * 1000,
        )
    finally:
        await conn.close()
    return tenant


async def bodies_of(dsn: str, batch: str) -> list[bytes]:
    conn = await asyncpg.connect(dsn)
    try:
        return [
            r["body"] for r in await conn.fetch("SELECT body FROM outbox WHERE correlation_id = $1 LIMIT 5000", batch)
        ]
    finally:
        await conn.close()


async def empty_outbox(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("TRUNCATE outbox, batch_rejections, batch_totals, batches CASCADE")
        await conn.execute("VACUUM ANALYZE outbox")
    finally:
        await conn.close()


def records(tenant: str, batch: str, bodies: list[bytes], start: int, n: int) -> list[tuple[object, ...]]:
    now = datetime.now(UTC)
    cycle = itertools.cycle(bodies)
    return [
        (uuid.uuid4(), tenant, batch, i, f"COPY-{i:012d}", 1234, "AUD", next(cycle), now, now + timedelta(days=1), i)
        for i in range(start, start + n)
    ]


async def bare_copy(dsn: str, rows: int, bodies: list[bytes]) -> float:
    """Rows per second of COPY into the outbox, one transaction, as the owner; building the rows is not timed."""
    tenant = await add_tenant(dsn, rows)
    batch = f"copy_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(dsn)
    elapsed = 0.0
    try:
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO batches (correlation_id, tenant_id, source_name, source_sha256, accepted_count,"
                " rejected_count) VALUES ($1::text, $2::text, 'copy', '', 0, 0)",
                batch,
                tenant,
            )
            for start in range(1, rows + 1, CHUNK):
                chunk = records(tenant, batch, bodies, start, min(CHUNK, rows + 1 - start))
                began = time.perf_counter()
                await conn.copy_records_to_table("outbox", records=chunk, columns=COLUMNS)
                elapsed += time.perf_counter() - began
    finally:
        await conn.close()
    return rows / elapsed


async def write_paths(env: r.BenchEnv, rows: int, bodies: list[bytes]) -> dict[str, float]:
    """Rows per second of the two ways remit_app can write the rows, and of the bare COPY, same rows."""
    rates = {"COPY into the outbox (owner, no row-level security)": await bare_copy(env.dsn, rows, bodies)}
    await empty_outbox(env.dsn)
    for name, write in (
        ("INSERT ... SELECT FROM unnest(arrays) (remit_app)", _write_unnest),
        ("COPY into a temporary table + INSERT ... SELECT (remit_app)", _write_via_temp),
    ):
        tenant = await add_tenant(env.dsn, rows)
        app = await asyncpg.connect(app_database_url(env.sqlalchemy_url).replace("+asyncpg", ""))
        elapsed = 0.0
        try:
            async with app.transaction():
                await app.execute(
                    "SELECT set_config('remit.scope', 'tenant', true), set_config('remit.tenant_id', $1, true)", tenant
                )
                batch = f"path_{uuid.uuid4().hex[:12]}"
                await app.execute(
                    "INSERT INTO batches (correlation_id, tenant_id, source_name, source_sha256, accepted_count,"
                    " rejected_count) VALUES ($1::text, $2::text, 'path', '', 0, 0)",
                    batch,
                    tenant,
                )
                for start in range(1, rows + 1, CHUNK):
                    chunk = records(tenant, batch, bodies, start, min(CHUNK, rows + 1 - start))
                    began = time.perf_counter()
                    await write(app, chunk)
                    elapsed += time.perf_counter() - began
        finally:
            await app.close()
        rates[name] = rows / elapsed
        await empty_outbox(env.dsn)
    return rates


async def _write_unnest(conn: asyncpg.Connection, chunk: list[tuple[object, ...]]) -> None:
    await conn.execute(_UNNEST, *(list(column) for column in zip(*chunk, strict=True)))


async def _write_via_temp(conn: asyncpg.Connection, chunk: list[tuple[object, ...]]) -> None:
    columns = ", ".join(COLUMNS)
    await conn.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS stage ON COMMIT DROP AS SELECT {columns} FROM outbox WITH NO DATA"
    )
    await conn.copy_records_to_table("stage", records=chunk, columns=COLUMNS)
    await conn.execute(f"INSERT INTO outbox ({columns}) SELECT {columns} FROM stage")
    await conn.execute("TRUNCATE stage")


async def measure(env: r.BenchEnv, directory: Path, fmt: str, rows: int) -> tuple[Run, list[bytes]]:
    path = directory / f"{rows}.{fmt}"
    write_sample(path, fmt, rows)
    file_mb = path.stat().st_size / 2**20
    tenant = await add_tenant(env.dsn, rows)
    result = await asyncio.to_thread(ingest_in_process, app_database_url(env.sqlalchemy_url), tenant, path)
    path.unlink()
    if (result["accepted"], result["rejected"]) != (rows, 0):
        raise SystemExit(f"{fmt}: accepted {result['accepted']}, rejected {result['rejected']} of {rows}")
    bodies = await bodies_of(env.dsn, str(result["batch"]))
    await empty_outbox(env.dsn)
    copy_rate = await bare_copy(env.dsn, rows, bodies)
    await empty_outbox(env.dsn)
    # The ingest's memory is its own plus its reader child's, when it has one (a large pain.001).
    peak = result["peak_mb"] + result.get("child_peak_mb", 0.0)
    return Run(fmt, rows, file_mb, result["seconds"], peak, copy_rate), bodies


async def run(args: argparse.Namespace) -> str:
    machine = r.machine_details()
    runs: list[Run] = []
    bodies: list[bytes] = []
    async with r.fresh_env("ingest") as env:
        with tempfile.TemporaryDirectory(prefix="remit-ingest-") as tmp:
            for fmt in args.formats.split(","):
                for size in SIZES:
                    rows = min(int(size * args.scale), ABA_MOST) if fmt == "aba" else int(size * args.scale)
                    found, bodies = await measure(env, Path(tmp), fmt, rows)
                    runs.append(found)
                    print(_row(found), flush=True)
        paths = await write_paths(env, args.write_path_rows, bodies) if args.write_path_rows else {}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return _text(machine, args, runs, paths, load)


def _row(x: Run) -> str:
    return (
        f"| {x.fmt} | {x.rows:,} | {x.file_mb:,.0f} | {x.seconds:,.1f} | {x.rate:,.0f} | {x.copy_rate:,.0f} | "
        f"{100 * x.ratio:.0f}% | {x.peak_mb:.0f} |"
    )


def _text(machine: str, args: argparse.Namespace, runs: list[Run], paths: dict[str, float], load: str) -> str:
    lines = [
        "| format | rows | file MB | seconds | rows/s | bare COPY rows/s | ratio | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|",
        *(_row(x) for x in runs),
    ]
    verdicts = []
    for fmt in dict.fromkeys(x.fmt for x in runs):
        small, large = (x for x in runs if x.fmt == fmt)
        growth = 100 * (large.peak_mb - small.peak_mb) / small.peak_mb
        memory_ok = abs(growth) <= 10 and large.peak_mb < 300
        speed_ok = min(small.ratio, large.ratio) >= 0.40
        speed = f"{100 * small.ratio:.0f}% / {100 * large.ratio:.0f}% of a bare COPY"
        memory = f"peak RSS {small.peak_mb:.0f} -> {large.peak_mb:.0f} MB ({growth:+.1f}%"
        verdicts.append(
            f"- {fmt}: {speed} ({'meets' if speed_ok else 'below'} the 40% goal); {memory}: "
            f"{'within' if memory_ok else 'outside'} 10% and under 300 MB)"
        )
    path_lines = ["", "Write path alone, the same rows (pre-built, only the writes timed):", ""]
    path_lines += [f"- {name}: {rate:,.0f} rows/s" for name, rate in paths.items()]
    return (
        f"{machine}  \nLoad average after the run: {load}.\n\n"
        f"`.venv/bin/python bench/ingest_bench.py --scale {args.scale} --formats {args.formats}`: each file is "
        "submitted by a fresh process (`submit_batch`, remit_app, row-level security on, chunks of "
        f"{CHUNK:,}); the bare COPY of as many rows with the same bodies runs right after it, as the owner, into "
        "the emptied outbox. Peak RSS is the ingest process's VmHWM plus its reader child's peak (a large "
        "pain.001 is read in a child process).\n\n"
        + "\n".join(lines)
        + "\n\n"
        + "\n".join(verdicts)
        + ("\n" + "\n".join(path_lines) if paths else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the number of rows of every file")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of " + ", ".join(FORMATS))
    parser.add_argument("--write-path-rows", type=int, default=200_000, help="rows of the write-path comparison")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    text = r.with_notes(asyncio.run(run(args)), "ingest")
    print(text)
    if not args.no_write:
        r.write_section("Bank-file ingest", text)
        print(f"wrote the Bank-file ingest section of {r.DOC}")


if __name__ == "__main__":
    main()
