#!/usr/bin/env bash
# Create .venv and install remit with its dev and spark extras. Re-runs are instant unless pyproject changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.remit-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing dependencies into .venv ..."
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev,spark]'
  echo "$want" > "$stamp"
fi
# The official AsyncAPI parser (npm), used by the tests to validate docs/asyncapi.json.
if command -v npm >/dev/null; then
  lock_sum="$(sha256sum tools/asyncapi/package-lock.json | cut -d' ' -f1)"
  if [ "$(cat tools/asyncapi/node_modules/.remit-installed 2>/dev/null)" != "$lock_sum" ]; then
    (cd tools/asyncapi && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$lock_sum" > tools/asyncapi/node_modules/.remit-installed
  fi
fi
# Debian's Chromium for the console's browser test (Playwright drives /usr/bin/chromium; never
# `playwright install`, which downloads a browser of its own).
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null && [ "$(id -u)" = "0" ]; then
  echo "installing chromium (Debian) for the browser test ..."
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
# Debian's docker-compose, so the tests can check docker-compose.yml (`config`) on machines without Docker.
if ! command -v docker-compose >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = "0" ]; then
  echo "installing docker-compose (Debian) for the compose check ..."
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi
