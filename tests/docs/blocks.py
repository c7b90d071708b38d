"""Every fenced block of README.md and docs/*.md, with where it is and how it is to be checked.

A block's marker is an HTML comment on the line right before its fence (invisible when rendered):

    <!-- docs: run session=NAME [exit=N:CODE ...] [bg=N ...] [ready=URL ...] [subst='OLD=>NEW' ...] [timeout=S] -->
    <!-- docs: output session=NAME [exit=N:CODE ...] [expect='TEXT' ...] [subst=...] -->
    <!-- docs: file session=NAME[,NAME...] name=PATH -->
    <!-- docs: illustrative (why it cannot run here) -->
    <!-- docs: run by tests/path/to/test_file.py -->

docs/testing.md ("Docs that run") says what each one means; tests/docs/test_docs_run.py runs them.
"""

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^\s*<!--\s*docs:\s*(?P<body>.*?)\s*-->\s*$")
# A `run` block in one of these languages is one command: the program fed the block's text.
PROGRAMS = {
    "python": "python -c {source}",
    "sql": 'psql -X -q -v ON_ERROR_STOP=1 "$DOCS_PSQL_URL" -c {source}',
}
KINDS = ("run", "output", "file", "illustrative", "run by")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


class MarkerError(ValueError):
    pass


@dataclass(frozen=True)
class Marker:
    kind: str  # one of KINDS
    session: str = ""
    reason: str = ""  # illustrative: why it cannot run here
    test_file: str = ""  # run by: the test that runs it
    name: str = ""  # file: where the session's directory gets the block's text
    exits: dict[int, int] = field(default_factory=dict)  # command number (1-based) -> documented exit code
    background: frozenset[int] = frozenset()  # command numbers started in the background (servers)
    expect: tuple[str, ...] = ()  # text the block's output must contain
    ready: tuple[str, ...] = ()  # URLs that must answer once the block ran (servers it started)
    timeout: float = 180  # seconds the block may take
    subst: tuple[tuple[str, str], ...] = ()  # (old, new) replaced in the block before it runs

    @classmethod
    def parse(cls, body: str) -> "Marker":
        if body.startswith("illustrative"):
            reason = body.removeprefix("illustrative").strip()
            if not (reason.startswith("(") and reason.endswith(")") and reason[1:-1].strip()):
                raise MarkerError("illustrative needs a reason in parentheses: <!-- docs: illustrative (why) -->")
            return cls("illustrative", reason=reason[1:-1].strip())
        if body.startswith("run by "):
            path = body.removeprefix("run by ").strip()
            if not (ROOT / path).is_file():
                raise MarkerError(f"'run by {path}': no such test file")
            return cls("run by", test_file=path)
        kind, *words = shlex.split(body)
        if kind not in ("run", "output", "file"):
            raise MarkerError(f"unknown marker {kind!r}: use one of {', '.join(KINDS)}")
        return cls._with_options(kind, words)

    @classmethod
    def _with_options(cls, kind: str, words: list[str]) -> "Marker":
        session, name, exits, background, expect, subst, ready = "", "", {}, set(), [], [], []
        timeout = 180.0
        for word in words:
            key, sep, value = word.partition("=")
            if not sep:
                raise MarkerError(f"option {word!r} is not key=value")
            if key == "session":
                session = value
            elif key == "name":
                name = value
            elif key == "exit":
                number, _, code = value.partition(":")
                exits[int(number)] = int(code)
            elif key == "bg":
                background.add(int(value))
            elif key == "timeout":
                timeout = float(value)
            elif key == "ready":
                ready.append(value)
            elif key == "expect":
                expect.append(value)
            elif key == "subst":
                old, arrow, new = value.partition("=>")
                if not arrow:
                    raise MarkerError(f"subst {value!r} is not OLD=>NEW")
                subst.append((old, new))
            else:
                raise MarkerError(f"unknown option {key!r}: session, name, exit, bg, ready, expect, subst, timeout")
        if not session:
            raise MarkerError(f"{kind} needs session=NAME")
        if (kind == "file") != bool(name):
            raise MarkerError("file needs name=PATH, and only file takes it")
        if kind != "file" and "," in session:
            raise MarkerError("only a file block belongs to several sessions")
        return cls(
            kind,
            session,
            name=name,
            exits=exits,
            background=frozenset(background),
            expect=tuple(expect),
            subst=tuple(subst),
            ready=tuple(ready),
            timeout=timeout,
        )

    @property
    def sessions(self) -> list[str]:
        return self.session.split(",") if self.session else []


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    marker: Marker | None
    marker_error: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def commands(self) -> list[str]:
        """The commands a user would type, in order: a shell block's lines (`\\` continuations joined, comments
        and blank lines dropped), a console block's `$ ` lines, a Python or SQL block's whole text as one
        command (PROGRAMS); substitutions applied."""
        text = self.text
        for old, new in self.marker.subst if self.marker else ():
            if old not in text:
                raise MarkerError(f"{self.where}: subst {old!r} does not occur in the block")
            text = text.replace(old, new)
        if self.language in PROGRAMS:
            return [PROGRAMS[self.language].format(source=shlex.quote(text))]
        lines = text.replace("\\\n", " ").splitlines()
        if self.marker and self.marker.kind == "output":
            lines = [line[2:] for line in lines if line.startswith("$ ")]
        return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def blocks_of(path: Path) -> list[Block]:
    source = path.read_text()
    lines = source.splitlines()
    found = []
    for token in MarkdownIt("commonmark").parse(source):
        if token.type != "fence" or token.map is None:
            continue
        start = token.map[0]
        previous = MARKER.match(lines[start - 1]) if start > 0 else None
        marker, error = None, ""
        if previous:
            try:
                marker = Marker.parse(previous["body"])
            except (MarkerError, ValueError) as e:
                error = str(e)
        language = token.info.split()[0] if token.info.strip() else ""
        found.append(Block(path, start + 1, language, token.content, marker, error))
    return found


def all_blocks() -> list[Block]:
    return [block for path in documents() for block in blocks_of(path)]
