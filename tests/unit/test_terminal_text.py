"""Text a tenant wrote cannot act on a terminal: app/terminal_text.py shows every control and invisible format
character as a visible escape, and the CLI's console (app/cli/safe_console.py) applies it to everything it
prints, parsing no markup in data."""

import io
import json

import pytest
from rich.panel import Panel
from rich.table import Table

from app.cli.safe_console import SafeConsole, TerminalSafeWriter, line, safe_stdout, styled
from app.terminal_text import is_terminal_safe, terminal_safe

# Retitle the window, move up and erase a line, an OSC 8 link, CSI in its 8-bit form, a bidi override, BEL,
# backspace, carriage return, DEL, a zero-width space, a lone surrogate, a language tag (above U+FFFF).
HOSTILE = (
    "PAY\x1b]0;owned\x07\x1b[1A\x1b[2K\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
    "\x9b2J\u202eKCOLB\x08\r\x7f\u200b\ud800\U000e0001"
)
UNSAFE_OUTPUT = ("\x1b", "\x07", "\x08", "\r", "\x7f", "\x9b", "\u202e", "\u200b", "\ud800", "\U000e0001")


def test_each_unsafe_character_is_shown_as_an_escape() -> None:
    assert terminal_safe(HOSTILE) == (
        r"PAY\x1b]0;owned\x07\x1b[1A\x1b[2K\x1b]8;;https://evil.example\x1b\click\x1b]8;;\x1b"
        "\\"  # the backslash ending the string terminator is a printable character: kept
        r"\u009b2J\u202eKCOLB\x08\x0d\u007f\u200b\ud800\udb40\udc01"
    )
    for code in [*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029]:
        if code != 0x0A:
            assert is_terminal_safe(terminal_safe(chr(code))), hex(code)
            assert not is_terminal_safe(chr(code)), hex(code)


@pytest.mark.parametrize("text", ["PAY-ANZ-2025-00198432", "Café Pty Ltd", "東京 銀行", "a b\tc"[:3], "", "∑ ✓ →"])
def test_printable_text_is_left_as_it_is(text: str) -> None:
    assert terminal_safe(text) == text


def test_a_newline_is_kept_where_output_has_lines_and_escaped_in_a_one_line_record() -> None:
    assert terminal_safe("a\nb") == "a\nb"
    assert terminal_safe("a\nb", keep_newlines=False) == r"a\x0ab"
    assert terminal_safe("a\tb") == r"a\x09b"


def test_a_json_document_stays_valid_json_with_the_same_value() -> None:
    """The escapes are JSON's own spelling of the characters JSON does not escape itself (C1, bidi, DEL, ...)."""
    value = {"payment_reference": HOSTILE.replace("\ud800", ""), "nested": [HOSTILE[:20]]}
    document = json.dumps(value, ensure_ascii=False, indent=2)
    assert json.loads(terminal_safe(document)) == value


def printed(*renderables: object, terminal: bool = False) -> str:
    out = io.StringIO()
    console = SafeConsole(file=out, width=120, force_terminal=terminal, color_system="truecolor" if terminal else None)
    for renderable in renderables:
        console.print(renderable)
    return out.getvalue()


def test_a_table_of_hostile_cells_prints_no_control_character_and_keeps_its_borders() -> None:
    table = Table("reference", "flag")
    table.add_row(HOSTILE, styled("SECURITY", "bold red"))
    table.add_row("[link=https://evil.example]click[/link] [bold red]SECURITY[/] [/]", "")
    output = printed(table)
    for unsafe in UNSAFE_OUTPUT:
        assert unsafe not in output
    assert r"\x1b]0;owned\x07" in output  # shown, not dropped
    assert "[link=https://evil.example]click[/link] [bold red]SECURITY[/] [/]" in output  # markup shown as written
    widths = {len(row) for row in output.splitlines()}
    assert len(widths) == 1, output  # measured after escaping: every row as wide as the borders


def test_in_a_terminal_only_richs_own_styles_are_escape_sequences() -> None:
    output = printed(line(("error:", "bold red"), " ", HOSTILE), Panel("body", title=styled(HOSTILE)), terminal=True)
    assert "\x1b[1;31merror:" in output  # remit's own style, as rich writes it
    for unsafe in ("\x1b]", "\x1b[1A", "\x1b[2K", "\x07", "\x9b", "\u202e", "\r"):
        assert unsafe not in output
    assert output.count(r"\x1b]0;owned") == 2


def test_text_that_reached_rich_without_render_str_is_escaped_before_it_is_written() -> None:
    """print_json builds its Text itself; the segments are checked again, and the document stays valid JSON."""
    out = io.StringIO()
    SafeConsole(file=out, width=120).print_json(json.dumps({"reference": HOSTILE.replace("\ud800", "")}))
    for unsafe in UNSAFE_OUTPUT:
        assert unsafe not in out.getvalue()
    assert json.loads(out.getvalue()) == {"reference": HOSTILE.replace("\ud800", "")}


def test_a_report_written_to_a_terminal_shows_the_tenants_characters_escaped_and_keeps_its_line_ends() -> None:
    terminal = io.BytesIO()
    sink = TerminalSafeWriter(terminal)
    data = f"level,end_to_end_id\r\ntransaction,{HOSTILE.replace(chr(0xD800), '')}\r\n".encode()
    for start in range(0, len(data), 7):  # split anywhere: inside a UTF-8 sequence, between CR and LF
        sink.write(data[start : start + 7])
    sink.flush()
    shown = terminal.getvalue().decode()
    assert shown.startswith("level,end_to_end_id\r\ntransaction,PAY\\x1b]0;owned\\x07")
    assert shown.endswith("\\udb40\\udc01\r\n")
    assert shown.count("\r") == 2
    assert is_terminal_safe(shown.replace("\r\n", "\n"))
    piped = io.BytesIO()
    assert safe_stdout(piped, is_terminal=False) is piped  # a pipe or a file gets the bytes as they are
