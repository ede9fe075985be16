#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: system packages (Java, Maven) when missing, the Python
# venv with the project, and the Kafka 3.9 jars from Maven Central. With --docker also Debian's
# docker.io and a running dockerd (needs root), for the containers launcher; with --browser also
# Debian's chromium, for the test of the report in a headless browser. With --no-spark-archive it
# leaves the report's Spark class-data archive to its caller (the test command builds it in its
# CPU lane, beside the clusters, instead of before them).
set -euo pipefail
cd "$(dirname "$0")/.."

want_docker=0
want_browser=0
want_spark_archive=1
for arg in "$@"; do
  case "$arg" in
    --docker) want_docker=1 ;;
    --browser) want_browser=1 ;;  # Debian's chromium, for the report's headless-browser test
    --no-spark-archive) want_spark_archive=0 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

step() { printf '==> %s\n' "$*"; }

apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: $* missing and not root: install it (apt-get install $*) and run again" >&2
    exit 1
  fi
  step "apt-get install $*"
  if [ ! -f /tmp/.kafka-chaos-apt-updated ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq && touch /tmp/.kafka-chaos-apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
command -v mvn >/dev/null 2>&1 || apt_install maven
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || apt_install python3 python3-venv
python3 -c 'import venv, ensurepip' 2>/dev/null || apt_install python3-venv
# As root the local launcher cuts loopback links with iptables (kafka_chaos/harness/local/network.py), so
# the main job's conformance suite runs the network-partition scenarios too; without root it
# leaves them out and says why, so iptables is not needed there.
if [ "$(id -u)" -eq 0 ]; then
  command -v iptables >/dev/null 2>&1 || apt_install iptables
  # Clock faults run nodes under libfaketime (kafka_chaos/harness/local/clocks.py).
  compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || apt_install libfaketime
fi
# The crash-consistency layer (kafka_chaos/harness/lazyfs, docs/durability.md) mounts FUSE with
# allow_other: only as root, where /dev/fuse exists.
if [ "$(id -u)" -eq 0 ] && [ -e /dev/fuse ]; then
  command -v fusermount3 >/dev/null 2>&1 || apt_install fuse3
fi

if [ ! -x .venv/bin/python ]; then
  step "creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.kafka-chaos-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  step "installing kafka-chaos and its dependencies into .venv"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test,connect]'  # connect: the report through Spark Connect (and its tests)
  touch "$stamp"
fi

step "resolving the Kafka distribution"
.venv/bin/kafka-chaos fetch-kafka

# The report's Spark JVM starts twice as fast from a class-data archive (docs/report.md); built
# once per JDK and Spark version, then reused.
if [ "$want_spark_archive" -eq 1 ]; then
  .venv/bin/python -m kafka_chaos.results.spark_cds
fi

if [ "$want_docker" -eq 1 ]; then
  step "Docker engine"
  bash scripts/install-docker.sh
fi

if [ "$want_browser" -eq 1 ] && ! command -v chromium >/dev/null 2>&1; then
  apt_install --no-install-recommends chromium
fi
