"""`remit archiver`: run the dead-letter archiver (payments.dlq into PostgreSQL)."""

import os
import sys


def archiver_command() -> None:
    """Run the dead-letter archiver (same as `faststream run app.deadletters.archiver_app:app`).

    Example: remit archiver
    """
    args = ["faststream", "run", "app.deadletters.archiver_app:app"]
    os.execvp(sys.executable, [sys.executable, "-m", *args])  # noqa: S606 - replace this process, no shell
