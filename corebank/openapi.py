"""The OpenAPI document, generated from the app: `python -m corebank openapi [--check]`."""

import json
from pathlib import Path

from corebank.api.app import create_app
from corebank.faults import Faults
from corebank.settings import CoreBankSettings

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "core-banking.openapi.json"


def render() -> str:
    app = create_app(CoreBankSettings.model_construct(), Faults(enabled=False))
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"
