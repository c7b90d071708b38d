"""API keys: `rk_<key_id>_<secret>`. The secret is random (256 bits), shown once and never stored; the
table keeps its SHA-256, which is enough for a high-entropy secret (no slow hash needed)."""

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, insert, select, update

from app.admin.caller import Caller
from app.errors import UsageError
from app.storage.tables import api_keys, tenants
from app.storage.unit_of_work import UnitOfWorkFactory

PREFIX = "rk"
KEY_ID_BYTES = 6
KEY_ID = re.compile(rf"[0-9a-f]{{{2 * KEY_ID_BYTES}}}")
TENANT = "tenant"
ADMIN = "admin"
ak = api_keys.c


@dataclass(frozen=True, slots=True)
class NewApiKey:
    key_id: str
    tenant_id: str | None
    role: str
    label: str | None
    key: str  # the whole key, secret included: print it once, then it is gone


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    key_id: str
    tenant_id: str | None
    role: str
    label: str | None
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def of(cls, row: Row[Any]) -> "ApiKeyInfo":
        return cls(row.key_id, row.tenant_id, row.role, row.label, row.created_at, row.revoked_at)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def split_key(presented: str) -> tuple[str, str] | None:
    """(key_id, secret) of a well-formed key; the secret may itself contain '_'."""
    parts = presented.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def key_id_of(presented: str) -> str | None:
    """The key id a presented key names, if it has the form of one (12 hex digits), whether or not such a
    key exists: the brake on guessing counts failures by it (app/admin/brake.py)."""
    parts = split_key(presented)
    return parts[0] if parts is not None and KEY_ID.fullmatch(parts[0]) else None


async def create_api_key(uow_factory: UnitOfWorkFactory, tenant_id: str | None, label: str | None) -> NewApiKey:
    """A tenant key (tenant_id given) or an admin key (None)."""
    key_id, secret = secrets.token_hex(KEY_ID_BYTES), secrets.token_urlsafe(32)
    role = ADMIN if tenant_id is None else TENANT
    async with uow_factory() as uow:
        if tenant_id is not None:
            known = select(tenants.c.tenant_id).where(tenants.c.tenant_id == tenant_id)
            if (await uow.connection.execute(known)).first() is None:
                raise UsageError(
                    f"unknown tenant {tenant_id!r}; add it first: remit tenants add {tenant_id} --name ..."
                )
        values = {"key_id": key_id, "tenant_id": tenant_id, "role": role, "key_hash": hash_secret(secret)}
        await uow.connection.execute(insert(api_keys).values(**values, label=label))
        await uow.commit()
    return NewApiKey(key_id, tenant_id, role, label, f"{PREFIX}_{key_id}_{secret}")


async def list_api_keys(uow_factory: UnitOfWorkFactory, tenant_id: str | None = None) -> list[ApiKeyInfo]:
    query = select(api_keys).order_by(ak.created_at, ak.key_id)
    if tenant_id is not None:
        query = query.where(ak.tenant_id == tenant_id)
    async with uow_factory() as uow:
        return [ApiKeyInfo.of(row) for row in (await uow.connection.execute(query)).all()]


async def revoke_api_key(uow_factory: UnitOfWorkFactory, key_id: str, now: datetime | None = None) -> bool:
    """Revoke a key at once (console sessions made with it end too). False if it was already revoked."""
    async with uow_factory() as uow:
        exists = (await uow.connection.execute(select(ak.revoked_at).where(ak.key_id == key_id))).one_or_none()
        if exists is None:
            raise UsageError(f"no API key {key_id!r}; `remit apikeys list` shows the ids")
        result = await uow.connection.execute(
            update(api_keys)
            .where(ak.key_id == key_id, ak.revoked_at.is_(None))
            .values(revoked_at=now or datetime.now(UTC))
        )
        await uow.commit()
    return bool(result.rowcount)


async def authenticate(uow_factory: UnitOfWorkFactory, presented: str) -> Caller | None:
    """The caller a presented key stands for; None if it is malformed, unknown, wrong or revoked."""
    parts = split_key(presented)
    if parts is None:
        return None
    key_id, secret = parts
    row = await _active_key(uow_factory, key_id)
    if row is None or not hmac.compare_digest(row.key_hash, hash_secret(secret)):
        return None
    return Caller(row.key_id, row.tenant_id, row.label)


async def caller_of_key(uow_factory: UnitOfWorkFactory, key_id: str) -> Caller | None:
    """The caller of a key already checked at login, while it is not revoked (console sessions)."""
    row = await _active_key(uow_factory, key_id)
    return None if row is None else Caller(row.key_id, row.tenant_id, row.label)


async def _active_key(uow_factory: UnitOfWorkFactory, key_id: str) -> Row[Any] | None:
    query = select(api_keys).where(ak.key_id == key_id, ak.revoked_at.is_(None))
    async with uow_factory() as uow:
        return (await uow.connection.execute(query)).one_or_none()
