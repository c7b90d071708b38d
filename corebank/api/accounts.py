"""POST /accounts, GET /accounts/{bsb}/{account_number}/{currency}, PUT .../status."""

from typing import Annotated

from fastapi import APIRouter, Path

from corebank.accounts import get_account, open_account, set_status
from corebank.api.deps import Db
from corebank.api.errors import declared
from corebank.schemas import (
    ACCOUNT_PATTERN,
    BSB_PATTERN,
    CURRENCY_PATTERN,
    Account,
    AccountOpen,
    AccountStatusChange,
)

router = APIRouter(prefix="/accounts", tags=["accounts"])
BsbPath = Annotated[str, Path(pattern=BSB_PATTERN)]
NumberPath = Annotated[str, Path(pattern=ACCOUNT_PATTERN)]
CurrencyPath = Annotated[str, Path(pattern=CURRENCY_PATTERN)]


@router.post(
    "",
    status_code=201,
    responses=declared(409, 422, 500, 503, _409="The account already holds that currency (`account_exists`)."),
)
async def post_account(account: AccountOpen, db: Db) -> Account:
    """Open an account in one currency with an opening balance (a second currency is a second call)."""
    async with db.begin() as conn:
        return await open_account(conn, account)


@router.get("/{bsb}/{account_number}/{currency}", responses=declared(404, 422, 500, 503))
async def read_account(bsb: BsbPath, account_number: NumberPath, currency: CurrencyPath, db: Db) -> Account:
    """The account's status and balances."""
    async with db.connect() as conn:
        return await get_account(conn, bsb, account_number, currency)


@router.put("/{bsb}/{account_number}/{currency}/status", responses=declared(404, 422, 500, 503))
async def put_status(
    bsb: BsbPath, account_number: NumberPath, currency: CurrencyPath, change: AccountStatusChange, db: Db
) -> Account:
    """Close or reopen the account: transfers to or from a closed account are rejected (`account_closed`)."""
    async with db.begin() as conn:
        return await set_status(conn, bsb, account_number, currency, change.status)
