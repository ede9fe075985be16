#!/usr/bin/env bash
# Make a Docker engine answer on this machine, for the containers launcher (docs/containers.md).
# Idempotent and meant for a fresh CI machine as root:
#   - an engine already answers (`docker info`)  -> nothing to do;
#   - no dockerd binary                           -> apt-get install Debian's docker.io (+ iptables);
#   - dockerd installed but not running           -> start it in the background, log to
#     $KAFKA_CHAOS_DOCKERD_LOG (default /var/log/kafka-chaos-dockerd.log), wait (bounded) for it.
# Without root it only reports what is missing.  Exit 0 = `docker info` answers.
set -euo pipefail

log_file=${KAFKA_CHAOS_DOCKERD_LOG:-/var/log/kafka-chaos-dockerd.log}
wait_seconds=${KAFKA_CHAOS_DOCKERD_WAIT:-60}

say() { printf 'install-docker: %s\n' "$*"; }
die() { printf 'install-docker: %s\n' "$*" >&2; exit 1; }

engine_answers() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

if engine_answers; then
  say "a Docker engine answers already ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "no Docker engine answers and not root: install docker.io and start dockerd (or run this script as root)"

apt_install() {
  say "apt-get install $*"
  export DEBIAN_FRONTEND=noninteractive
  if [ ! -f /tmp/.kafka-chaos-apt-updated ]; then
    apt-get update -qq && touch /tmp/.kafka-chaos-apt-updated
  fi
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# docker.io's Recommends are skipped, so name what the daemon needs explicitly: iptables for
# its bridge networks (and our partitions, done from the host with nsenter), containerd/runc come
# as Depends; util-linux brings nsenter.
needed=()
command -v dockerd >/dev/null 2>&1 || needed+=(docker.io)
command -v iptables >/dev/null 2>&1 || needed+=(iptables)
command -v nsenter >/dev/null 2>&1 || needed+=(util-linux)
command -v ip >/dev/null 2>&1 || needed+=(iproute2)
if [ "${#needed[@]}" -gt 0 ]; then
  apt_install "${needed[@]}"
fi
command -v docker >/dev/null 2>&1 || die "docker.io installed but no docker client on PATH"

if ! pgrep -x dockerd >/dev/null 2>&1; then
  say "starting dockerd in the background (log: $log_file)"
  mkdir -p "$(dirname "$log_file")"
  # setsid: dockerd must outlive this script and the CI step's process group. It must not
  # inherit our other open files either: started under `flock LOCK bash scripts/test.sh`, it
  # held the lock file open for ever (as did containerd) and every later flock waited on it.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
    done
    exec setsid dockerd >>"$log_file" 2>&1 < /dev/null
  ) &
  echo $! > /run/kafka-chaos-dockerd.pid
else
  say "dockerd is running already; waiting for it to answer"
fi

deadline=$((SECONDS + wait_seconds))
until engine_answers; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    tail -n 30 "$log_file" >&2 2>/dev/null || true
    die "dockerd did not answer within ${wait_seconds}s (log: $log_file)"
  fi
  sleep 1
done
say "Docker engine $(docker info --format '{{.ServerVersion}}') answers"
