"""Bank-file reading: peak memory and rows per second of a fresh process reading a file of each format, at a
size and at ten times that size (the large ones a few hundred MB). Memory must not grow with the file.

`.venv/bin/python bench/bankfile_memory_bench.py [--scale 1.0] [--no-write]`: files are written to a
temporary directory (about 1 GB in all at --scale 1) and removed afterwards; the result replaces the
`## Bank-file reading` section of docs/benchmarks.md. Needs no broker or database.
"""

import argparse
import tempfile
from pathlib import Path

import _report as r

from tests.utils.bankfile_samples import peak_reading, write_sample

# About 290 MB each, except ABA: its file total counts detail records in six digits (999,999 at most, 116 MB).
LARGE = {"pain.001": 700_000, "aba": 999_999, "csv": 4_000_000}


def measure(directory: Path, fmt: str, rows: int) -> tuple[float, dict[str, float]]:
    path = directory / f"{rows}.{fmt}"
    write_sample(path, fmt, rows)
    size_mb = path.stat().st_size / 2**20
    result = peak_reading(path)
    path.unlink()
    if result["rows"] != rows:
        raise SystemExit(f"{fmt}: read {result['rows']} rows of {rows}")
    return size_mb, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the number of rows of every file")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    machine = r.machine_details(servers="no broker or database involved")
    lines = [
        "| format | rows | file MB | peak RSS MB | seconds | rows/s |",
        "|---|---|---|---|---|---|",
    ]
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="remit-bankfiles-") as tmp:
        for fmt, large in LARGE.items():
            peaks = []
            for rows in (int(large * args.scale / 10), int(large * args.scale)):
                size_mb, result = measure(Path(tmp), fmt, rows)
                peaks.append(result["peak_mb"])
                rate = rows / result["seconds"]
                lines.append(
                    f"| {fmt} | {rows:,} | {size_mb:,.0f} | {result['peak_mb']:.1f} | {result['seconds']:.1f} | "
                    f"{rate:,.0f} |"
                )
                print(lines[-1], flush=True)
            growth = peaks[1] - peaks[0]
            verdicts.append(
                f"- {fmt}: peak RSS {peaks[0]:.1f} MB -> {peaks[1]:.1f} MB ({growth:+.1f} MB) for 10x the file"
            )
    text = (
        f"{machine}\n\n`.venv/bin/python bench/bankfile_memory_bench.py --scale {args.scale}`: each file is read to "
        "its end by `app.bankfiles.BankFile` in a fresh process (format told by content, pain.001 validated against "
        "its XSD while streaming); peak RSS is the process's VmHWM.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + "\n".join(verdicts)
    )
    text = r.with_notes(text, "bankfile_memory")
    print(text)
    if not args.no_write:
        r.write_section("Bank-file reading", text)
        print(f"wrote the Bank-file reading section of {r.DOC}")


if __name__ == "__main__":
    main()
