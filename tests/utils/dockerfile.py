"""The Dockerfile read as stages (dockerfile-parse), for the static checks and the install test."""

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (INSTRUCTION, value)

    def values(self, instruction: str) -> list[str]:
        return [value for name, value in self.instructions if name == instruction]


def stages() -> dict[str, Stage]:
    """Every stage by name, in file order (the last one is what `docker build .` builds)."""
    result: dict[str, Stage] = {}
    current: Stage | None = None
    for item in DockerfileParser(path=str(DOCKERFILE)).structure:
        if item["instruction"] == "FROM":
            base, name = re.split(r"\s+as\s+", item["value"].strip(), flags=re.IGNORECASE)
            current = Stage(name=name, base=base)
            result[current.name] = current
        elif current is not None:
            current.instructions.append((item["instruction"], item["value"]))
    return result


def lineage(name: str) -> list[Stage]:
    """The stage and the stages it is built FROM, nearest first."""
    all_stages = stages()
    chain = [all_stages[name]]
    while chain[-1].base in all_stages:
        chain.append(all_stages[chain[-1].base])
    return chain


def copied_sources(name: str) -> list[str]:
    """What a stage copies from the build context (COPY without --from), as written."""
    sources: list[str] = []
    for value in stages()[name].values("COPY"):
        words = shlex.split(value)
        if not any(word.startswith("--from=") for word in words):
            sources.extend(word for word in words[:-1] if not word.startswith("--"))
    return sources
