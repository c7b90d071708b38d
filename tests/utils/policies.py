"""Replay and retention policies with the defaults remit documents (README: REMIT_REPLAY_BUDGET 3,
REMIT_RETENTION_DAYS 30, REMIT_REPLAY_WINDOW_DAYS 7, retry delays 1/5/30 s, TTL one day), written out here
rather than read from the code under test."""

from typing import Any

from app.deadletters.replay import ReplayPolicy
from app.deadletters.retention import RetentionPolicy


def replay_policy(**changes: Any) -> ReplayPolicy:
    return ReplayPolicy(**{"budget": 3, "retention_days": 30, **changes})


def retention_policy(**changes: Any) -> RetentionPolicy:
    defaults: dict[str, Any] = {
        "days": 30,
        "replay_window_days": 7,
        "retry_delays_seconds": (1.0, 5.0, 30.0),
        "default_ttl_seconds": 86_400,
        "batch_size": 1000,
    }
    return RetentionPolicy(**{**defaults, **changes})
