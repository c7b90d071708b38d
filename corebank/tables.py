"""The core's schema as SQLAlchemy Core tables; corebank/migrations/ creates it, tests compare the two.

`transfers` is the idempotency record: one row per key, booked or rejected, append-only. `journal` holds the
postings of booked transfers (one debit, one credit), append-only. `accounts` carries the running balance.
"""

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    text,
)

metadata = MetaData(
    naming_convention={
        "pk": "pk_%(table_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    }
)

accounts = Table(
    "accounts",
    metadata,
    Column("account_id", BigInteger, Identity(always=True), primary_key=True),
    Column("bsb", String(7), nullable=False),
    Column("account_number", String(10), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("status", String(6), nullable=False),
    Column("opening_balance_cents", BigInteger, nullable=False),
    Column("balance_cents", BigInteger, nullable=False),
    Column("opened_at", DateTime(timezone=True), server_default=text("now()"), nullable=False),
    UniqueConstraint("bsb", "account_number", "currency"),
    CheckConstraint("bsb ~ '^[0-9]{3}-[0-9]{3}$'", name="bsb_format"),
    CheckConstraint("account_number ~ '^[0-9]{6,10}$'", name="account_number_format"),
    CheckConstraint("currency ~ '^[A-Z]{3}$'", name="currency_format"),
    CheckConstraint("status IN ('open', 'closed')", name="status_known"),
    CheckConstraint("opening_balance_cents >= 0", name="opening_balance_not_negative"),
    CheckConstraint("balance_cents >= 0", name="no_overdraft"),
)

transfers = Table(
    "transfers",
    metadata,
    Column("transfer_id", BigInteger, Identity(always=True), primary_key=True),
    Column("idempotency_key", String(255), nullable=False, unique=True),
    Column("status", String(8), nullable=False),
    Column("reason", String(24), nullable=True),
    Column("party", String(8), nullable=True),
    Column("amount_cents", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("debtor_bsb", String(7), nullable=False),
    Column("debtor_account", String(10), nullable=False),
    Column("creditor_bsb", String(7), nullable=False),
    Column("creditor_account", String(10), nullable=False),
    Column("reference", String(140), nullable=True),
    Column("recorded_at", DateTime(timezone=True), server_default=text("now()"), nullable=False),
    # The writing transaction's id: the export hands out rows in (txid, transfer_id) order and only from
    # transactions older than every running one, so a late commit can never land behind a reader's cursor.
    Column("txid", BigInteger, nullable=False),
    CheckConstraint("status IN ('booked', 'rejected')", name="status_known"),
    CheckConstraint("(status = 'rejected') = (reason IS NOT NULL)", name="rejection_has_reason"),
    CheckConstraint("amount_cents > 0", name="amount_positive"),
    Index("ix_transfers_export", "txid", "transfer_id", postgresql_where=text("status = 'booked'")),
)

journal = Table(
    "journal",
    metadata,
    Column("entry_id", BigInteger, Identity(always=True), primary_key=True),
    Column("transfer_id", BigInteger, ForeignKey("transfers.transfer_id"), nullable=False),
    Column("account_id", BigInteger, ForeignKey("accounts.account_id"), nullable=False),
    Column("side", String(6), nullable=False),
    Column("amount_cents", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("booked_at", DateTime(timezone=True), server_default=text("now()"), nullable=False),
    UniqueConstraint("transfer_id", "side"),
    CheckConstraint("side IN ('debit', 'credit')", name="side_known"),
    CheckConstraint("amount_cents > 0", name="amount_positive"),
    Index("ix_journal_account_id", "account_id"),
)
