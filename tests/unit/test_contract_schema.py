"""The committed JSON Schema is current and says what the model enforces."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

import contracts.schema as schema_module
from contracts import PaymentMessage
from contracts.schema import SCHEMA_PATH, render


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(render())
    return loaded


def test_committed_schema_is_up_to_date() -> None:
    assert SCHEMA_PATH.exists(), f"{SCHEMA_PATH.name} is missing: run `python -m contracts.schema`"
    assert SCHEMA_PATH.read_text() == render(), (
        f"{SCHEMA_PATH.name} is stale (the models changed): run `python -m contracts.schema` and commit it"
    )


def test_schema_identifies_itself(schema: dict[str, Any]) -> None:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/payment_message.v1.schema.json")
    assert schema["type"] == "object"


def test_unknown_properties_are_forbidden_everywhere(schema: dict[str, Any]) -> None:
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["ValidationResult"]["additionalProperties"] is False


def test_every_field_is_required_and_listed_in_wire_order(schema: dict[str, Any]) -> None:
    assert schema["required"] == list(PaymentMessage.model_fields)
    assert set(schema["properties"]) == set(PaymentMessage.model_fields)
    assert schema["$defs"]["ValidationResult"]["required"] == ["passed", "checks"]


def test_amount_is_a_positive_integer(schema: dict[str, Any]) -> None:
    amount = schema["properties"]["amount_cents"]

    assert amount["type"] == "integer"
    assert amount["exclusiveMinimum"] == 0
    assert "minimum" not in amount
    assert amount["maximum"] == 100_000_000_000_000  # the contract's limit, written out


def test_the_control_fields_bounds(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    assert (properties["ttl_seconds"]["minimum"], properties["ttl_seconds"]["maximum"]) == (1, 2_592_000)
    assert (properties["retry_count"]["minimum"], properties["retry_count"]["maximum"]) == (0, 100)


def test_every_property_has_a_description(schema: dict[str, Any]) -> None:
    objects = [("PaymentMessage", schema), *schema["$defs"].items()]
    undocumented = [
        f"{owner}.{name}"
        for owner, obj in objects
        for name, prop in obj["properties"].items()
        if not prop.get("description", "").strip()
    ]

    assert undocumented == []


@pytest.mark.parametrize(
    ("field", "accepted", "refused"),
    [
        pytest.param("tenant_id", "anz", ["anz.prod", "ANZ", "anz*", "anz#"], id="tenant-routing-key-safe"),
        pytest.param("currency", "AUD", ["aud", "AUD ", "AU"], id="currency-upper-case-code"),
        pytest.param("timestamp_utc", "2025-05-01T02:14:33.421Z", ["2025-05-01T12:14:33+10:00"], id="utc"),
        pytest.param("debtor_bsb", "012-345", ["012345", "12-345"], id="bsb"),
        pytest.param("payment_reference", "P" * 35, ["P" * 36, "PAY 1"], id="reference"),
    ],
)
def test_schema_patterns_match_the_contract(
    schema: dict[str, Any], field: str, accepted: str, refused: list[str]
) -> None:
    # JSON Schema patterns are unanchored ECMA-262 regexes; these are simple enough for Python's re.
    pattern = re.compile(schema["properties"][field]["pattern"])

    assert pattern.search(accepted)
    assert [value for value in refused if pattern.search(value)] == []


def test_message_id_is_a_uuid_and_timestamp_a_date_time(schema: dict[str, Any]) -> None:
    assert schema["properties"]["message_id"]["type"] == "string"
    assert schema["properties"]["message_id"]["format"] == "uuid"
    assert schema["properties"]["timestamp_utc"]["format"] == "date-time"


def test_the_schema_command_checks_and_writes_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m contracts.schema --check` (scripts/test.sh runs it) fails on a stale file; without
    --check it writes the file."""
    path = tmp_path / "payment_message.v1.schema.json"
    path.write_text("{}\n")
    monkeypatch.setattr(schema_module, "SCHEMA_PATH", path)

    assert schema_module.main(["--check"]) == 1
    assert f"{path} is stale: run `python -m contracts.schema`" in capsys.readouterr().err
    assert schema_module.main([]) == 0
    assert capsys.readouterr().out == f"wrote {path}\n"
    assert path.read_text() == render()
    assert schema_module.main(["--check"]) == 0
