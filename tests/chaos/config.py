"""What a chaos run does: its seed, its size, and how many faults of each kind it injects."""

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

FAULT_KINDS = (
    "consumer_kill",
    "consumer_kill_at_commit",
    "relay_kill",
    "relay_kill_at_publish",
    "consumer_pause",
    "pg_terminate",
    "amqp_close",
    "broker_restart",
)


@dataclass
class ChaosConfig:
    seed: int
    logs: Path
    tenants: int = 4
    batches: int = 16  # submitted across the fault window
    rows_per_batch: int = 200
    consumers: int = 2
    fault_window: float = 60.0  # seconds over which faults and batches are spread
    faults: Mapping[str, int] = field(default_factory=dict)  # kind -> how many
    pause_seconds: tuple[float, float] = (2.0, 5.0)
    broker_down_seconds: tuple[float, float] = (1.0, 5.0)
    settle_timeout: float = 90.0
    transient_rate: float = 0.02
    closed_share: float = 0.01
    outage_share: float = 0.005
    flaky_share: float = 0.02
    expired_batches: int = 1  # batches submitted with a past timestamp: they expire before delivery
    keep_on_failure: bool = True  # keep the database and vhost for a post-mortem when the check fails
    drill: bool = True  # afterwards, break the ledger in known ways (rolled back): the check must notice each


def short_faults() -> dict[str, int]:
    """The short run's plan: a few of each kind the test suite may inject (no broker restart)."""
    return {
        "consumer_kill": 6,
        "consumer_kill_at_commit": 3,
        "relay_kill": 2,
        "relay_kill_at_publish": 2,
        "consumer_pause": 2,
        "pg_terminate": 2,
        "amqp_close": 2,
    }


def new_seed() -> int:
    return secrets.randbelow(2**31)
