"""One SparkSession for the whole spark suite: starting Spark costs ~10 s, a DataFrame test ~1 s."""

import asyncio
import logging
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import create_async_engine


def _require_pyspark() -> None:
    """Skip the Spark suite where pyspark is missing, but never under CI=true: there it must fail loudly,
    or a broken install would pass CI with the whole reconciliation suite unrun."""
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        message = f"pyspark does not import ({exc}): install the spark extra (scripts/setup.sh does)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {message}", pytrace=False)
        pytest.skip(message, allow_module_level=True)


_require_pyspark()

from pyspark.sql import SparkSession  # noqa: E402

import tests.hypothesis_profiles  # noqa: E402, F401  (mutmut runs the driver's tests here: its `mutation` profile)
from app.storage.tables import metadata as app_metadata  # noqa: E402
from reconciliation.job import build_spark  # noqa: E402
from reconciliation.tables import metadata as recon_metadata  # noqa: E402

# spark-submit machinery inside pyspark finds SPARK_HOME through `python3` on PATH: use the venv's.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_spark(
        {
            "spark.master": "local[1]",
            "spark.sql.shuffle.partitions": "1",
            "spark.default.parallelism": "1",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "1g",
            "spark.sql.adaptive.enabled": "false",  # tiny inputs: planning rounds cost more than they save
        }
    )
    session.sparkContext.setLogLevel("ERROR")
    # py4j logs each connection it closes at INFO, the last ones from `__del__` at interpreter exit, after
    # pytest has closed the streams a test's logging setup pointed at ("--- Logging error ---" after the run).
    logging.getLogger("py4j").setLevel(logging.WARNING)
    yield session
    session.stop()


SERVER = os.environ.get("REMIT_TEST_POSTGRES", "postgresql://root@127.0.0.1:5432/postgres")


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(SERVER, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _create_schema(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(app_metadata.create_all)
        await conn.run_sync(recon_metadata.create_all)
    await engine.dispose()


@pytest.fixture
def database() -> Iterator[str]:
    """A throwaway database with the app's and reconciliation's tables; dropped afterwards."""
    name = f"recon_test_{secrets.token_hex(4)}"
    try:
        asyncio.run(_admin(f"CREATE DATABASE {name}"))
    except (OSError, asyncpg.PostgresError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL unreachable in CI: {exc}")
        pytest.skip(f"PostgreSQL unreachable: {exc}")
    url = SERVER.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://") + f"/{name}"
    try:
        asyncio.run(_create_schema(url))
        yield url
    finally:
        asyncio.run(_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


# The reference core for the three-way tests (imported here, below the Spark set-up, as the tests need it).
from tests.utils.corebank import CoreBank, create_corebank_database, start_corebank, wait_ready  # noqa: E402
from tests.utils.services import drop_database  # noqa: E402


@pytest.fixture
def core(tmp_path: Path) -> Iterator[CoreBank]:
    """The reference core as a real process with its own fresh database (tests/utils/corebank.py)."""
    database_url = asyncio.run(create_corebank_database())
    running = start_corebank(database_url, tmp_path / "corebank.log", faults=False)
    try:
        asyncio.run(wait_ready(running))
        yield running
    finally:
        running.process.stop()
        asyncio.run(drop_database(database_url))
