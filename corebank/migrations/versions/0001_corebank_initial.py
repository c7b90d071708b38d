"""The core's accounts, its idempotency record (transfers) and its journal; both append-only.

Revision ID: 0001_corebank_initial
Revises:
Create Date: 2026-12-01 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0001_corebank_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APPEND_ONLY = ("transfers", "journal")


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("account_id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("bsb", sa.String(length=7), nullable=False),
        sa.Column("account_number", sa.String(length=10), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("status", sa.String(length=6), nullable=False),
        sa.Column("opening_balance_cents", sa.BigInteger(), nullable=False),
        sa.Column("balance_cents", sa.BigInteger(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("bsb ~ '^[0-9]{3}-[0-9]{3}$'", name=op.f("ck_accounts_bsb_format")),
        sa.CheckConstraint("account_number ~ '^[0-9]{6,10}$'", name=op.f("ck_accounts_account_number_format")),
        sa.CheckConstraint("currency ~ '^[A-Z]{3}$'", name=op.f("ck_accounts_currency_format")),
        sa.CheckConstraint("status IN ('open', 'closed')", name=op.f("ck_accounts_status_known")),
        sa.CheckConstraint("opening_balance_cents >= 0", name=op.f("ck_accounts_opening_balance_not_negative")),
        sa.CheckConstraint("balance_cents >= 0", name=op.f("ck_accounts_no_overdraft")),
        sa.PrimaryKeyConstraint("account_id", name=op.f("pk_accounts")),
        sa.UniqueConstraint("bsb", "account_number", "currency", name=op.f("uq_accounts_bsb_account_number_currency")),
    )
    op.create_table(
        "transfers",
        sa.Column("transfer_id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.String(length=24), nullable=True),
        sa.Column("party", sa.String(length=8), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("debtor_bsb", sa.String(length=7), nullable=False),
        sa.Column("debtor_account", sa.String(length=10), nullable=False),
        sa.Column("creditor_bsb", sa.String(length=7), nullable=False),
        sa.Column("creditor_account", sa.String(length=10), nullable=False),
        sa.Column("reference", sa.String(length=140), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("txid", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("status IN ('booked', 'rejected')", name=op.f("ck_transfers_status_known")),
        sa.CheckConstraint(
            "(status = 'rejected') = (reason IS NOT NULL)", name=op.f("ck_transfers_rejection_has_reason")
        ),
        sa.CheckConstraint("amount_cents > 0", name=op.f("ck_transfers_amount_positive")),
        sa.PrimaryKeyConstraint("transfer_id", name=op.f("pk_transfers")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_transfers_idempotency_key")),
    )
    op.create_index(
        "ix_transfers_export", "transfers", ["txid", "transfer_id"], postgresql_where=sa.text("status = 'booked'")
    )
    op.create_table(
        "journal",
        sa.Column("entry_id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("transfer_id", sa.BigInteger(), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("side", sa.String(length=6), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("booked_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("side IN ('debit', 'credit')", name=op.f("ck_journal_side_known")),
        sa.CheckConstraint("amount_cents > 0", name=op.f("ck_journal_amount_positive")),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.account_id"], name=op.f("fk_journal_account_id")),
        sa.ForeignKeyConstraint(["transfer_id"], ["transfers.transfer_id"], name=op.f("fk_journal_transfer_id")),
        sa.PrimaryKeyConstraint("entry_id", name=op.f("pk_journal")),
        sa.UniqueConstraint("transfer_id", "side", name=op.f("uq_journal_transfer_id_side")),
    )
    op.create_index("ix_journal_account_id", "journal", ["account_id"])
    # Append-only below the code: PostgreSQL itself refuses to change or remove a recorded outcome or posting.
    op.execute(
        """
        CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'insufficient_privilege';
        END
        $$
        """
    )
    for table in APPEND_ONLY:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION refuse_change()"
        )


def downgrade() -> None:
    op.drop_table("journal")
    op.drop_table("transfers")
    op.drop_table("accounts")
    op.execute("DROP FUNCTION refuse_change()")
