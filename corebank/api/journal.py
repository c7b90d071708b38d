"""GET /journal: the export of booked transfers for reconciliation."""

from typing import Annotated

from fastapi import APIRouter, Query

from corebank.api.deps import Db
from corebank.api.errors import declared
from corebank.export import CURSOR_PATTERN, START, page
from corebank.schemas import JournalPage

router = APIRouter(tags=["journal"])


@router.get(
    "/journal",
    responses=declared(422, 500, 503, _422="Invalid `after` or `limit` (`validation_failed`, `bad_cursor`)."),
)
async def get_journal(
    db: Db,
    after: Annotated[
        str, Query(pattern=CURSOR_PATTERN, description="The `cursor` of the previous page; omit to start.")
    ] = START,
    limit: Annotated[int, Query(ge=1, le=5000, description="Most transfers in the page.")] = 1000,
) -> JournalPage:
    """Booked transfers in a stable order (commit order, then transfer id), from a cursor, a page at a time.

    A transfer whose transaction is still running is not shown yet and never lands behind a cursor already
    handed out, so following `cursor` until `has_more` is false, now or later, reads each booked transfer once.
    """
    async with db.connect() as conn:
        return await page(conn, after, limit)
