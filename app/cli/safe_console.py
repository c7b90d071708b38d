"""The one kind of rich Console `remit` prints with (app/cli/common.py): whatever a command prints, text a tenant
wrote cannot act on the operator's terminal.

Two rules, kept here rather than at every value a command prints:

- **No markup in data.** The console parses no rich markup (`markup=False`) and replaces no emoji codes, so a
  payment reference such as `[link=https://evil]click[/link]` or `[bold red]SECURITY[/]` is shown as written,
  never turned into a hyperlink or a style, and a stray `[/]` cannot raise MarkupError and hide the rows after
  it. remit's own styles are Text objects with a style (`styled()` below), not markup in strings.
- **No control characters.** Every string becomes Text through `render_str`, which first passes it through
  app/terminal_text.py (ESC, C1, BEL, CR, bidi overrides ... shown as `\\x1b`, `\\u202e`): before the layout, so
  a table measures what it will print. And every segment the console is about to write is checked again
  (`render`): text that reached a Text some other way (a panel's title, `print_json`'s document) is escaped
  there too, so nothing unsafe is ever written. rich's own control segments (cursor moves of a progress bar)
  are left alone; the styles rich adds are written from the segment's style, not its text.
"""

import codecs
import io
from collections.abc import Iterable
from typing import Any, BinaryIO, cast

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from app.terminal_text import is_terminal_safe, terminal_safe


class SafeConsole(Console):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(terminal_safe(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or is_terminal_safe(segment.text):
                yield segment
            else:
                yield Segment(terminal_safe(segment.text), segment.style)


def styled(text: object, style: str | Style = "") -> Text:
    """Words in a style (`styled("error:", "bold red")`), as Text: what markup did before the console stopped
    parsing it; also a value for a place that parses markup whatever the console says (a Panel's title). Tenant
    text inside is made terminal-safe like any other."""
    return Text(terminal_safe(str(text)), style=style)


def line(*parts: object | tuple[object, str]) -> Text:
    """One line of parts, each a value or (value, style): `line(("error:", "bold red"), " ", exc)`."""
    return Text.assemble(*(styled(*p) if isinstance(p, tuple) else styled(p) for p in parts))


class TerminalSafeWriter(io.BufferedIOBase):
    """A binary sink that passes UTF-8 text on to a terminal with its control characters shown escaped: for a file
    format a command writes on stdout (`remit report`'s pain.002, CSV or JSON) when stdout is a terminal. Line
    ends are kept; a file or a pipe gets the bytes as they are, since they are data for a program there."""

    def __init__(self, terminal: BinaryIO) -> None:
        super().__init__()
        self._terminal = terminal
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""  # a CR at the end of a write: its LF may come with the next one

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        text = self._held + self._decoder.decode(chunk)
        self._held = "\r" if text.endswith("\r") else ""
        self._terminal.write(self._safe(text.removesuffix(self._held)))
        return len(chunk)

    def flush(self) -> None:
        self._terminal.write(self._safe(self._held + self._decoder.decode(b"", final=True)))
        self._held = ""
        self._terminal.flush()

    @staticmethod
    def _safe(text: str) -> bytes:
        # A line end of the file (CRLF in CSV) is the file's own: kept as it is.
        return "\r\n".join(terminal_safe(part) for part in text.split("\r\n")).encode()


def safe_stdout(stdout: BinaryIO, is_terminal: bool) -> BinaryIO:
    """stdout itself, or wrapped in a TerminalSafeWriter when it is a terminal."""
    return cast(BinaryIO, TerminalSafeWriter(stdout)) if is_terminal else stdout
