"""The progress helper: plain lines where there is no terminal (every tenth, or every 1,000 when the total is
unknown, and a last line with the time taken), a rich bar on a terminal, nothing when disabled."""

import io
import re

from rich.console import Console

from app.cli.progress import progress


def plain_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200), out


def lines(out: io.StringIO) -> list[str]:
    return re.sub(r"done in \d+\.\ds", "done in Xs", out.getvalue()).splitlines()


def test_without_a_terminal_a_line_per_tenth_and_one_when_done() -> None:
    console, out = plain_console()
    with progress(console) as tracker:
        task = tracker.task("replaying")
        for _ in range(25):
            task.advance(total=25)
        task.finish("3 refused")
    assert lines(out) == [
        "replaying ...",
        "replaying: 3/25 (12%)",
        "replaying: 5/25 (20%)",
        "replaying: 8/25 (32%)",
        "replaying: 10/25 (40%)",
        "replaying: 13/25 (52%)",
        "replaying: 15/25 (60%)",
        "replaying: 18/25 (72%)",
        "replaying: 20/25 (80%)",
        "replaying: 23/25 (92%)",
        "replaying: 25/25 (100%)",
        "replaying: done in Xs, 25/25 (100%), 3 refused",
    ]


def test_a_tenth_is_reached_at_its_item_not_before() -> None:
    console, out = plain_console()
    with progress(console) as tracker:
        task = tracker.task("rows", total=30)
        task.advance(2)  # below a tenth (3 of 30): no line
        assert lines(out) == ["rows ..."]
        task.advance()  # at a tenth
        task.advance()  # above it, below the next: no new line
    assert lines(out) == ["rows ...", "rows: 3/30 (10%)"]


def test_an_unknown_total_prints_every_thousand_items() -> None:
    console, out = plain_console()
    with progress(console) as tracker:
        task = tracker.task("exporting")
        task.advance(999)
        task.advance(1)
        task.advance(1500)
        task.finish()
    assert lines(out) == ["exporting ...", "exporting: 1,000", "exporting: 2,500", "exporting: done in Xs, 2,500"]


def test_a_step_without_items_says_when_it_is_done() -> None:
    console, out = plain_console()
    with progress(console) as tracker:
        tracker.task("export snapshot").finish("1,204 rows")
    assert lines(out) == ["export snapshot ...", "export snapshot: done in Xs, 1,204 rows"]


def test_on_a_terminal_it_draws_a_bar_and_no_plain_lines() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True)
    with progress(console) as tracker:
        task = tracker.task("replaying", total=4)
        task.advance(4)
        task.finish("done")
    shown = out.getvalue()
    assert "replaying (done)" in shown
    assert "━" in shown  # the bar
    assert "4/4" in shown
    assert "done in" not in shown


def test_disabled_it_says_nothing() -> None:
    console, out = plain_console()
    with progress(console, enabled=False) as tracker:
        task = tracker.task("replaying", total=2)
        task.advance(2)
        task.finish()
    assert out.getvalue() == ""
