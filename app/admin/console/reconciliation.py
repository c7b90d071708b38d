"""The console's reconciliation pages: the runs, and one run's breaks with their age. A tenant sees when
each run was and its own breaks only; an operator sees each run's totals and every tenant's breaks."""

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, HTTPException, Query, Request, status
from starlette.responses import Response

from app.admin.auth import Services
from app.admin.console.context import Console
from app.admin.console.render import page
from app.reporting.reconciliation_runs import list_runs, run_page

router = APIRouter(prefix="/console", include_in_schema=False)

MAX_BREAKS_SHOWN = 1000


# Runs are shared by all tenants and carry no row-level security: they are read in the system scope and the
# service filters them by the caller's tenant (app/reporting/reconciliation_runs.py).
@router.get("/reconciliation")
async def runs_page(
    request: Request, ctx: Console, services: Services, limit: Annotated[int, Query(ge=1, le=500)] = 30
) -> Response:
    runs = await list_runs(services.system_uow, ctx.caller.scope(), limit)
    return page(request, "reconciliation.html", ctx, runs=runs)


@router.get("/reconciliation/{run_id}")
async def run_detail_page(request: Request, ctx: Console, services: Services, run_id: str) -> Response:
    try:
        wanted = UUID(run_id)
    except ValueError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no reconciliation run {run_id!r}") from None
    found = await run_page(services.system_uow, wanted, ctx.caller.scope(), MAX_BREAKS_SHOWN)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no reconciliation run {run_id!r}")
    return page(request, "reconciliation_run.html", ctx, r=found, limit=MAX_BREAKS_SHOWN)
