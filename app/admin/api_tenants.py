"""Tenant administration over HTTP (admin keys only): the same TenantAdmin as `remit tenants ...`, so
the database record, the broker binding and the tenant's RabbitMQ user change together."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Response, status
from pydantic import BaseModel, Field
from sqlalchemy import Row

from app.admin.api_workers import AdminCaller
from app.admin.auth import Services
from app.admin.scope import uow_for
from app.admin.services import AdminServices
from app.messaging.connection import connect, vhost_of
from app.messaging.management import Management
from app.messaging.topology import Topology
from app.tenancy.admin import TenantAdmin, UnknownTenantError
from app.tenancy.tenants import AddTenant, list_tenants

router = APIRouter(prefix="/admin/tenants", tags=["tenants"])


@asynccontextmanager
async def tenant_admin(services: AdminServices) -> AsyncIterator[TenantAdmin]:
    """A TenantAdmin on the app's engine (system scope: only admin keys get here) and an AMQP connection
    for the bindings, opened for the one request (tenant changes are rare)."""
    settings = services.settings
    connection = await connect(settings.amqp_url, "remit-admin-tenants")
    try:
        yield TenantAdmin(
            uow_for(services.engine, None),
            connection,
            Topology.from_settings(settings),
            Management(settings.rabbitmq_management_url),
            vhost_of(settings.amqp_url),
        )
    except UnknownTenantError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc).split(";")[0]) from exc
    finally:
        await connection.close()


class TenantView(BaseModel):
    tenant_id: str
    name: str
    tier: str
    status: str
    dedicated_queue: bool
    default_ttl_seconds: int
    max_retries: int
    max_message_bytes: int
    publish_rate_per_second: int
    publish_bytes_per_second: int
    max_in_flight: int
    retention_days: int | None

    @classmethod
    def of(cls, row: Row[Any]) -> "TenantView":
        return cls(**{name: getattr(row, name) for name in cls.model_fields})


class CredentialsView(BaseModel):
    user: str
    password: str


class AddBody(BaseModel):
    tenant_id: str = Field(description="Lower case letters, digits, `_`, `-`; becomes the routing key.")
    name: str = Field(min_length=1, max_length=200)
    tier: str = "basic"
    default_ttl_seconds: int = Field(default=86_400, ge=1)


class Added(BaseModel):
    created: bool
    tenant: TenantView
    credentials: CredentialsView | None = Field(
        description="The tenant's RabbitMQ publisher login: shown only when the tenant is created, never again."
    )


class TierBody(BaseModel):
    tier: str


class TierChanged(BaseModel):
    tenant: TenantView
    queue: str


class LimitsBody(BaseModel):
    publish_rate_per_second: int | None = Field(default=None, ge=1)
    publish_bytes_per_second: int | None = Field(default=None, ge=1)
    max_in_flight: int | None = Field(default=None, ge=1)
    max_message_bytes: int | None = Field(default=None, ge=512)
    default_ttl_seconds: int | None = Field(default=None, ge=1)


@router.get("")
async def list_(caller: AdminCaller, services: Services) -> list[TenantView]:
    """Every tenant with its tier, status and limits."""
    return [TenantView.of(row) for row in await list_tenants(uow_for(services.engine, None))]


@router.post("", status_code=status.HTTP_201_CREATED)
async def add(caller: AdminCaller, services: Services, body: AddBody, response: Response) -> Added:
    """Create a tenant: record, binding, and its RabbitMQ publisher (the password is returned only now).
    Adding an existing tenant changes nothing and answers 200 without credentials."""
    async with tenant_admin(services) as admin:
        command = AddTenant(body.tenant_id, body.name, body.tier, body.default_ttl_seconds)
        created, credentials = await admin.add(command)
        row = await admin.show(body.tenant_id)
    if not created:
        response.status_code = status.HTTP_200_OK
    shown = CredentialsView(user=credentials.user, password=credentials.password) if credentials else None
    return Added(created=created, tenant=TenantView.of(row), credentials=shown)


@router.get("/{tenant_id}")
async def show(caller: AdminCaller, services: Services, tenant_id: str) -> TenantView:
    async with tenant_admin(services) as admin:
        return TenantView.of(await admin.show(tenant_id))


@router.post("/{tenant_id}/tier")
async def set_tier(caller: AdminCaller, services: Services, tenant_id: str, body: TierBody) -> TierChanged:
    """Move new traffic to the tier's queue (the new binding first, then the old one goes); what is already
    queued is processed where it is."""
    async with tenant_admin(services) as admin:
        queue = await admin.set_tier(tenant_id, body.tier)
        return TierChanged(tenant=TenantView.of(await admin.show(tenant_id)), queue=queue)


@router.post("/{tenant_id}/suspend")
async def suspend(caller: AdminCaller, services: Services, tenant_id: str) -> TenantView:
    """New batches and direct publishes are refused; payments already accepted still complete."""
    async with tenant_admin(services) as admin:
        await admin.suspend(tenant_id)
        return TenantView.of(await admin.show(tenant_id))


@router.post("/{tenant_id}/resume")
async def resume(caller: AdminCaller, services: Services, tenant_id: str) -> TenantView:
    async with tenant_admin(services) as admin:
        await admin.resume(tenant_id)
        return TenantView.of(await admin.show(tenant_id))


@router.post("/{tenant_id}/limits")
async def set_limits(
    caller: AdminCaller, services: Services, tenant_id: str, body: Annotated[LimitsBody, Body()]
) -> TenantView:
    """Change the limits given; the others stay."""
    async with tenant_admin(services) as admin:
        return TenantView.of(await admin.set_limits(tenant_id, body.model_dump(exclude_none=True)))
