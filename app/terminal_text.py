"""Text a tenant wrote, made safe for a terminal: the one function every CLI output and log line passes it
through (app/cli/safe_console.py, app/logs.py).

A direct publisher chooses every byte of its message, so a payment reference, a correlation id, a body or an
error quoting one can hold what a terminal obeys instead of showing: ESC sequences (retitle the window with
`ESC ] 0 ;`, move up and erase lines with `ESC [ 1A ESC [ 2K` to forge what an operator read, plant an OSC 8
hyperlink), their 8-bit forms (C1: U+0080-U+009F, CSI is U+009B), BEL, backspace and carriage return (which
overwrite what was printed), and the invisible format characters: bidirectional overrides and isolates
(U+202A-U+202E, U+2066-U+2069) that show text in another order than it is stored, zero-width characters that
hide inside a value. rich escapes its own markup, not these: its Text drops only BEL, BS, VT, FF and CR and
passes ESC through (observed with rich 15).

Each such character is shown as a visible escape instead: C0 controls as `\\xNN` (`\\x1b`), every other one as
`\\uXXXX` (`\\u009b`, `\\u202e`; above U+FFFF as its UTF-16 surrogate pair, `\\udb40\\udc01`), the spelling JSON
uses for the same character, so that a JSON document stays valid JSON with the same value. A newline is kept
where the output has lines of its own (a table cell, a body shown in a panel, a traceback) and escaped where
one line is one record (a log message). A backslash is not escaped: a tenant can write the four characters
`\\x1b`, which then look like an escaped ESC, but never the ESC itself.
"""

import re
import sys
import unicodedata
from functools import cache

# Unicode's control (Cc), format (Cf: bidi controls, zero-width characters, soft hyphen, tags ...), surrogate
# (Cs: a lone one cannot even be encoded as UTF-8) and line/paragraph separator (Zl, Zp) characters.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


@cache
def _unsafe_characters() -> str:
    # Read from this Python's Unicode database, so a character a later Unicode version adds is covered too.
    # About 0.2 s, once per process, and only when a text that is not plain printable ASCII comes by.
    return "".join(chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in _UNSAFE_CATEGORIES)


@cache
def _unsafe(keep_newlines: bool) -> re.Pattern[str]:
    unsafe = _unsafe_characters().replace("\n", "") if keep_newlines else _unsafe_characters()
    return re.compile("[" + re.escape(unsafe) + "]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def terminal_safe(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every character a terminal would act on (or hide) shown as a visible escape."""
    if text.isascii() and text.isprintable():
        return text  # the common case: nothing to look for
    return _unsafe(keep_newlines).sub(_visible, text)


def is_terminal_safe(text: str, *, keep_newlines: bool = True) -> bool:
    return (text.isascii() and text.isprintable()) or _unsafe(keep_newlines).search(text) is None
