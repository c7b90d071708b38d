"""Message statuses, their precedence, and batch states: the vocabulary shared by the job and its reports."""

from typing import Final

# Precedence, highest first: a message gets the first status whose condition holds.
UNEXPECTED: Final = "unexpected"  # in the ledger, never accepted (no outbox row)
MISMATCH: Final = "mismatch"  # a ledger row's amount or currency differs from the outbox
DUPLICATE: Final = "duplicate"  # more than one ledger row: money moved more than once
PROCESSED: Final = "processed"  # exactly one matching ledger row
DEAD_LETTERED: Final = "dead_lettered"  # a terminal dead letter with a reason other than expired
EXPIRED: Final = "expired"  # a terminal dead letter with reason expired
IN_FLIGHT: Final = "in_flight"  # no terminal state yet, still inside TTL + grace
MISSING: Final = "missing"  # no terminal state and past TTL + grace (or idempotency row without money)

# Three-way statuses: only when the run read the core's journal (an external core; docs/reconciliation.md).
# More than one transfer under the key in the core's journal: the core moved the money more than once. First of
# all, whatever else holds: no other status may hide it (issue 37, B: such keys were core_mismatch or processed).
CORE_DUPLICATE: Final = "core_duplicate"
CORE_ONLY: Final = "core_only"  # a transfer in the core's journal that remit never recorded (in-doubt unresolved)
REMIT_ONLY: Final = "remit_only"  # remit recorded the core's transfer; the core's journal has none
CORE_MISMATCH: Final = "core_mismatch"  # both have it, but amount, currency or transfer id differ

STATUSES: Final = (
    CORE_DUPLICATE,
    UNEXPECTED,
    MISMATCH,
    DUPLICATE,
    CORE_ONLY,
    REMIT_ONLY,
    CORE_MISMATCH,
    PROCESSED,
    DEAD_LETTERED,
    EXPIRED,
    IN_FLIGHT,
    MISSING,
)
BREAK_STATUSES: Final = (
    CORE_DUPLICATE,
    UNEXPECTED,
    MISMATCH,
    DUPLICATE,
    CORE_ONLY,
    REMIT_ONLY,
    CORE_MISMATCH,
    MISSING,
)
TERMINAL_STATUSES: Final = (PROCESSED, DEAD_LETTERED, EXPIRED)
# A break of no message: a batch x currency whose control totals disagree (the file's own, what remit accepted,
# what the outbox holds). A row of breaks.csv and of the run's record like a message's, without a message_id.
CONTROL_TOTALS: Final = "control_totals"
BREAK_KINDS: Final = (*BREAK_STATUSES, CONTROL_TOTALS)  # every status a break row can have

# Batch states, ordered by severity so the worst currency decides the batch.
RECONCILED: Final = "RECONCILED"
PENDING: Final = "PENDING"
BREAKS: Final = "BREAKS"
BATCH_STATES: Final = (RECONCILED, PENDING, BREAKS)

# Dead letters in this state went back to the queue: they are not a terminal state by themselves.
REPLAYED_DL_STATUS: Final = "replayed"
EXPIRED_REASON: Final = "expired"
# processed_messages.source of a payment published directly over AMQP (no outbox row; migration 0016).
AMQP_SOURCE: Final = "amqp"
# How an accepted message came: a batch file (its outbox row) or a direct publish over AMQP.
ORIGIN_FILE: Final = "file"
ORIGIN_AMQP: Final = "amqp"

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_BREAKS: Final = 2


def counted_as(status: str) -> tuple[str, ...]:
    """The statuses a summary column `<status>_count/cents` counts. Each counts its own, except duplicate_count,
    which counts every message whose money moved more than once: in remit's ledger (duplicate) or in the core's
    journal (core_duplicate, which has its own column too). So each status column but duplicate's is a share of
    the messages, and duplicate_count - core_duplicate_count is remit's own."""
    return (DUPLICATE, CORE_DUPLICATE) if status == DUPLICATE else (status,)


def worst_state(states: list[str]) -> str:
    """The most severe batch state in `states` (RECONCILED when empty)."""
    return max(states, key=BATCH_STATES.index, default=RECONCILED)


def exit_code(result: str) -> int:
    """PENDING alone is not a failure: only breaks make the nightly run exit non-zero."""
    return EXIT_BREAKS if result == BREAKS else EXIT_OK
