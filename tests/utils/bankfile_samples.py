"""Large bank files written as streams, and the peak memory of a separate process reading one (tests, bench)."""

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from tests.utils.bankfile_writers import PAIN_001_09, AbaDetail, AbaFile, Block, GroupHeader, Tx, write_pain001

ROOT = Path(__file__).parents[2]
CSV_HEADER = "payment_reference,amount_cents,currency,debtor_bsb,debtor_account,creditor_bsb,creditor_account\n"
_READ = """
import json, sys, time
from pathlib import Path
from app.bankfiles import BankFile
started = time.perf_counter()
with BankFile(Path(sys.argv[1])) as bank:
    rows = sum(1 for _ in bank.rows())
    summary = bank.summary
seconds = time.perf_counter() - started
# VmHWM, not ru_maxrss: ru_maxrss survives exec, so it would report the parent's size when that is larger.
status = Path("/proc/self/status").read_text()
peak_kb = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])
print(json.dumps({"rows": rows, "seconds": seconds, "peak_mb": peak_kb / 1024}))
"""


def write_sample(path: Path, fmt: str, rows: int) -> None:
    """A valid file of the format with rows payments, written without holding it."""
    with path.open("w", newline="") as out:
        if fmt == "pain.001":
            txs = (Tx(f"E2E-{n:010d}", "12.34", creditor_account=f"{10_000_000 + n % 89_999_999}") for n in range(rows))
            write_pain001(out, PAIN_001_09, GroupHeader("BIG-1", rows, str(Decimal("12.34") * rows)), [Block("B", txs)])
        elif fmt == "aba":
            out.write(AbaFile().descriptive() + "\r\n")
            for n in range(rows):
                out.write(AbaDetail("062-000", f"{10_000_000 + n % 89_999_999}", 1234, f"REF-{n}").record() + "\r\n")
            total = AbaFile([AbaDetail("062-000", "12345678", 1234, "X")])
            out.write(total.file_total(count=rows, credits=1234 * rows) + "\r\n")
        elif fmt == "csv":
            out.write(CSV_HEADER)
            for n in range(rows):
                out.write(f"PAY-{n:010d},1234,AUD,033-000,87654321,062-000,{10_000_000 + n % 89_999_999}\n")
        elif fmt == "jsonl":
            for n in range(rows):
                out.write(
                    f'{{"payment_reference": "PAY-{n:010d}", "amount_cents": 1234, "currency": "AUD", '
                    '"debtor_bsb": "033-000", "debtor_account": "87654321", "creditor_bsb": "062-000", '
                    f'"creditor_account": "{10_000_000 + n % 89_999_999}"}}\n'
                )
        else:
            raise ValueError(f"no sample writer for {fmt}")


def peak_reading(path: Path) -> dict[str, float]:
    """Rows read, seconds and peak RSS (MB) of a fresh Python process that reads the file to its end."""
    done = subprocess.run(
        [sys.executable, "-c", _READ, str(path)], cwd=ROOT, capture_output=True, text=True, check=True, timeout=3600
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result
