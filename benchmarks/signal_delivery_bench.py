"""How long a fault's signal takes to reach the JVM, per launcher (docs/failover-scaling.md,
"On containers": why a controlled shutdown starts later on containers).

    flock /tmp/kafka-chaos-cluster.lock .venv/bin/python benchmarks/signal_delivery_bench.py [--samples 10]

A tiny Java program (compiled here with ``javac``) writes ``System.currentTimeMillis()`` from a
shutdown hook, i.e. once SIGTERM reached the JVM.  The figure is that stamp minus the host's
``time.time()`` just before the harness asks for the signal, which is where
``benches.failover.one_fault`` stamps ``fault_at``:

* ``kill -TERM`` (``os.kill``) of a local JVM — what the local launcher's ``stop_broker`` does;
* ``docker stop`` of a container running the same JVM — the containers launcher's ``stop_broker``;
* ``docker kill --signal SIGTERM`` — the API path of ``kill_broker``'s ``docker kill`` (a SIGKILL
  cannot be observed from inside, so SIGTERM travels it instead).

The containers run the project's JRE image (``kafka-chaos-jre``, built when missing) with the
class mounted from the host; the host's and the containers' clocks are the same kernel clock.
Figures only, nothing asserted; one container at a time, each removed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROBE = """
import java.nio.file.*;
public class Probe {
    public static void main(String[] args) throws Exception {
        Path out = Paths.get(args[0]);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try { Files.writeString(out, Long.toString(System.currentTimeMillis())); } catch (Exception e) { }
        }));
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(600_000);
    }
}
"""
LABELS = {"kafka-chaos.owner": "signal-delivery-bench"}


def compile_probe(directory: Path) -> None:
    if shutil.which("javac") is None:
        raise SystemExit("signal_delivery_bench: needs javac (a JDK) to compile its probe")
    (directory / "Probe.java").write_text(PROBE)
    subprocess.run(["javac", "--release", "17", "Probe.java"], cwd=directory, check=True, timeout=120)


def stamp_of(path: Path, timeout: float = 20.0) -> float:
    """The probe's shutdown-hook stamp (epoch seconds), waited for (bounded)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = path.read_text().strip() if path.exists() else ""
        if text:
            return int(text) / 1000.0
        time.sleep(0.005)
    raise SystemExit(f"signal_delivery_bench: no stamp in {path} within {timeout:.0f} s")


def local_term(directory: Path, index: int) -> float:
    out = directory / f"local-{index}"
    process = subprocess.Popen(["java", "-cp", str(directory), "Probe", str(out)], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        process.stdout.readline()  # "ready": the hook is installed
        asked = time.time()
        process.terminate()
        return stamp_of(out) - asked
    finally:
        process.kill()
        process.wait(timeout=30)


def container_term(client: object, image: str, directory: Path, index: int,
                   signal: Callable[[object], None]) -> float:
    out = f"container-{index}-{time.monotonic_ns()}"
    container = client.containers.run(  # type: ignore[attr-defined]
        image, ["java", "-cp", "/probe", "Probe", f"/probe/{out}"], detach=True, entrypoint="",
        volumes={str(directory): {"bind": "/probe", "mode": "rw"}}, labels=LABELS)
    try:
        end = time.monotonic() + 60.0
        while b"ready" not in container.logs() and time.monotonic() < end:
            time.sleep(0.02)
        asked = time.time()
        signal(container)
        return stamp_of(directory / out) - asked
    finally:
        container.remove(force=True)


def show(name: str, seconds: list[float]) -> None:
    ms = [s * 1000.0 for s in seconds]
    print(f"{name:<50} median {statistics.median(ms):6.1f} ms  min {min(ms):6.1f}  max {max(ms):6.1f}  (n={len(ms)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10, help="signals per way [default: 10]")
    args = parser.parse_args()
    if not 1 <= args.samples <= 100:
        print("--samples must be between 1 and 100", file=sys.stderr)
        return 2
    from kafka_chaos.harness.containers.image import docker_client, ensure_jre_image

    client = docker_client()
    image = ensure_jre_image(client).tag
    directory = Path(tempfile.mkdtemp(prefix="kafka-chaos-signal-bench-"))
    try:
        compile_probe(directory)
        show("kill -TERM -> shutdown hook (local JVM)", [local_term(directory, i) for i in range(args.samples)])
        show("docker stop -> shutdown hook (container)",
             [container_term(client, image, directory, i, lambda c: c.stop(timeout=30))  # type: ignore[attr-defined]
              for i in range(args.samples)])
        show("docker kill -s TERM -> shutdown hook (container)",
             [container_term(client, image, directory, i, lambda c: c.kill(signal="SIGTERM"))  # type: ignore[attr-defined]
              for i in range(args.samples)])
    finally:
        shutil.rmtree(directory, ignore_errors=True)  # the containers wrote as root: ignore what stays
    return 0


if __name__ == "__main__":
    sys.exit(main())
