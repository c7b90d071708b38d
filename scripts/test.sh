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
# Most of the suite's time is waiting on real processes, outages and chaos runs, not CPU: workers overlap the waits.
# Each worker has its own session database; vhosts are per test. REMIT_TEST_WORKERS=0 runs it in one process.
workers="${REMIT_TEST_WORKERS:-3}"
echo "== pytest ($workers workers)"
exec .venv/bin/python -m pytest -p no:cacheprovider -n "$workers" --dist worksteal "$@"
