"""Logging set-up shared by every remit process."""

import logging
import os


def configure_logging(level: str | None = None) -> None:
    logging.basicConfig(
        level=(level or os.environ.get("REMIT_LOG_LEVEL", "INFO")).upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
