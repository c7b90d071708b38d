"""Reconciliation records every break it finds (issue 37).

`core_duplicate`: a key the external core's journal holds more than one transfer under (the core moved the money
more than once). Before this revision the job assumed one transfer per key and a run could not record it.

Revision ID: 0020_reconciliation_breaks
Revises: 0019_already_processed
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020_reconciliation_breaks"
down_revision: str | None = "0019_already_processed"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_STATUSES = "status in ('unexpected','mismatch','duplicate','core_only','remit_only','core_mismatch','missing')"
_NEW_STATUSES = (
    "status in ('core_duplicate','unexpected','mismatch','duplicate','core_only','remit_only','core_mismatch',"
    "'missing')"
)


def upgrade() -> None:
    op.drop_constraint(op.f("ck_reconciliation_breaks_status"), "reconciliation_breaks", type_="check")
    op.create_check_constraint(op.f("ck_reconciliation_breaks_status"), "reconciliation_breaks", _NEW_STATUSES)


def downgrade() -> None:
    # An older job never wrote these; a downgraded database keeps the run's other breaks.
    op.execute("DELETE FROM reconciliation_breaks WHERE status = 'core_duplicate'")
    op.drop_constraint(op.f("ck_reconciliation_breaks_status"), "reconciliation_breaks", type_="check")
    op.create_check_constraint(op.f("ck_reconciliation_breaks_status"), "reconciliation_breaks", _OLD_STATUSES)
