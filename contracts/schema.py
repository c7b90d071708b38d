"""Export the JSON Schema of the wire contract: `python -m contracts.schema [--check]`."""

import json
import sys
from pathlib import Path

from contracts.message import PaymentMessage

SCHEMA_PATH = Path(__file__).with_name("payment_message.v1.schema.json")


def render() -> str:
    schema = PaymentMessage.model_json_schema(mode="validation")
    schema["$id"] = "https://remit.example/contracts/payment_message.v1.schema.json"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    if "--check" in argv:
        if SCHEMA_PATH.read_text() != render():
            print(f"{SCHEMA_PATH} is stale: run `python -m contracts.schema`", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(render())
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
