"""`python -m app.specification [--check]`: write docs/asyncapi.json, the document the consumer serves at
/docs/asyncapi (app/messaging/documented.py), for the default settings; `--check` fails when it is stale."""

import json
import sys
from pathlib import Path
from typing import Any

from app.settings import Settings

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "asyncapi.json"


def build() -> dict[str, Any]:
    from app.main import create_app  # late: building the app is the expensive part

    # model_construct: the defaults, whatever this machine's environment says, so the file is reproducible.
    doc: dict[str, Any] = create_app(Settings.model_construct()).schema.to_specification().to_jsonable()
    return doc


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not DOC_PATH.exists() or DOC_PATH.read_text() != text:
            print(f"{DOC_PATH} is stale: run `python -m app.specification`", file=sys.stderr)
            return 1
        return 0
    DOC_PATH.write_text(text)
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
