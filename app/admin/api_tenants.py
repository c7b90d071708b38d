"""Tenant administration over HTTP (admin keys only): the same tenants service (app/tenancy/admin.py) as
`remit tenants ...`, so the database record, the broker binding and the tenant's RabbitMQ user change
together. These routes only translate requests and answers."""

import logging
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Body, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field

from app.admin.api_workers import AdminCaller, Tier
from app.admin.auth import Services
from app.admin.openapi import Int32, TenantId, TenantIdPath, errors
from app.storage.ports.tenants import Tenant
from app.tenancy.admin import Credentials
from app.tenancy.deletion import Deletion
from app.tenancy.tenants import AddTenant

router = APIRouter(prefix="/admin/tenants", tags=["tenants"])
log = logging.getLogger("remit.admin")


class TenantView(BaseModel):
    tenant_id: str
    name: str
    tier: str
    status: str
    dedicated_queue: bool
    default_ttl_seconds: int
    max_message_bytes: int
    publish_rate_per_second: int
    publish_bytes_per_second: int
    max_in_flight: int
    max_bytes_in_flight: int
    retention_days: int | None
    deleted_at: datetime | None

    @classmethod
    def of(cls, row: Tenant) -> "TenantView":
        return cls(**{name: getattr(row, name) for name in cls.model_fields})


class CredentialsView(BaseModel):
    user: str
    password: str

    @classmethod
    def of(cls, credentials: Credentials | None) -> "CredentialsView | None":
        return cls(user=credentials.user, password=credentials.password) if credentials else None


class AddBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    tenant_id: TenantId = Field(description="Lower case letters, digits, `_`, `-`; becomes the routing key.")
    name: str = Field(min_length=1, max_length=200)
    tier: Tier | None = Field(default=None, description="free, basic, premium or enterprise; a new tenant: basic.")
    default_ttl_seconds: Int32 | None = Field(default=None, ge=1, description="Default: REMIT_DEFAULT_TTL_SECONDS.")
    update: bool = Field(
        default=False, description="Apply a name, tier or TTL that differs on an existing tenant (else 409)."
    )


class Added(BaseModel):
    created: bool
    tenant: TenantView
    credentials: CredentialsView | None = Field(
        description="The tenant's RabbitMQ publisher login: shown only when its user is made (the tenant is "
        "created, or an earlier add left it undone), never again."
    )
    updated: list[str] = Field(description="What `update` changed, as `tier basic -> premium`.")


class DrainView(BaseModel):
    in_flight_payments: int
    in_flight_bytes: int
    unpublished: int
    retrying: int
    queued: int = Field(description="Messages in the tenant's dedicated queue.")


class DeletionView(BaseModel):
    tenant: TenantView
    deleted: bool = Field(description="False: phase 1, the tenant drains; true: phase 2 is done.")
    drain: DrainView | None = Field(description="What is still unsettled while it drains.")
    removed_users: list[str]
    revoked_keys: int = Field(description="The tenant's API keys revoked by phase 2.")
    kept_until: datetime | None = Field(description="When the purge may erase a deleted tenant's records.")

    @classmethod
    def of(cls, deletion: Deletion) -> "DeletionView":
        drain = deletion.drain
        shown = None
        if drain is not None:
            shown = DrainView(
                in_flight_payments=drain.in_flight.payments,
                in_flight_bytes=drain.in_flight.bytes,
                unpublished=drain.unpublished,
                retrying=drain.retrying,
                queued=deletion.queued,
            )
        return cls(
            tenant=TenantView.of(deletion.tenant),
            deleted=deletion.deleted,
            drain=shown,
            removed_users=list(deletion.removed_users),
            revoked_keys=deletion.revoked_keys,
            kept_until=deletion.kept_until,
        )


class Rotated(BaseModel):
    credentials: CredentialsView = Field(description="The new RabbitMQ publisher login: shown now, never again.")
    legacy_user: str | None = Field(
        description="A user still named the old way (`tenant-<id>`, without the vhost) that this rotation retired."
    )
    legacy_deleted: bool = Field(
        description="Whether that user was deleted; false when other vhosts still use it (only its rights here went)."
    )


class TierBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    tier: Tier


class TierChanged(BaseModel):
    tenant: TenantView
    queue: str


class LimitsBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    publish_rate_per_second: Int32 | None = Field(default=None, ge=1)
    publish_bytes_per_second: Int32 | None = Field(default=None, ge=1)
    max_in_flight: Int32 | None = Field(default=None, ge=1)
    max_bytes_in_flight: int | None = Field(default=None, ge=1, le=2**63 - 1)
    max_message_bytes: Int32 | None = Field(default=None, ge=512)
    default_ttl_seconds: Int32 | None = Field(default=None, ge=1)


@router.get("", responses=errors(403))
async def list_(caller: AdminCaller, services: Services) -> list[TenantView]:
    """Every tenant with its tier, status (active, suspended, draining, deleted) and limits."""
    return [TenantView.of(row) for row in await services.tenants.all()]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": Added, "description": "The tenant exists already: nothing changed."},
        **errors(400, 403, 409, 413),
    },
)
async def add(caller: AdminCaller, services: Services, body: AddBody, response: Response) -> Added:
    """Create a tenant: record, binding, and its RabbitMQ publisher (the password is returned only now).
    Adding an existing tenant answers 200, completing what an earlier add left undone; with other options
    it is 409 naming them, unless `update` applies them."""
    command = AddTenant(body.tenant_id, body.name, body.tier, default_ttl_seconds=body.default_ttl_seconds)
    added = await services.tenants.add(command, update=body.update)
    if not added.created:
        response.status_code = status.HTTP_200_OK
    return Added(
        created=added.created,
        tenant=TenantView.of(added.tenant),
        credentials=CredentialsView.of(added.credentials),
        updated=list(added.updated),
    )


@router.delete("/{tenant_id}", responses=errors(403, 404, 409))
async def delete(
    caller: AdminCaller,
    services: Services,
    tenant_id: TenantIdPath,
    confirm: Annotated[bool, Query(description="Phase 2: remove the broker user, binding and queue.")] = False,
) -> DeletionView:
    """Delete a tenant in two phases. Phase 1 (without `confirm`): it drains, refusing new batches and
    direct publishes while what it accepted is processed. Phase 2 (`confirm=true`) once nothing is in
    flight: its broker user, binding and dedicated queue are removed; its records are kept for the retention.
    409 while payments are still in flight, with their count."""
    deletion = await services.tenants.delete(tenant_id, confirm=confirm)
    log.info("tenant %s %s by %s", tenant_id, "deleted" if deletion.deleted else "draining", caller.actor)
    return DeletionView.of(deletion)


@router.get("/{tenant_id}", responses=errors(403, 404))
async def show(caller: AdminCaller, services: Services, tenant_id: TenantIdPath) -> TenantView:
    return TenantView.of(await services.tenants.show(tenant_id))


@router.post("/{tenant_id}/rotate-credentials", responses=errors(403, 404, 409))
async def rotate_credentials(caller: AdminCaller, services: Services, tenant_id: TenantIdPath) -> Rotated:
    """A new password for the tenant's RabbitMQ user, returned only now: the old one is refused from then on
    and the connections made with it are closed."""
    rotation = await services.tenants.rotate_credentials(tenant_id)
    log.info("RabbitMQ credentials of tenant %s rotated by %s", tenant_id, caller.actor)
    credentials = CredentialsView(user=rotation.credentials.user, password=rotation.credentials.password)
    return Rotated(credentials=credentials, legacy_user=rotation.legacy_user, legacy_deleted=rotation.legacy_deleted)


@router.post("/{tenant_id}/tier", responses=errors(400, 403, 404, 409, 413))
async def set_tier(caller: AdminCaller, services: Services, tenant_id: TenantIdPath, body: TierBody) -> TierChanged:
    """Move new traffic to the tier's queue (the new binding first, then the old one goes); what is already
    queued is processed where it is."""
    admin = services.tenants
    queue = await admin.set_tier(tenant_id, body.tier)
    return TierChanged(tenant=TenantView.of(await admin.show(tenant_id)), queue=queue)


@router.post("/{tenant_id}/suspend", responses=errors(403, 404, 409))
async def suspend(caller: AdminCaller, services: Services, tenant_id: TenantIdPath) -> TenantView:
    """New batches and direct publishes are refused; payments already accepted still complete."""
    return TenantView.of(await services.tenants.suspend(tenant_id))


@router.post("/{tenant_id}/resume", responses=errors(403, 404, 409))
async def resume(caller: AdminCaller, services: Services, tenant_id: TenantIdPath) -> TenantView:
    return TenantView.of(await services.tenants.resume(tenant_id))


@router.post("/{tenant_id}/limits", responses=errors(400, 403, 404, 409, 413))
async def set_limits(
    caller: AdminCaller, services: Services, tenant_id: TenantIdPath, body: Annotated[LimitsBody, Body()]
) -> TenantView:
    """Change the limits given; the others stay."""
    return TenantView.of(await services.tenants.set_limits(tenant_id, body.model_dump(exclude_none=True)))


@router.get("/{tenant_id}/deletion", responses=errors(403, 404))
async def deletion(caller: AdminCaller, services: Services, tenant_id: TenantIdPath) -> DeletionView:
    """How far a deletion is: what a draining tenant still has in flight, or when a deleted one's records
    are erased. 404 for a tenant that is not being deleted (it has no deletion)."""
    return DeletionView.of(await services.tenants.deletion_of(tenant_id))
