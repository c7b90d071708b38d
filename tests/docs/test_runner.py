"""The docs runner itself: a document that disagrees with what its commands do must turn the docs run red."""

import os
import time
from pathlib import Path

import psutil
import pytest

from tests.docs.blocks import ROOT, Block, Marker, MarkerError
from tests.docs.runner import run_block, session_dir, stop_background


def block(text: str, marker: str, language: str = "bash") -> Block:
    return Block(ROOT / "README.md", 1, language, text, Marker.parse(marker))


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    return session_dir(tmp_path / "session")


ENV = {**os.environ}


@pytest.mark.parametrize(
    ("marker", "error"),
    [
        ("illustrative", "needs a reason"),
        ("illustrative ()", "needs a reason"),
        ("run", "needs session=NAME"),
        ("run session=x colour=red", "unknown option 'colour'"),
        ("run session=x subst=nothing", "is not OLD=>NEW"),
        ("run by tests/no/such_test.py", "no such test file"),
        ("file session=x", "file needs name=PATH"),
        ("run session=a,b", "only a file block"),
        ("walk session=x", "unknown marker"),
    ],
)
def test_a_marker_that_says_too_little_is_refused(marker: str, error: str) -> None:
    with pytest.raises(MarkerError, match=error):
        Marker.parse(marker)


def test_a_command_that_fails_fails_its_block(cwd: Path) -> None:
    ran = run_block(
        block("true\nfalse   # a documented command that no longer works\ntrue\n", "run session=x"), cwd, ENV
    )
    failure = ran.failure()
    assert failure is not None
    assert "README.md:1" in failure
    assert "command 2 exited 1, the document says 0" in failure


def test_a_documented_exit_code_is_what_the_command_must_return(cwd: Path) -> None:
    assert run_block(block("true\nsh -c 'exit 1'\n", "run session=x exit=2:1"), cwd, ENV).failure() is None
    failure = run_block(block("true\ntrue\n", "run session=x exit=2:1"), cwd, ENV).failure()
    assert failure is not None
    assert "command 2 exited 0, the document says 1" in failure


def test_an_output_block_runs_its_dollar_lines_and_must_show_the_expected_text(cwd: Path) -> None:
    transcript = "$ echo 'dead letters (3)'\ndead letters (3)\n$ # a comment\n"
    assert run_block(block(transcript, "output session=x expect='dead letters ('"), cwd, ENV).failure() is None
    failure = run_block(block(transcript, "output session=x expect='value at risk'"), cwd, ENV).failure()
    assert failure is not None
    assert "its output lacks 'value at risk'" in failure


def test_exports_and_the_directory_carry_to_the_next_block(cwd: Path) -> None:
    assert run_block(block("export DOCS_X=42\nmkdir -p sub && cd sub\n", "run session=x"), cwd, ENV).failure() is None
    ran = run_block(block('test "$DOCS_X" = 42\ntest "$(basename "$PWD")" = sub\n', "run session=x"), cwd, ENV)
    assert ran.failure() is None


def test_a_substitution_must_find_what_it_replaces() -> None:
    with pytest.raises(MarkerError, match="does not occur"):
        block("remit dlq show 7\n", "run session=x subst='show 8=>show 9'").commands()
    assert block("remit dlq show 7\n", "run session=x subst='show 7=>show 9'").commands() == ["remit dlq show 9"]


def test_a_python_block_runs_as_one_program(cwd: Path) -> None:
    assert run_block(block("x = 1\nassert x == 1\n", "run session=x", "python"), cwd, ENV).failure() is None
    assert run_block(block("assert 1 == 2\n", "run session=x", "python"), cwd, ENV).failure() is not None


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_server_that_died_fails_the_session(cwd: Path) -> None:
    ran = run_block(block("sh -c 'exit 3'   # a server that cannot start\n", "run session=x bg=1"), cwd, ENV)
    assert ran.failure() is None  # the block itself only started it
    pid = int((cwd / ".docs-state" / "pids").read_text().split()[0])
    deadline = time.monotonic() + 30  # on a loaded machine the shell may not have exited yet
    while time.monotonic() < deadline and not _gone(pid):
        time.sleep(0.1)
    died = stop_background(cwd)
    assert len(died) == 1
    assert "had stopped before the session ended" in died[0]


def test_a_server_still_running_is_stopped(cwd: Path) -> None:
    assert run_block(block("sleep 300   # a server\n", "run session=x bg=1"), cwd, ENV).failure() is None
    pid = int((cwd / ".docs-state" / "pids").read_text().split()[0])
    assert stop_background(cwd) == []
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
