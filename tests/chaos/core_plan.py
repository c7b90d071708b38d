"""Fault schedules for the chaos run against the external core, drawn by Hypothesis from a seed.

A plan is which faults, when and how many: the consumers armed to SIGKILL themselves between the core's
commit and remit's (`kills_at_core`, each at its n-th booking), and timed events:

drop_answers     the core drops its answers after committing (`rate` of them, for `seconds`)
core_down        the core is SIGKILLed, stays down `seconds`, restarts on the same database
consumer_kill    SIGKILL a consumer anywhere in its work (the supervisor restarts it)
kill_at_core     SIGKILL a consumer and restart it armed to SIGKILL itself after its `n`-th core answer
pg_terminate     pg_terminate_backend() every connection to remit's database
amqp_close       force-close every connection of remit's vhost (management API)
broker_restart   rabbitmqctl stop_app / start_app (the whole broker: long run only)
pg_restart       pg_ctlcluster restart (the whole PostgreSQL server, the core's database too: long run only)

`draw_plan(seed, ...)` replays: the same seed and shape give the same plan (Hypothesis with @seed, no example
database). The plan is drawn by running a cheap @given over the strategy and keeping one of its later examples: a
@given of the whole run with one example would always get Hypothesis's first, simplest example, and
shrinking a failure would rerun a two-minute test dozens of times.
"""

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

EVENT_KINDS = (
    "drop_answers",
    "core_down",
    "consumer_kill",
    "kill_at_core",
    "pg_terminate",
    "amqp_close",
    "broker_restart",
    "pg_restart",
)


@dataclass(frozen=True)
class Event:
    at: float  # seconds after the start of publishing
    kind: str
    seconds: float = 0.0  # drop_answers / core_down / broker_restart: how long
    rate: float = 0.0  # drop_answers: share of answers dropped
    n: int = 0  # kill_at_core: after how many answers of the core

    def __str__(self) -> str:
        extra = f" {self.seconds:.0f}s" if self.seconds else ""
        extra += f" rate {self.rate:.2f}" if self.rate else ""
        extra += f" after {self.n}" if self.n else ""
        return f"{self.at:.1f}s {self.kind}{extra}"


@dataclass(frozen=True)
class CorePlan:
    kills_at_core: tuple[int, ...]  # armed consumer starts: each SIGKILLs itself after its n-th core answer
    events: tuple[Event, ...] = field(default_factory=tuple)

    def count(self, kind: str) -> int:
        return sum(e.kind == kind for e in self.events)

    def __str__(self) -> str:
        arms = ", ".join(str(n) for n in self.kills_at_core)
        return f"kills at the core after answers [{arms}]; events: " + "; ".join(str(e) for e in self.events)


@dataclass(frozen=True)
class PlanShape:
    """How many of each fault a plan may hold (inclusive ranges) and when they may fall: in `windows[kind]` if
    given, else anywhere in (1 s, window)."""

    window: float
    counts: Mapping[str, tuple[int, int]]
    windows: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    kills_at_core: tuple[int, int] = (2, 4)
    core_down_seconds: tuple[float, float] = (30.0, 30.0)
    drop_seconds: tuple[float, float] = (3.0, 8.0)
    drop_rate: tuple[float, float] = (0.2, 0.5)
    broker_down_seconds: tuple[float, float] = (1.0, 5.0)


def short_shape() -> PlanShape:
    """CI's short form (payments published over 40 s): answers dropped early, then the core down for 30 s, and
    connection-level faults on remit's side (no server restart disrupts the machine's other work) anywhere,
    also while the backlog drains after the core is back."""
    return PlanShape(
        window=70.0,
        counts={
            "drop_answers": (1, 2),
            "core_down": (1, 1),
            "consumer_kill": (0, 2),
            "pg_terminate": (1, 3),
            "amqp_close": (1, 2),
        },
        windows={"drop_answers": (1.0, 8.0), "core_down": (12.0, 20.0)},
        drop_seconds=(3.0, 6.0),
    )


def long_shape(window: float, restarts: bool) -> PlanShape:
    """The long run (bench/chaos_core_long.py): many more of every fault, spread over `window`; with `restarts`,
    real RabbitMQ and PostgreSQL server restarts too."""
    counts = {
        "drop_answers": (6, 10),
        "core_down": (3, 4),
        "consumer_kill": (20, 30),
        "kill_at_core": (15, 25),
        "pg_terminate": (8, 12),
        "amqp_close": (6, 10),
    }
    if restarts:
        counts |= {"broker_restart": (3, 4), "pg_restart": (2, 3)}
    return PlanShape(window=window, counts=counts, kills_at_core=(2, 4), broker_down_seconds=(1.0, 8.0))


def _event(shape: PlanShape, kind: str) -> st.SearchStrategy[Event]:
    at = st.floats(*shape.windows.get(kind, (1.0, shape.window)), allow_nan=False)
    if kind == "drop_answers":
        seconds, rate = st.floats(*shape.drop_seconds), st.floats(*shape.drop_rate)
        return st.builds(Event, at=at, kind=st.just(kind), seconds=seconds, rate=rate)
    if kind == "core_down":
        return st.builds(Event, at=at, kind=st.just(kind), seconds=st.floats(*shape.core_down_seconds))
    if kind == "kill_at_core":
        return st.builds(Event, at=at, kind=st.just(kind), n=st.integers(1, 6))
    if kind == "broker_restart":
        return st.builds(Event, at=at, kind=st.just(kind), seconds=st.floats(*shape.broker_down_seconds))
    return st.builds(Event, at=at, kind=st.just(kind))


@st.composite
def core_plans(draw: st.DrawFn, shape: PlanShape) -> CorePlan:
    events: list[Event] = []
    for kind, (least, most) in shape.counts.items():
        events += draw(st.lists(_event(shape, kind), min_size=least, max_size=most))
    low, high = shape.kills_at_core
    kills = draw(st.lists(st.integers(1, 6), min_size=low, max_size=high))
    return CorePlan(tuple(kills), tuple(sorted(events, key=lambda e: e.at)))


def draw_plan(seed: int, shape: PlanShape, candidates: int = 60) -> CorePlan:
    """One plan from the strategy, the same for the same seed and shape."""
    drawn: list[CorePlan] = []

    @settings(
        max_examples=candidates,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis_seed(seed)
    @given(core_plans(shape))
    def collect(plan: CorePlan) -> None:
        drawn.append(plan)

    collect()
    # Hypothesis starts with its simplest examples and grows them: keep one from the later half.
    return random.Random(seed).choice(drawn[len(drawn) // 2 :])
