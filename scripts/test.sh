#!/usr/bin/env bash
# The test command: set up (idempotent), then two lanes side by side:
#   - the real-cluster lane: the integration tests (including the `smoke` chaos suite) and, where
#     a Docker engine answers or is installable, the containers tests -- one cluster at a time;
#   - the CPU lane, at the lowest priority (SCHED_IDLE, nice 19, the idle I/O class): the report's
#     Spark class-data archive (set-up's step, ~25 s from an empty cache), `mypy --strict` over
#     every package, the unit tests and the Spark tests. The clusters' tests spend
#     most of their time waiting out Kafka's session and election timeouts; this lane takes the
#     idle CPU then, and yields it to the JVMs whenever they want it.
# Arguments go to pytest in both lanes (`-m nightly`); a test path among them runs just what it
# selects, in one lane.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
  bash scripts/setup.sh --docker --browser --no-spark-archive
else
  bash scripts/setup.sh --no-spark-archive
fi
spark_archive() { .venv/bin/python -m kafka_chaos.results.spark_cds; }

export TESTCONTAINERS_RYUK_DISABLED="${TESTCONTAINERS_RYUK_DISABLED:-true}"

for arg in "$@"; do
  if [ -e "${arg%%::*}" ]; then
    spark_archive
    echo "==> mypy --strict"
    .venv/bin/mypy --strict kafka_chaos/
    exec .venv/bin/pytest --durations=25 "$@"
  fi
done

lane_dir=$(mktemp -d /tmp/kafka-chaos-test-lane.XXXXXX)
# The other releases the real-cluster tests run (README), fetched from Maven Central beside them
# rather than by the first test that needs each (about 10 s each from an empty cache), at the
# idle priority too: at a normal one its Maven JVMs slowed the first tests by more than they
# saved (CI #37). The first test that needs one comes minutes later; a test that finds a fetch
# under way waits on its lock. Optional: a test fetches (or builds) what this did not.
fetch_releases() {
  for v in 4.4.0 3.6.1 3.1.2 3.6.2 3.5.2; do .venv/bin/kafka-chaos fetch-kafka --kafka-version "$v" --no-cds || true; done
  # and the containers tests' image (about 20 s from an empty cache), before the last tests need it
  if docker info >/dev/null 2>&1; then .venv/bin/kafka-chaos fetch-kafka --no-cds --image || true; fi
}
cpu_lane() {
  echo "==> the report's Spark class-data archive"
  spark_archive
  echo "==> mypy --strict"
  .venv/bin/mypy --strict kafka_chaos/
  echo "==> unit and Spark tests"
  .venv/bin/pytest tests/unit tests/spark --durations=10 "$@"
}
# SCHED_IDLE and the idle I/O class: the lane runs only on what the clusters leave idle.
idle=(nice -n 19)
if chrt --idle 0 true 2>/dev/null; then idle+=(chrt --idle 0); fi
if ionice -c 3 true 2>/dev/null; then idle+=(ionice -c 3); fi
"${idle[@]}" setsid bash -c "$(declare -f spark_archive cpu_lane); cpu_lane \"\$@\"" cpu_lane "$@" > "$lane_dir/out" 2>&1 &
lane=$!
"${idle[@]}" setsid bash -c "$(declare -f fetch_releases); fetch_releases" > "$lane_dir/fetch" 2>&1 &
fetch=$!
stop_lane() {
  kill -TERM -- "-$lane" "-$fetch" 2>/dev/null || true
  wait "$lane" "$fetch" 2>/dev/null || true
  rm -rf "$lane_dir"
}
trap 'stop_lane; exit 130' INT
trap 'stop_lane; exit 143' TERM
trap 'rm -rf "$lane_dir"' EXIT

echo "==> real-cluster tests (mypy, unit and Spark tests run beside them; their output follows)"
# The slowest tests are listed at the end: the command has a 15-minute budget to keep.
set +e
.venv/bin/pytest tests/integration tests/containers --durations=25 "$@"
clusters=$?
echo "==> waiting for the mypy, unit and Spark lane"
wait "$lane"
cpu=$?
wait "$fetch"
set -e
echo "==> the other releases, fetched beside the tests"
cat "$lane_dir/fetch"
cat "$lane_dir/out"
echo "==> real-cluster tests: exit $clusters; mypy, unit and Spark tests: exit $cpu"
# bash's SECONDS: since this script started (set-up included); the budget is 15 minutes.
echo "==> the test command took ${SECONDS} s (budget: 900 s)"
# pytest's 5 (nothing collected) is a lane whose selection (-m nightly) has no test in it.
for rc in "$clusters" "$cpu"; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then exit "$rc"; fi
done
if [ "$clusters" -eq 5 ] && [ "$cpu" -eq 5 ]; then exit 5; fi
exit 0
