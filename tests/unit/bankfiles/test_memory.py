"""Reading a bank file takes the same memory whatever its size: measured as the peak RSS of a separate process
reading a file and one ten times larger. (bench/bankfile_memory_bench.py does the same with files of
hundreds of MB; docs/benchmarks.md has its numbers.)"""

from pathlib import Path

import pytest

from tests.utils.bankfile_samples import peak_reading, write_sample

# A reader that held the larger file would add at least its size (11-24 MB here), an lxml tree of its 20 MB
# of XML well over 100 MB. The growth allowed is less than the file itself.
MAX_GROWTH_MB = 8


@pytest.mark.parametrize(
    ("fmt", "small", "large"), [("pain.001", 5_000, 50_000), ("aba", 20_000, 200_000), ("csv", 20_000, 200_000)]
)
def test_peak_memory_does_not_grow_with_the_file(tmp_path: Path, fmt: str, small: int, large: int) -> None:
    peaks = {}
    for rows in (small, large):
        path = tmp_path / f"{rows}.{fmt}"
        write_sample(path, fmt, rows)
        result = peak_reading(path)
        assert result["rows"] == rows
        peaks[rows] = result["peak_mb"]
    larger_file_mb = (tmp_path / f"{large}.{fmt}").stat().st_size / 2**20
    assert larger_file_mb > MAX_GROWTH_MB  # holding the file alone would break the bound below
    assert peaks[large] - peaks[small] < MAX_GROWTH_MB, peaks
