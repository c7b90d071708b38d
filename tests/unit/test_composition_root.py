"""Importing remit builds nothing: no broker, no engine, no connection, no Settings read. Only asking for
`app.main:app` (what `faststream run` does) builds the consumer, from Settings."""

import subprocess
import sys
from pathlib import Path

from tests.utils.services import free_port

ROOT = Path(__file__).resolve().parents[2]
TRIPWIRES = """
import aio_pika, faststream.rabbit, sqlalchemy.ext.asyncio

def built(*args, **kwargs):
    raise AssertionError("built at import time")

faststream.rabbit.RabbitBroker.__init__ = built
sqlalchemy.ext.asyncio.create_async_engine = built
aio_pika.connect_robust = built
"""


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )


def test_importing_every_entry_point_builds_nothing() -> None:
    imports = (
        "import app.main, app.deadletters.archiver_app, app.admin.app, app.cli.remit, app.bootstrap, "
        "app.specification\n"
    )
    check = "from app.settings import get_settings\nassert get_settings.cache_info().currsize == 0, 'Settings read'\n"
    result = _python(TRIPWIRES + imports + check)
    assert result.returncode == 0, result.stderr


def test_asking_for_the_app_builds_it_from_settings() -> None:
    result = _python(TRIPWIRES + "import app.main\napp.main.app\n", REMIT_AMQP_URL="amqp://x:y@127.0.0.1:1/v")
    assert "built at import time" in result.stderr  # the broker, built on demand: the tripwire fires


def test_a_service_that_does_not_answer_exits_75_with_one_line() -> None:
    port = free_port()  # nothing listens there
    env = {
        "PATH": "/usr/bin:/bin",
        "REMIT_RABBITMQ_MANAGEMENT_URL": f"http://guest:guest@127.0.0.1:{port}",
        "REMIT_DATABASE_URL": f"postgresql+asyncpg://remit_app@127.0.0.1:{port}/remit",
        "COLUMNS": "300",
    }
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "queues", "list"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 75  # EX_TEMPFAIL: the same command may work later
    assert result.stderr.startswith(("error: RabbitMQ management API at ", "error: PostgreSQL at ")), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
