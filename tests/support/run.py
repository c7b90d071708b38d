"""Start a remit process as production does, with fault hooks injected through app/bootstrap.py's Ports:

    python -m tests.support.run consumer --port 8123 --kill-after-commits 3
    python -m tests.support.run consumer --port 8123 --kill-after-core 2
    python -m tests.support.run consumer --port 8123 --kill-after-dead-letters 5
    python -m tests.support.run relay --kill-after-publishes 1

Settings come from the environment as always; only the hooks differ from `faststream run app.main:app` and
`remit relay`, and the consumer's core banking when a TEST_CORE_* variable sets failure rules
(tests/support/core.py). The crash tests, the chaos rig and the tests that need failing accounts use it;
production code has no kill points and no simulator.
"""

import argparse
import asyncio
import logging

import anyio

from app.bootstrap import Hook, Ports, no_hook
from app.cli.relay import run_relay
from app.logs import configure_logging
from app.main import create_app
from app.settings import get_settings
from tests.support.core import core_from_environment
from tests.support.faults import KillAfter


def kill_after(point: str, count: int | None) -> Hook:
    return KillAfter(point, count) if count else no_hook


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.support.run")
    roles = parser.add_subparsers(dest="role", required=True)
    consumer = roles.add_parser("consumer")
    consumer.add_argument("--port", type=int, required=True)
    consumer.add_argument("--kill-after-commits", type=int, metavar="N")
    consumer.add_argument(
        "--kill-after-core", type=int, metavar="N", help="after the core's N-th answer, before commit"
    )
    consumer.add_argument(
        "--kill-after-dead-letters", type=int, metavar="N", help="after its N-th dead letter is out, before the ack"
    )
    relay = roles.add_parser("relay")
    relay.add_argument("--kill-after-publishes", type=int, metavar="N")
    args = parser.parse_args()
    settings = get_settings()
    if args.role == "consumer":
        ports = Ports(
            core_banking=core_from_environment(),
            after_commit=kill_after("after commit, before ack", args.kill_after_commits),
            after_core=kill_after("after the core booked, before remit's commit", args.kill_after_core),
            after_dead_letter=kill_after(
                "after a dead letter was published, before its ack", args.kill_after_dead_letters
            ),
        )
        app = create_app(settings, ports)
        anyio.run(app.run, logging.INFO, {"port": args.port})  # what `faststream run app.main:app --port N` does
    else:
        configure_logging(settings.log_level, settings.log_format)
        ports = Ports(after_publish=kill_after("after publish, before mark", args.kill_after_publishes))
        asyncio.run(run_relay(settings, ports, once=False))


if __name__ == "__main__":
    main()
