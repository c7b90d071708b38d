"""GET /healthz, GET /readyz, and fault injection (GET, PUT, DELETE /_faults)."""

from fastapi import APIRouter

from corebank.api.deps import Db, FaultState
from corebank.api.errors import declared
from corebank.errors import Unavailable
from corebank.faults import FaultPlan
from corebank.migrations import current_revision, head_revision
from corebank.schemas import Health

router = APIRouter(tags=["operations"])
FAULTS_OFF = declared(403, 500)


@router.get("/healthz", responses=declared(500))
async def healthz() -> Health:
    """The process is alive (answers even while an injected outage lasts)."""
    return Health(status="alive")


@router.get("/readyz", responses=declared(500, 503))
async def readyz(db: Db) -> Health:
    """Ready to book: the database answers and its schema is at this code's head."""
    async with db.connect() as conn:
        current = await current_revision(conn)
    if current != head_revision():
        raise Unavailable(f"the database schema is at {current}, not {head_revision()}")
    return Health(status="ready", schema_revision=current)


@router.get("/_faults", responses=FAULTS_OFF)
async def get_faults(faults: FaultState) -> FaultPlan:
    """The fault plan in force (`down_seconds`: the time left)."""
    return faults.current()


@router.put("/_faults", responses=declared(403, 422, 500))
async def put_faults(plan: FaultPlan, faults: FaultState) -> FaultPlan:
    """Replace the fault plan; fields left out are off. Only when the process was started with faults enabled."""
    return faults.set(plan)


@router.delete("/_faults", responses=FAULTS_OFF)
async def delete_faults(faults: FaultState) -> FaultPlan:
    """Turn every fault off."""
    return faults.set(FaultPlan())
