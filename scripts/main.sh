#!/usr/bin/env bash
# The main job: set up (idempotent), run the conformance suite on the embedded local cluster and
# finish with the Spark report. Extra arguments go to `kafka-chaos run`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
results="results-$(date -u +%Y%m%dT%H%M%SZ)"
exec .venv/bin/kafka-chaos run --suite conformance --backend local \
  --results "$results" --junit "$results/junit.xml" "$@"
