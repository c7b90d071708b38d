"""Issue 36, item 1: what a request body costs the admin process before its caller is known, measured on
`python -m app.admin` as a real process from outside (tests/utils/edge_attacks.py): its resident memory, the
bytes it read, and the bytes it put on disk under its own temporary directory (unlinked spool files included).

Every route bounds what it reads before it knows the caller: a body declared over the route's limit is
answered 413 before any of it is read, one sent chunked is cut at the limit, an upload is read only after
authentication, and a refused upload leaves nothing on disk.
"""

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import hidden, log_in, start_admin, tenant_key, wait_healthy
from tests.utils.edge_attacks import MIB, Answer, ProcessCost, multipart_parts, send_body
from tests.utils.services import ServiceEnv, ServiceProcess
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration

LIMITS = Settings()
SMALL = LIMITS.admin_max_request_bytes
UPLOAD = LIMITS.admin_max_upload_bytes
HUGE = 200 * MIB
BIG = 100 * MIB
BOUNDARY = "remit-attack-boundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
# What the process may grow by, read, or hold while it refuses a body: its own buffers and a request's
# objects, far below any body it refuses (kernel socket buffers on loopback can hold a few MiB in flight).
GROWTH = 16 * MIB
READ_BEFORE_ANSWER = 4 * MIB
# uvicorn takes what has arrived before the app asks (up to its 64 KiB buffer, then one socket read of up to
# 256 KiB): a body the app never reads still costs the process that much of a read, no more.
UVICORN_READ_AHEAD = 512 * 1024


@pytest.fixture
def admin_tmp(tmp_path: Path) -> Path:
    folder = tmp_path / "admin-tmp"
    folder.mkdir()
    return folder


@pytest.fixture
def admin(service_env: ServiceEnv, logs_dir: Path, admin_tmp: Path) -> Iterator[ServiceProcess]:
    process = start_admin(service_env.env(TMPDIR=str(admin_tmp)), logs_dir / "admin.log")
    yield process
    process.stop()


async def started(admin: ServiceProcess) -> str:
    base = f"http://127.0.0.1:{admin.port}"
    await wait_healthy(base)
    async with httpx.AsyncClient(base_url=base) as client:  # warm the process up: imports, first pages
        for path in ("/openapi.json", "/console/login", "/healthz"):
            await client.get(path)
    return base


async def login_cookie(base: str) -> dict[str, str]:
    """The login form's own cookie, which a login needs before its form is read at all."""
    async with httpx.AsyncClient(base_url=base) as client:
        await client.get("/console/login")
        return {"Cookie": "; ".join(f"{name}={value}" for name, value in client.cookies.items())}


def refused_too_large(answer: Answer, what: str) -> None:
    assert answer.status == 413, (what, answer)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_an_unauthenticated_200_mib_body_costs_neither_memory_nor_reading(
    admin: ServiceProcess, admin_tmp: Path, chunked: bool
) -> None:
    base = await started(admin)
    assert admin.port is not None
    login = await login_cookie(base)
    attacks = {
        "JSON command": ("/v1/dead-letters/replay", "application/json", {}, b'{"ids": [1], "why": "', b'"}'),
        "console login": ("/console/login", "application/x-www-form-urlencoded", login, b"api_key=rk_a_b&x=", b""),
    }
    for what, (path, content_type, headers, head, tail) in attacks.items():
        async with ProcessCost(admin.proc.pid, admin_tmp) as cost:
            answer = await send_body(
                admin.port,
                path,
                HUGE,
                content_type=content_type,
                headers=headers,
                head=head,
                tail=tail,
                filler=b"A",
                chunked=chunked,
            )
        print(
            f"{what} {'chunked' if chunked else 'declared'}: {answer.status}, sent {answer.sent / MIB:.1f} MiB; "
            f"{cost.describe()}"
        )
        refused_too_large(answer, what)
        assert cost.rss_growth < GROWTH, (what, cost.describe())
        assert cost.read < READ_BEFORE_ANSWER, (what, cost.describe())
        assert answer.sent < HUGE / 4, (what, answer.sent)  # answered long before the body was sent
        assert answer.headers.get("connection") == "close", (what, answer.headers)  # nothing more is read
        if not chunked:  # refused before the app read any of it: what uvicorn had buffered, and a page's template
            assert cost.read < UVICORN_READ_AHEAD, (what, cost.describe())


async def test_unauthenticated_uploads_put_nothing_on_disk(admin: ServiceProcess, admin_tmp: Path) -> None:
    """A multipart part with a filename is spooled to a temporary file by whoever parses the form: without a
    caller, nothing may parse it."""
    base = await started(admin)
    assert admin.port is not None
    head, tail = multipart_parts(BOUNDARY, {"csrf_token": "x", "login_token": "x", "api_key": "rk_a_b"}, "a.csv")
    attacks = {
        "/console/login": ({}, 403),  # no login cookie: refused unread
        "/console/login ": (await login_cookie(base), 413),  # with one: the form is read, up to the small limit
        "/console/batches": ({}, 303),  # no session: to the login page, unread
        "/console/replay": ({}, 303),
        "/v1/batches": ({}, 401),  # no key: refused unread
    }
    for path, (headers, status) in attacks.items():
        async with ProcessCost(admin.proc.pid, admin_tmp) as cost:
            answer = await send_body(
                admin.port,
                path.strip(),
                BIG,
                content_type=MULTIPART,
                headers=headers,
                head=head,
                tail=tail,
                chunked=True,
            )
        print(f"{path}: {answer.status}, sent {answer.sent / MIB:.1f} MiB; {cost.describe()}")
        assert answer.status == status, (path, answer)
        assert answer.headers.get("connection") == "close", (path, answer.headers)
        assert cost.disk_peak < MIB, (path, cost.describe())
        assert (cost.disk_after, cost.files_after) == (0, []), (path, cost.describe())
        assert cost.read < READ_BEFORE_ANSWER, (path, cost.describe())
        assert cost.rss_growth < GROWTH, (path, cost.describe())


async def test_a_tenants_chunked_100_mib_upload_is_refused_at_the_limit_and_leaves_nothing(
    admin: ServiceProcess, admin_tmp: Path, uow_factory: UnitOfWorkFactory
) -> None:
    """Chunked, the body has no Content-Length to check first: it is counted as it arrives and refused once
    it passes the upload limit, with the caller known (a tenant key, a console session)."""
    base = await started(admin)
    assert admin.port is not None
    tenant = await fresh_tenant(uow_factory)
    key = await tenant_key(uow_factory, tenant)
    async with httpx.AsyncClient(base_url=base) as client:
        await log_in(client, key)
        token = hidden((await client.get("/console/batches")).text, "csrf_token")
        cookie = "; ".join(f"{name}={value}" for name, value in client.cookies.items())

    bearer = {"Authorization": f"Bearer {key}"}
    form_head, form_tail = multipart_parts(BOUNDARY, {"csrf_token": token}, "big.csv")
    uploads = {
        "API multipart": ("/v1/batches", MULTIPART, bearer, form_head, form_tail),
        "API raw body": ("/v1/batches?filename=big.csv", "text/csv", bearer, b"", b""),
        "console": ("/console/batches", MULTIPART, {"Cookie": cookie}, form_head, form_tail),
    }
    for what, (path, content_type, headers, head, tail) in uploads.items():
        async with ProcessCost(admin.proc.pid, admin_tmp) as cost:
            answer = await send_body(
                admin.port, path, BIG, content_type=content_type, headers=headers, head=head, tail=tail, chunked=True
            )
        print(f"{what}: {answer.status}, sent {answer.sent / MIB:.1f} MiB; {cost.describe()}")
        refused_too_large(answer, what)
        assert cost.read < UPLOAD + 4 * MIB, (what, cost.describe())  # read up to the limit, not the body
        assert cost.disk_peak < UPLOAD + 2 * MIB, (what, cost.describe())
        assert (cost.disk_after, cost.files_after) == (0, []), (what, cost.describe())
        assert cost.rss_growth < GROWTH, (what, cost.describe())
        assert re.search(rb"larger than|Too Large", answer.body), (what, answer.body[:300])
