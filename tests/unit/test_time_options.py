"""Every CLI time option answers a time it cannot read with the forms it takes, not Python's own
"Invalid isoformat string"."""

import pytest
from typer.testing import CliRunner

from app.cli.remit import cli
from app.time_forms import not_a_time
from reconciliation.config import parse_as_of


def one_line(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_the_message_names_what_was_given_and_every_form_taken() -> None:
    assert not_a_time("--since", "yesterday") == (
        "--since 'yesterday' is not a time remit reads: use an ISO 8601 date or time (2025-05-01, "
        "2025-05-01T09:00Z, 2025-05-01T19:00+10:00; UTC if no offset) or an age meaning that long ago (30m, 2h, 7d)"
    )
    assert not_a_time("--at", "x", "now") == "--at 'x' is not a time remit reads: use now"


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_dlq_list_time_options(option: str) -> None:
    result = CliRunner().invoke(cli, ["dlq", "list", option, "yesterday"])
    assert result.exit_code == 2, result.output
    out = one_line(result.output)
    assert f"{option} 'yesterday' is not a time remit reads: use an ISO 8601 date or time" in out
    assert "an age meaning that long ago (30m, 2h, 7d)" in out
    assert "Invalid isoformat" not in out


@pytest.mark.parametrize(
    ("value", "why"),
    [("yesterday", "'yesterday' is not a time remit reads"), ("2025-05-02", "'2025-05-02' has no UTC offset")],
)
def test_reconcile_as_of(value: str, why: str) -> None:
    with pytest.raises(ValueError, match=f"^{why}") as refused:
        parse_as_of(value)
    assert "use an ISO 8601 time with a UTC offset (2025-05-02T00:00:00Z, 2025-05-02T00:00:00+10:00) or now" in str(
        refused.value
    )
    result = CliRunner().invoke(cli, ["reconcile", "--as-of", value, "--out", "/nonexistent/never-written"])
    assert result.exit_code == 2, result.output
    assert "Invalid isoformat" not in result.output
    assert why in one_line(result.output)
