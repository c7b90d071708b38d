"""Opening accounts, reading them, closing and reopening them."""

from collections.abc import Sequence

from sqlalchemy import ColumnElement, RowMapping, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from corebank.errors import AccountExists, AccountNotFound
from corebank.schemas import Account, AccountOpen
from corebank.tables import accounts

_ACCOUNT_COLUMNS = [accounts.c[name] for name in Account.model_fields]


def _values(a: AccountOpen) -> dict[str, object]:
    return {**a.model_dump(), "balance_cents": a.opening_balance_cents}


async def open_account(conn: AsyncConnection, account: AccountOpen) -> Account:
    statement = pg_insert(accounts).values(_values(account)).on_conflict_do_nothing().returning(*_ACCOUNT_COLUMNS)
    row = (await conn.execute(statement)).mappings().first()
    if row is None:
        raise AccountExists(f"the account already holds {account.currency}")
    return Account.model_validate(dict(row))


async def open_accounts(conn: AsyncConnection, batch: Sequence[AccountOpen]) -> int:
    """Open the accounts that do not exist yet; return how many were opened."""
    statement = pg_insert(accounts).values([_values(a) for a in batch]).on_conflict_do_nothing()
    return (await conn.execute(statement)).rowcount


async def get_account(conn: AsyncConnection, bsb: str, number: str, currency: str) -> Account:
    statement = select(*_ACCOUNT_COLUMNS).where(*_identity(bsb, number, currency))
    return _found((await conn.execute(statement)).mappings().first())


async def set_status(conn: AsyncConnection, bsb: str, number: str, currency: str, status: str) -> Account:
    statement = (
        update(accounts).where(*_identity(bsb, number, currency)).values(status=status).returning(*_ACCOUNT_COLUMNS)
    )
    return _found((await conn.execute(statement)).mappings().first())


def _identity(bsb: str, number: str, currency: str) -> list[ColumnElement[bool]]:
    return [accounts.c.bsb == bsb, accounts.c.account_number == number, accounts.c.currency == currency]


def _found(row: RowMapping | None) -> Account:
    if row is None:
        raise AccountNotFound("no such account in that currency")
    return Account.model_validate(dict(row))
