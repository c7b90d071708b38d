"""Dead letters belong to their publisher's identity; bounded bodies; replay requests in the audit trail.

dead_letters gains who published it (`published_by`), how its tenant was decided (`tenant_basis`), what
its bytes claimed (`claimed_tenant`, `claims`), whether it is a security event, and the full length and
SHA-256 of a body that may be stored as a prefix (`body_truncated`). Existing rows were filed by their
`tenantUUID` header, which nobody checked: they get tenant_basis 'legacy' (replay then needs force, which
only operators and admin keys have) and a security-event flag when they were quarantined as
tenant_mismatch.

dead_letter_replay_requests holds every replay request (single or bulk) with the caller, the filters,
force and dry run, and its outcome; dead_letter_audit rows point at their request, and refused dead
letters are audited too (action 'refuse').

Revision ID: 0009_dead_letter_identity
Revises: 0007_outbox_fair_index
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0009_dead_letter_identity"
down_revision: str | None = "0008_tenant_idempotency"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VISIBLE = (
    "current_setting('remit.scope', true) = 'system' "
    "OR (current_setting('remit.scope', true) = 'tenant' AND tenant_id = current_setting('remit.tenant_id', true))"
)
BASES = "tenant_basis in ('trusted','login','routing_key','none','legacy')"


def upgrade() -> None:
    _dead_letter_columns()
    _backfill()
    _replay_requests()


def _dead_letter_columns() -> None:
    add = op.add_column
    add("dead_letters", sa.Column("tenant_basis", sa.String(length=16), nullable=True))
    add("dead_letters", sa.Column("published_by", sa.Text(), nullable=True))
    add("dead_letters", sa.Column("claimed_tenant", sa.String(length=32), nullable=True))
    add(
        "dead_letters",
        sa.Column("claims", postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
    )
    add("dead_letters", sa.Column("security_event", sa.Boolean(), server_default=sa.text("false"), nullable=False))
    add("dead_letters", sa.Column("body_length", sa.BigInteger(), nullable=True))
    add("dead_letters", sa.Column("body_sha256", sa.String(length=64), nullable=True))
    add("dead_letters", sa.Column("body_truncated", sa.Boolean(), server_default=sa.text("false"), nullable=False))


def _backfill() -> None:
    op.execute(
        """
        UPDATE dead_letters SET
            tenant_basis = 'legacy',
            security_event = (reason = 'tenant_mismatch'),
            body_length = octet_length(body),
            body_sha256 = encode(sha256(body), 'hex')
        """
    )
    for column in ("tenant_basis", "body_length", "body_sha256"):
        op.alter_column("dead_letters", column, nullable=False)
    # A row written by anything but the archiver (an operator's SQL, a restore) is treated like an old one.
    op.alter_column("dead_letters", "tenant_basis", server_default="legacy")
    op.create_check_constraint(op.f("ck_dead_letters_tenant_basis"), "dead_letters", BASES)
    op.execute(_BODY_FACTS)
    op.execute(
        "CREATE TRIGGER body_facts BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION dead_letter_body_facts()"
    )


# The length and SHA-256 of the body as stored, unless the writer knows the full body's (a cut prefix).
_BODY_FACTS = """
CREATE FUNCTION dead_letter_body_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.body_length := coalesce(NEW.body_length, octet_length(NEW.body));
    NEW.body_sha256 := coalesce(NEW.body_sha256, encode(sha256(NEW.body), 'hex'));
    RETURN NEW;
END $$
"""


def _replay_requests() -> None:
    op.create_table(
        "dead_letter_replay_requests",
        sa.Column("request_id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("dead_letter_ids", postgresql.JSONB(), server_default=sa.text("'[]'::jsonb"), nullable=False),
        sa.Column("filters", postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column("everything", sa.Boolean(), nullable=False),
        sa.Column("force", sa.Boolean(), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("why", sa.Text(), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("request_id", name=op.f("pk_dead_letter_replay_requests")),
    )
    op.create_index(op.f("ix_dead_letter_replay_requests_tenant_id"), "dead_letter_replay_requests", ["tenant_id"])
    op.execute("ALTER TABLE dead_letter_replay_requests ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE dead_letter_replay_requests FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON dead_letter_replay_requests USING ({VISIBLE}) WITH CHECK ({VISIBLE})"
    )
    op.add_column("dead_letter_audit", sa.Column("request_id", sa.BigInteger(), nullable=True))
    op.create_index(op.f("ix_dead_letter_audit_request_id"), "dead_letter_audit", ["request_id"])
    op.drop_constraint(op.f("ck_dead_letter_audit_action"), "dead_letter_audit", type_="check")
    op.create_check_constraint(
        op.f("ck_dead_letter_audit_action"), "dead_letter_audit", "action in ('replay','discard','resolve','refuse')"
    )


def downgrade() -> None:
    op.execute("DELETE FROM dead_letter_audit WHERE action = 'refuse'")
    op.drop_constraint(op.f("ck_dead_letter_audit_action"), "dead_letter_audit", type_="check")
    op.create_check_constraint(
        op.f("ck_dead_letter_audit_action"), "dead_letter_audit", "action in ('replay','discard','resolve')"
    )
    op.drop_index(op.f("ix_dead_letter_audit_request_id"), table_name="dead_letter_audit")
    op.drop_column("dead_letter_audit", "request_id")
    op.drop_index(op.f("ix_dead_letter_replay_requests_tenant_id"), table_name="dead_letter_replay_requests")
    op.drop_table("dead_letter_replay_requests")
    op.execute("DROP TRIGGER body_facts ON dead_letters")
    op.execute("DROP FUNCTION dead_letter_body_facts()")
    op.drop_constraint(op.f("ck_dead_letters_tenant_basis"), "dead_letters", type_="check")
    for column in (
        "body_truncated",
        "body_sha256",
        "body_length",
        "security_event",
        "claims",
        "claimed_tenant",
        "published_by",
        "tenant_basis",
    ):
        op.drop_column("dead_letters", column)
