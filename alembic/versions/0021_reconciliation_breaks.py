"""Reconciliation records every break it finds (issue 37).

- `core_duplicate`: a key the external core's journal holds more than one transfer under (the core moved the
  money more than once). Before this revision the job assumed one transfer per key.
- `control_totals`: a batch x currency whose control totals disagree. Before this revision the run was BREAKS
  with no break recorded (its breaks are keyed by message). Such a break has no message_id: the key becomes a
  `break_id` of its own, a message's break stays unique per (run, tenant, message_id) and a batch's per (run,
  tenant, batch, currency).

Revision ID: 0021_reconciliation_breaks
Revises: 0020_core_key_generations
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0021_reconciliation_breaks"
down_revision: str | None = "0020_core_key_generations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "reconciliation_breaks"
_OLD_STATUSES = "status in ('unexpected','mismatch','duplicate','core_only','remit_only','core_mismatch','missing')"
_NEW_STATUSES = (
    "status in ('core_duplicate','unexpected','mismatch','duplicate','core_only','remit_only','core_mismatch',"
    "'missing','control_totals')"
)


def upgrade() -> None:
    op.drop_constraint(op.f("ck_reconciliation_breaks_status"), _TABLE, type_="check")
    op.create_check_constraint(op.f("ck_reconciliation_breaks_status"), _TABLE, _NEW_STATUSES)
    op.drop_constraint("pk_reconciliation_breaks", _TABLE, type_="primary")
    op.add_column(_TABLE, sa.Column("break_id", sa.BigInteger(), sa.Identity(always=True), nullable=False))
    op.create_primary_key("pk_reconciliation_breaks", _TABLE, ["break_id"])
    op.alter_column(_TABLE, "message_id", nullable=True)
    op.create_check_constraint(
        op.f("ck_reconciliation_breaks_totals_have_no_message"),
        _TABLE,
        "(message_id IS NULL) = (status = 'control_totals')",
    )
    op.create_index(
        "uq_reconciliation_breaks_message",
        _TABLE,
        ["run_id", "tenant_id", "message_id"],
        unique=True,
        postgresql_where=sa.text("message_id IS NOT NULL"),
    )
    op.create_index(
        "uq_reconciliation_breaks_totals",
        _TABLE,
        ["run_id", "tenant_id", "correlation_id", "currency"],
        unique=True,
        postgresql_where=sa.text("message_id IS NULL"),
    )


def downgrade() -> None:
    # An older job never wrote these; a downgraded database keeps the run's other breaks.
    op.execute("DELETE FROM reconciliation_breaks WHERE status IN ('core_duplicate', 'control_totals')")
    op.drop_index("uq_reconciliation_breaks_totals", table_name=_TABLE)
    op.drop_index("uq_reconciliation_breaks_message", table_name=_TABLE)
    op.drop_constraint(op.f("ck_reconciliation_breaks_totals_have_no_message"), _TABLE, type_="check")
    op.alter_column(_TABLE, "message_id", nullable=False)
    op.drop_constraint("pk_reconciliation_breaks", _TABLE, type_="primary")
    op.drop_column(_TABLE, "break_id")
    op.create_primary_key("pk_reconciliation_breaks", _TABLE, ["run_id", "tenant_id", "message_id"])
    op.drop_constraint(op.f("ck_reconciliation_breaks_status"), _TABLE, type_="check")
    op.create_check_constraint(op.f("ck_reconciliation_breaks_status"), _TABLE, _OLD_STATUSES)
