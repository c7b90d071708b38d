"""`remit db upgrade`, the prestart step, on the real server: what it tells an operator about the server."""

import asyncpg
import pytest

from app.cli.db import NO_AUTOVACUUM, prestart
from app.settings import Settings, owner_url

pytestmark = pytest.mark.integration


async def test_prestart_warns_when_the_server_runs_no_autovacuum(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = await asyncpg.connect(owner_url(settings).replace("+asyncpg", ""))
    try:
        autovacuum = await conn.fetchval("SHOW autovacuum")
    finally:
        await conn.close()

    await prestart(settings, create=False)

    out, err = capsys.readouterr()
    assert "database migrated to head" in out
    warned = " ".join(NO_AUTOVACUUM.split()) in " ".join(err.split())  # as rich wrapped it
    assert warned == (autovacuum != "on")
    assert "autovacuum" not in out  # a warning, on stderr: scripts reading stdout see one line
