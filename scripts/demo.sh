#!/usr/bin/env bash
# The demo, end to end: install, make sure the servers run, then `remit demo` (it ends by itself).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/services.sh
exec .venv/bin/remit demo "$@"
