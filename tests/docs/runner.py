"""Run a session's blocks as a user would type them: one bash process per block, against real services.

The blocks of one session share a working directory (a scratch directory that links the checkout's top
level, so `examples/...` and `.venv/bin/remit` resolve and written files stay out of the checkout), their
exported variables and their current directory: each block's script saves them for the next one.
"""

import contextlib
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.docs.blocks import ROOT, Block

STATE = ".docs-state"  # in the session directory: env.sh, cwd, pids, background logs
CHECK = """__docs_check() { # got want number command
  if [ "$1" != "$2" ]; then
    printf '\\nDOCS: command %s exited %s, the document says %s: %s\\n' "$3" "$1" "$2" "$4" >&2
    exit 97
  fi
}
"""


def session_dir(base: Path) -> Path:
    """A scratch directory that looks like the checkout: its top-level entries linked, .env left out."""
    base.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name not in {".env", ".git"} and not (base / entry.name).exists():
            (base / entry.name).symlink_to(entry)
    (base / STATE).mkdir(exist_ok=True)
    return base


def script_for(block: Block, state: Path) -> str:
    """The block as a bash script: each command checked against its documented exit code (0 unless the
    marker says `exit=N:CODE`), commands marked `bg=N` started in the background and recorded."""
    assert block.marker is not None
    q = shlex.quote
    lines = [CHECK, f"[ -f {q(str(state / 'env.sh'))} ] && source {q(str(state / 'env.sh'))}"]
    lines.append(f'[ -f {q(str(state / "cwd"))} ] && cd "$(cat {q(str(state / "cwd"))})"')
    for number, command in enumerate(block.commands(), start=1):
        if number in block.marker.background:
            log = q(str(state / f"bg-{block.line}-{number}.log"))
            lines.append(f"{{ {command}\n}} > {log} 2>&1 &")  # the newline ends a trailing comment
            lines.append(f"echo $! >> {q(str(state / 'pids'))}")
            continue
        want = block.marker.exits.get(number, 0)
        lines.append(command)
        lines.append(f"__docs_check $? {want} {number} {q(command)}")
    for url in block.marker.ready:
        lines.append(f"docs-wait-http {url} 90")
        lines.append(f"__docs_check $? 0 ready {q('docs-wait-http ' + url)}")
    lines.append(f"export -p > {q(str(state / 'env.sh'))}; pwd > {q(str(state / 'cwd'))}")
    return "\n".join(lines) + "\n"


@dataclass
class Ran:
    block: Block
    returncode: int
    output: str

    def failure(self) -> str | None:
        assert self.block.marker is not None
        problems = []
        if self.returncode != 0:
            problems.append(f"the block failed (exit {self.returncode})")
        problems += [f"its output lacks {text!r}" for text in self.block.marker.expect if text not in self.output]
        if not problems:
            return None
        tail = self.output[-4000:]
        return f"{self.block.where}: {'; '.join(problems)}\n--- output (last 4000 characters) ---\n{tail}"


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> Ran:
    assert block.marker is not None
    timeout = block.marker.timeout
    state = cwd / STATE
    script = script_for(block, state)
    # its own process group: a block that hangs is killed whole, with the servers it started
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return Ran(block, -9, f"{output}\nDOCS: the block did not finish within {timeout:.0f}s and was killed")
    return Ran(block, process.returncode, output)


def write_file(block: Block, cwd: Path) -> None:
    """A `file` block: its text becomes that file in the session's directory, as the document implies."""
    assert block.marker is not None
    target = cwd / block.marker.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.text)


def stop_background(cwd: Path) -> list[str]:
    """End the servers the session's blocks started (by the pids they recorded) and their children; say which
    of them had already died (a server that cannot start is a documented command that fails)."""
    pids = cwd / STATE / "pids"
    died = []
    for pid in (int(p) for p in pids.read_text().split()) if pids.exists() else ():
        try:
            process = psutil.Process(pid)
            if process.status() == psutil.STATUS_ZOMBIE:
                raise psutil.NoSuchProcess(pid)
            family = [process, *process.children(recursive=True)]
        except psutil.NoSuchProcess:
            died.append(pid)
            continue
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.terminate()
        _, alive = psutil.wait_procs(family, timeout=20)
        for member in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
    return [
        f"a server started in the background (pid {pid}) had stopped before the session ended; its logs: "
        + ", ".join(str(log) for log in sorted((cwd / STATE).glob("bg-*.log")))
        for pid in died
    ]
