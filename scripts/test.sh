#!/usr/bin/env bash
# The whole test suite on the real services: lint, types, contract schema, unit, integration, e2e, spark.
# Under CI=true a missing RabbitMQ or PostgreSQL fails the run; it is never skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/services.sh
echo "== ruff"; .venv/bin/ruff check .
echo "== mypy"; .venv/bin/mypy
echo "== contract schema"; .venv/bin/python -m contracts.schema --check
echo "== pytest"
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
