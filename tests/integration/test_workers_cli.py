"""`remit workers status` tells the truth: a pool that should run while no consumer process serves it is a
warning and exit 1 (not a quiet "processes 0"); a tenant it does not know is an error naming the known ones."""

from pathlib import Path

import pytest

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.cli import remit
from tests.utils.services import ServiceEnv, ServiceProcess, eventually, free_port
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration


async def test_status_exits_1_with_a_warning_while_a_pool_that_should_run_has_no_process(
    own_database: str, vhost: str, logs_dir: Path
) -> None:
    env = ServiceEnv(own_database, vhost).env()
    code, out = await remit(env, "workers", "status")
    assert code == 1, out
    warning = out[out.index("warning:") :]
    for tier in ("free", "basic", "premium", "enterprise"):
        assert tier in warning
    assert "no consumer process" in warning

    # Stopped on purpose: nothing should run, nothing to warn about.
    assert (await remit(env, "workers", "stop"))[0] == 0
    code, out = await remit(env, "workers", "status")
    assert code == 0, out
    assert "warning" not in out

    # Running again, and served by a consumer process: exit 0 once it reported.
    assert (await remit(env, "workers", "start"))[0] == 0
    consumer = ServiceProcess.consumer(env, logs_dir / "consumer.log", port=free_port())
    try:

        async def healthy() -> bool:
            return (await remit(env, "workers", "status"))[0] == 0

        await eventually(healthy, timeout=60, poll=1.0)
    finally:
        consumer.stop()


async def test_status_of_an_unknown_tenant_is_an_error_with_a_did_you_mean(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    typo = tenant[:-1] + ("x" if tenant[-1] != "x" else "y")
    code, out = await remit(service_env.env(), "workers", "status", "--tenant", typo)
    assert code == 2, out
    assert f"--tenant {typo!r} is not a tenant; did you mean {tenant!r}" in " ".join(out.split())
