"""The committed OpenAPI document is what the app generates, and every error it declares has the one shape."""

import json
from typing import Any

import pytest

from corebank.openapi import DOC_PATH, render

ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    generated = render()
    assert DOC_PATH.read_text() == generated, (
        "docs/core-banking.openapi.json is stale: run `python -m corebank openapi`"
    )
    parsed: dict[str, Any] = json.loads(generated)
    return parsed


def operations(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{method.upper()} {path}", op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def test_every_error_answer_has_the_error_shape(doc: dict[str, Any]) -> None:
    for name, op in operations(doc):
        for status, response in op["responses"].items():
            if not status.startswith("2"):
                assert response["content"]["application/json"]["schema"] == ERROR_REF, f"{name} {status}"
    assert "HTTPValidationError" not in doc["components"]["schemas"]


def test_every_route_declares_500_and_every_route_with_input_declares_422(doc: dict[str, Any]) -> None:
    for name, op in operations(doc):
        assert "500" in op["responses"], name
        if op.get("parameters") or op.get("requestBody"):
            assert "422" in op["responses"], name


def test_the_idempotency_rules_are_in_the_contract(doc: dict[str, Any]) -> None:
    post = doc["paths"]["/transfers"]["post"]
    header = next(p for p in post["parameters"] if p["in"] == "header")
    assert (header["name"], header["required"]) == ("Idempotency-Key", True)
    assert set(post["responses"]) == {"200", "201", "401", "409", "422", "500", "503"}
    batch_item = doc["components"]["schemas"]["BatchItemResult"]["properties"]
    assert batch_item["status"]["enum"] == ["booked", "rejected", "conflict"]
    status = doc["components"]["schemas"]["TransferStatus"]["properties"]["status"]
    assert status["enum"] == ["booked", "rejected", "in_progress", "unknown"]
    assert doc["components"]["schemas"]["Reason"]["enum"] == [
        "account_closed",
        "unknown_account",
        "insufficient_funds",
        "currency_not_held",
    ]


def test_every_route_but_health_and_readiness_needs_a_clients_token(doc: dict[str, Any]) -> None:
    """The auth rule is in the contract: another core knows what remit sends (docs/core-banking.md)."""
    schemes = doc["components"]["securitySchemes"]
    assert list(schemes) == ["client"]
    assert (schemes["client"]["type"], schemes["client"]["scheme"]) == ("http", "bearer")
    for name, op in operations(doc):
        assert "401" in op["responses"], name
        anyone = name in {"GET /healthz", "GET /readyz"}
        assert op["security"] == ([{}, {"client": []}] if anyone else [{"client": []}]), name
    assert "/_faults" not in doc["paths"]  # the reference core's test aid, mounted only with --faults


def test_fault_injection_is_behind_its_own_token_where_it_is_mounted() -> None:
    faults = json.loads(render(faults=True))
    assert set(faults["paths"]["/_faults"]) == {"get", "put", "delete"}
    for method, op in faults["paths"]["/_faults"].items():
        assert op["security"] == [{"faults": []}], method
        assert "401" in op["responses"], method
