"""Helpers for the bank-file tests: write bytes to a file, read it back whole (files here are small)."""

from collections.abc import Callable
from pathlib import Path

import pytest

from app.bankfiles import BankFile, BankRow, FileSummary

Read = Callable[..., tuple[list[BankRow], FileSummary]]


@pytest.fixture
def read(tmp_path: Path) -> Read:
    def read(
        data: bytes, bank_format: str | None = None, name: str = "upload.bin"
    ) -> tuple[list[BankRow], FileSummary]:
        path = tmp_path / name
        path.write_bytes(data)
        with BankFile(path, bank_format) as bank:
            rows = list(bank.rows())
            return rows, bank.summary

    return read
