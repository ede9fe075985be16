#!/usr/bin/env bash
# The test command: set up (idempotent), then `mypy --strict` over every package, unit tests,
# Spark tests, the real-cluster integration tests (including the `smoke` chaos suite) and,
# where a Docker engine answers or is installable, the containers tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
  bash scripts/setup.sh --docker --browser
else
  bash scripts/setup.sh
fi

export TESTCONTAINERS_RYUK_DISABLED="${TESTCONTAINERS_RYUK_DISABLED:-true}"
echo "==> mypy --strict"
.venv/bin/mypy --strict kafka_chaos/
# The slowest tests are listed at the end: the command has a 20-minute budget to keep.
exec .venv/bin/pytest tests --durations=25 "$@"
