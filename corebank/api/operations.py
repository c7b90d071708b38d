"""GET /healthz and GET /readyz, which anyone may call (a wrong credential is still refused); and fault
injection (GET, PUT, DELETE /_faults), mounted only in a process started with it enabled, behind its own
token."""

from fastapi import APIRouter, Depends

from corebank.api.deps import ANYONE, Db, FaultState, faults_credential, refuse_a_wrong_credential
from corebank.api.errors import declared
from corebank.errors import Unavailable
from corebank.faults import FaultPlan
from corebank.migrations import current_revision, head_revision
from corebank.schemas import Health

router = APIRouter(tags=["operations"], dependencies=[Depends(refuse_a_wrong_credential)])
faults_router = APIRouter(tags=["fault injection"], dependencies=[Depends(faults_credential)])


@router.get("/healthz", responses=declared(401, 500), openapi_extra=ANYONE)
async def healthz() -> Health:
    """The process is alive (answers even while an injected outage lasts)."""
    return Health(status="alive")


@router.get("/readyz", responses=declared(401, 500, 503), openapi_extra=ANYONE)
async def readyz(db: Db) -> Health:
    """Ready to book: the database answers and its schema is at this code's head."""
    async with db.connect() as conn:
        current = await current_revision(conn)
    if current != head_revision():
        raise Unavailable(f"the database schema is at {current}, not {head_revision()}")
    return Health(status="ready", schema_revision=current)


@faults_router.get("/_faults", responses=declared(401, 500))
async def get_faults(faults: FaultState) -> FaultPlan:
    """The fault plan in force (`down_seconds`: the time left)."""
    return faults.current()


@faults_router.put("/_faults", responses=declared(401, 422, 500))
async def put_faults(plan: FaultPlan, faults: FaultState) -> FaultPlan:
    """Replace the fault plan; fields left out are off."""
    return faults.set(plan)


@faults_router.delete("/_faults", responses=declared(401, 500))
async def delete_faults(faults: FaultState) -> FaultPlan:
    """Turn every fault off."""
    return faults.set(FaultPlan())
