"""`remit ...` run as an operator runs it: a real process with the service's environment."""

import asyncio
import sys
from collections.abc import Mapping

from tests.utils.services import ROOT


async def remit(env: Mapping[str, str], *args: str) -> tuple[int, str]:
    """(exit code, stdout and stderr together)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        *args,
        cwd=ROOT,
        env=dict(env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    return int(process.returncode or 0), output.decode()


async def remit_bytes(env: Mapping[str, str], *args: str) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) as the bytes a terminal would have been sent."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        *args,
        cwd=ROOT,
        env=dict(env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    return int(process.returncode or 0), out, err
