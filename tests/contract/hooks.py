"""Schemathesis hooks for the contract tests (loaded through SCHEMATHESIS_HOOKS).

A tenant key's answers never carry another tenant's data: the test names the tenant under test and the other
tenant's markers (its id, batch id, payment references, message ids) in REMIT_CONTRACT_TENANT /
REMIT_CONTRACT_FOREIGN. A path naming another tenant's batch or payment must not answer 2xx; no answer may carry
another tenant's marker (unless the request itself carried it, as a 404's text repeats it) or a `tenant_id` but
the key's.

A caller without a credential is answered nothing (REMIT_CONTRACT_ANONYMOUS: the paths anyone may call)."""

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import schemathesis

TENANT_KEYS = ("tenant_id",)


def _tenant_values(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in TENANT_KEYS and isinstance(value, str):
                yield value
            yield from _tenant_values(value)
    elif isinstance(node, list):
        for item in node:
            yield from _tenant_values(item)


@schemathesis.check
def no_other_tenant_data(ctx: Any, response: Any, case: Any) -> bool | None:
    tenant = os.environ.get("REMIT_CONTRACT_TENANT")
    if not tenant:
        return None  # the admin run: an admin key sees every tenant
    foreign = [marker for marker in os.environ.get("REMIT_CONTRACT_FOREIGN", "").split(",") if marker]
    asked = str(response.request.url)
    path = urlsplit(asked).path
    named = [marker for marker in foreign if marker in unquote(path)]
    if named and response.status_code < 300:
        raise AssertionError(f"another tenant's {named} answered {response.status_code}, not 404")
    text = response.text or ""
    # A marker the request itself carries may be echoed back ("no batch '...'"); any other is a leak.
    leaked = [marker for marker in foreign if marker in text and marker not in unquote(asked)]
    if leaked:
        raise AssertionError(f"the answer carries another tenant's data: {leaked}")
    try:
        body = json.loads(text)
    except ValueError:
        return None
    others = sorted({value for value in _tenant_values(body) if value != tenant})
    if others:
        raise AssertionError(f"the answer names other tenants: {others}")
    return None


@schemathesis.check
def nothing_for_the_anonymous(ctx: Any, response: Any, case: Any) -> bool | None:
    """A run without a credential (REMIT_CONTRACT_ANONYMOUS names the paths anyone may call, comma-separated):
    every other path answers no success and no redirect, whatever was asked (a 401 mostly; a 404 or 405 for what
    does not exist, found before the credential is looked at, which tells nothing)."""
    open_paths = os.environ.get("REMIT_CONTRACT_ANONYMOUS")
    if open_paths is None:
        return None
    path = urlsplit(str(response.request.url)).path
    if path not in open_paths.split(",") and response.status_code < 400:
        raise AssertionError(f"{response.request.method} {path} answered {response.status_code} without a credential")
    return None
