"""README.md's exit-code table is the truth about every `remit` command: the codes app/errors.py's
EXIT_CODES gives caller errors, and every code a command exits with itself."""

import re

from app.cli import status
from app.errors import EXIT_CODES, CallerError, ServiceUnavailable, UsageError, exit_code
from reconciliation import statuses
from tests.utils.services import ROOT

# Every way app/cli/ exits by itself, by what it passes to typer.Exit, and the codes that can be.
EXITS = {
    "1": {1},
    "exit_code": {2, 75},  # app/cli/common.py: a CallerError, through EXIT_CODES
    "EXIT_STILL_IN_FLIGHT": {status.EXIT_STILL_IN_FLIGHT},
    "st.EXIT_FAILED": {statuses.EXIT_FAILED},
    "EXIT_FAILED": {statuses.EXIT_FAILED},
    "st.exit_code": {statuses.EXIT_OK, statuses.EXIT_BREAKS},
    "NO_PROCESS_EXIT": {1},  # app/cli/workers.py (helper B's branch): a pool that should run has no process
}


def documented() -> dict[int, str]:
    """code -> its table row, from README.md's "### Exit codes"."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Exit codes") :].split("\n## ", 1)[0]
    return {int(m[1]): m[0] for m in re.finditer(r"^\| (\d+) \|.*$", section, re.MULTILINE)}


def test_the_table_has_every_code_and_only_those() -> None:
    assert sorted(documented()) == [0, 1, 2, 3, 75]


def test_every_caller_error_code_is_the_one_documented() -> None:
    rows = documented()
    assert exit_code(UsageError("x")) == 2
    assert exit_code(ServiceUnavailable("x")) == 75
    for kind, code in EXIT_CODES:
        assert kind.__name__ in rows[code], (kind, code)
    assert CallerError.__name__ in rows[2]


def test_every_exit_a_command_takes_itself_is_documented() -> None:
    found = set()
    for path in (ROOT / "app" / "cli").glob("*.py"):
        found |= set(re.findall(r"typer\.Exit\(([\w.]+)", path.read_text()))
    assert found <= set(EXITS), "a new way to exit: add it to README.md's table and to EXITS"
    assert set().union(*EXITS.values()) <= set(documented())
