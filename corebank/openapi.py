"""The OpenAPI document, generated from the app: `python -m corebank openapi [--check]`.

The committed document is the contract another core implements: without fault injection, which is the
reference core's test aid (`render(faults=True)` adds its routes, as a process started with `--faults` has them).
"""

import json
from pathlib import Path

from corebank.api.app import create_app
from corebank.faults import Faults
from corebank.settings import CoreBankSettings

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "core-banking.openapi.json"


def render(faults: bool = False) -> str:
    app = create_app(CoreBankSettings.model_construct(), Faults(enabled=faults))
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"
