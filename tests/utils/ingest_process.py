"""Submit a bank file from a fresh Python process and measure it: rows accepted, seconds, peak RSS (tests, bench).

A separate process, so that its peak resident memory is the ingest's alone; VmHWM rather than ru_maxrss,
which survives exec and would report the parent's size when that is larger.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
_INGEST = """
import asyncio, json, resource, sys, time
from pathlib import Path
from app.resources import uow_factory_for
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.engine import make_engine

async def main() -> dict:
    settings = Settings()
    engine = make_engine(settings.database_url, pool_size=1)
    try:
        started = time.perf_counter()
        result = await submit_batch(SubmitBatch(sys.argv[1], Path(sys.argv[2])), uow_factory_for(engine), settings)
        seconds = time.perf_counter() - started
    finally:
        await engine.dispose()
    return {"accepted": result.accepted, "rejected": result.rejected_count, "batch": result.correlation_id,
            "seconds": seconds}

out = asyncio.run(main())
status = Path("/proc/self/status").read_text()
out["peak_mb"] = int(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1]) / 1024
# A large pain.001 is read in a child process (app/bankfiles/reader_process.py): the largest child's peak.
out["child_peak_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(out))
"""


def ingest_in_process(database_url: str, tenant: str, path: Path, **settings: str) -> dict[str, float]:
    """Submit `path` for `tenant` as `remit submit` would (REMIT_* settings from the keyword arguments)."""
    env = {**os.environ, "REMIT_DATABASE_URL": database_url, **{f"REMIT_{k.upper()}": v for k, v in settings.items()}}
    done = subprocess.run(
        [sys.executable, "-c", _INGEST, tenant, str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def reader_children() -> list[int]:
    """Pids of this process's living children that read a bank file (app/bankfiles/reader_child.py)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        fields = stat.rpartition(")")[2].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"app.bankfiles.reader_child" in command:
            found.append(int(entry.name))
    return found
