"""processes_mentioning finds other processes naming a text, never the caller's own ancestors
(the shell wrapper of `kafka-chaos cluster down --state-dir X` names X too)."""

from __future__ import annotations

import subprocess
import sys
import uuid

PROBE = ("import sys; from kafka_chaos.harness.processes import processes_mentioning; "
         "print(sorted(processes_mentioning(sys.argv[1])))")


def test_a_sibling_is_found_and_the_wrapping_shell_is_not() -> None:
    marker = f"/tmp/kafka-chaos-test-{uuid.uuid4().hex}/"
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", marker])  # a "node": mentions the marker, no ancestor
    try:
        # The probe runs under a shell whose own command line holds the marker.
        out = subprocess.run(["sh", "-c", f'"$0" -c "$1" "$2"; : {marker}', sys.executable, PROBE, marker],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    finally:
        sibling.kill()
        sibling.wait()
    assert out.strip() == f"[{sibling.pid}]"
