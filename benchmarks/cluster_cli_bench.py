"""Every `kafka-chaos cluster` verb on a CLI cluster, timed: what each costs on either launcher, and
that each does what it says (the quick check is tests/containers/test_cluster_cli.py).

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/cluster_cli_bench.py \\
        [--backend containers|local] [--state-dir DIR] [--json OUT]

`cluster up --brokers 3 --log-dirs 2 --control-plane-listener`, then status, kill / start, stop /
start, pause / resume (a broker and ZooKeeper), a topic added and deleted, and as root a cut from
the peers, a lossy link, heal, a failed log directory and its repair; a link delay (refused on
containers, exit 2) and `cluster prune` (keeps the live cluster), then `down`.  Each verb runs as
its own `kafka-chaos` process (what a user runs, Python start-up included) and is checked by its
exit code and, where it says something, its output.  Prints one line per verb (seconds, exit
code) and exits 1 when a verb did not do what it should.  Figures only: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KAFKA_CHAOS = [sys.executable, "-m", "kafka_chaos.cli.main"]
VERB_TIMEOUT_S = 240.0
TOPIC = "bench"


@dataclass(frozen=True)
class Step:
    verb: str
    seconds: float
    exit_code: int
    ok: bool
    note: str = ""


def run_verb(args: list[str], state_dir: Path, *, expect_exit: int = 0, expect_text: str = "") -> Step:
    started = time.monotonic()
    done = subprocess.run([*KAFKA_CHAOS, "cluster", *args, "--state-dir", str(state_dir)], cwd=ROOT,
                          capture_output=True, text=True, timeout=VERB_TIMEOUT_S)
    seconds = time.monotonic() - started
    text = done.stdout + done.stderr
    ok = done.returncode == expect_exit and expect_text in text
    note = "" if ok else (text.strip().splitlines() or ["(no output)"])[-1][:200]
    return Step(" ".join(args), round(seconds, 2), done.returncode, ok, note)


def create_topic_of(state_dir: Path) -> None:
    """One partition on every broker, for add-partitions and delete-topic."""
    sys.path.insert(0, str(ROOT))
    from kafka_chaos.harness.metadata import create_topic

    bootstrap = json.loads((state_dir / "cluster.json").read_text())["bootstrap_servers"]
    create_topic(bootstrap, TOPIC, {0: [1, 2, 3]})


def plan(backend: str, root: bool) -> list[tuple[list[str], int, str]]:
    """(verb and arguments, expected exit code, text its output must hold)."""
    steps: list[tuple[list[str], int, str]] = [
        (["up", "--backend", backend, "--brokers", "3", "--log-dirs", "2", "--control-plane-listener"], 0,
         "control plane:"),
        (["status"], 0, "controller:"),
        (["kill", "2"], 0, "broker 2 killed"),
        (["status"], 0, "DOWN"),
        (["start", "2"], 0, "broker 2 started"),
        (["stop", "3"], 0, "broker 3 stopped"),
        (["start", "3"], 0, "broker 3 started"),
        (["pause", "1"], 0, "broker 1 paused"),
        (["resume", "1"], 0, "broker 1 resumed"),
        (["pause", "zookeeper"], 0, "zookeeper paused"),
        (["resume", "zookeeper"], 0, "zookeeper resumed"),
        (["add-partitions", TOPIC, "--replicas", "2,3,1"], 0, f"{TOPIC}-1 on [2, 3, 1] added"),
        (["delete-topic", TOPIC], 0, f"topic {TOPIC} deleted"),
        # containers: no link delays yet; local: not without --link-proxies
        (["delay", "2", "--ms", "10"], 2, "cannot delay links" if backend == "containers" else "no link proxies"),
    ]
    if root:
        steps += [
            (["cut", "2", "--from", "peers"], 0, "cut from peers"),
            (["heal"], 0, "network healed"),
            (["degrade", "2", "--to", "peers", "--loss", "10"], 0, "degraded"),
            (["heal"], 0, "network healed"),
            (["fail-log-dir", "3", "--dir", "1"], 0, "failed"),
            (["repair-log-dir", "3"], 0, "repaired"),
        ]
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("containers", "local"), default="containers")
    parser.add_argument("--state-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the steps here")
    args = parser.parse_args()
    state_dir = (args.state_dir or Path(tempfile.mkdtemp(prefix="cluster-cli-bench-")) / "cluster").absolute()
    root = os.geteuid() == 0
    steps: list[Step] = []
    try:
        for verb, expect_exit, expect_text in plan(args.backend, root):
            step = run_verb(verb, state_dir, expect_exit=expect_exit, expect_text=expect_text)
            steps.append(step)
            print(f"{step.verb:<75} {step.seconds:>7.2f} s  exit {step.exit_code}"
                  f"{'' if step.ok else '  UNEXPECTED: ' + step.note}", flush=True)
            if verb[0] == "up":
                if not step.ok:
                    break
                create_topic_of(state_dir)
        prune = subprocess.run([*KAFKA_CHAOS, "cluster", "prune"], cwd=ROOT, capture_output=True, text=True,
                               timeout=VERB_TIMEOUT_S)
        kept = "kept 1 live runs" in prune.stdout or "of 0 runs" in prune.stdout
        steps.append(Step("prune", 0.0, prune.returncode, prune.returncode == 0 and kept, prune.stdout.strip()))
        print(f"{'prune (keeps the live cluster)':<75} exit {prune.returncode}  {prune.stdout.strip()}")
    finally:
        down = run_verb(["down"], state_dir, expect_text="stopped and removed")
        steps.append(down)
        print(f"{down.verb:<75} {down.seconds:>7.2f} s  exit {down.exit_code}{'' if down.ok else '  ' + down.note}")
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in steps], indent=1) + "\n")
    bad = [s.verb for s in steps if not s.ok]
    print(f"{args.backend}: {len(steps) - len(bad)}/{len(steps)} verbs as expected"
          + (f"; unexpected: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
