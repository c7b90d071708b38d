"""A long outage of the external core under load (issue 14, item 3): the core is SIGKILLed and stays down for
--outage seconds (default 600) while payments keep arriving, then restarts on its own database.

Same rig and end checks as the chaos runs (tests/chaos/core_run.py) with one fault only: remit's circuit
breaker must open, the consumers pause and the broker keeps the payments; when the core is back the breaker
closes by itself and every payment is booked exactly once. The checks: one transfer in the core per payment,
debits = credits per currency, every balance = opening + credits - debits, remit's records = the core's
journal, no dead letter at all (so no `retries_exhausted`), nothing left in a queue. The payments' TTL is a
day, longer than the outage: none may expire. The counts go to docs/reliability.md (between the core_outage
markers).

    .venv/bin/python bench/core_outage.py                         # 10 minutes down, about 12 minutes in all
    .venv/bin/python bench/core_outage.py --outage 60 --publish 120 --payments 1200 --no-write   # a quick look

Exit code 0 when every check held, 1 otherwise (the databases and the vhost are then kept).
"""

import argparse
import sys
import tempfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaos_core_long import core_config, results_block, run_and_report  # noqa: E402  (a sibling script)

from tests.chaos.config import new_seed  # noqa: E402
from tests.chaos.core_plan import CorePlan, Event  # noqa: E402
from tests.chaos.core_run import CoreChaosResult  # noqa: E402

MARKERS = ("<!-- BEGIN core_outage results -->", "<!-- END core_outage results -->")
HELD = (
    "Every check held: no dead letter (no `retries_exhausted`, nothing expired), exactly one transfer in the core "
    "per payment, debits = credits per currency, every balance = opening + credits - debits, remit's records = "
    "the core's journal, nothing left in a queue."
)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--outage", type=float, default=600.0, help="seconds the core stays down (default 600)")
    p.add_argument("--at", type=float, default=30.0, help="seconds after publishing starts that it goes down")
    p.add_argument("--payments", type=int, default=6_000)
    p.add_argument("--publish", type=float, default=660.0, help="seconds over which the payments are published")
    p.add_argument("--tenants", type=int, default=6)
    p.add_argument("--consumers", type=int, default=2)
    p.add_argument("--recover-timeout", type=float, default=600.0)
    p.add_argument("--logs", type=Path, default=Path(tempfile.gettempdir()) / "remit-core-outage")
    p.add_argument("--no-write", action="store_true", help="do not write docs/reliability.md")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    # The seed draws the payments' amounts and accounts; the plan is fixed: the one outage.
    plan = CorePlan(kills_at_core=(), events=(Event(at=args.at, kind="core_down", seconds=args.outage),))
    config = core_config(args, new_seed(), plan, args.at + args.outage)

    def render(result: CoreChaosResult, host: dict[str, str], when: datetime) -> str:
        what = (
            f"`.venv/bin/python bench/core_outage.py --outage {args.outage:g} --at {args.at:g} --payments "
            f"{args.payments} --publish {args.publish:g}`: {args.tenants} tenants, {args.consumers} consumers, "
            f"{args.payments} payments published over {args.publish:g} s; the core SIGKILLed {args.at:g} s in, "
            f"down for {args.outage:g} s, then restarted on its own database."
        )
        return results_block(MARKERS, result, when, host, what, HELD)

    return run_and_report(config, MARKERS, None if args.no_write else render)


if __name__ == "__main__":
    sys.exit(main())
