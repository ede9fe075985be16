"""The pytest plugin as a user meets it: kafka-chaos's wheel installed into a fresh venv, beside a
project that has packages of its own called ``scenarios`` and ``common``; the example in
docs/examples runs there (fixtures from the installed entry point), a wrong expectation fails
there, and the project's own packages are still its own."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "test_orders_survive_a_leader_kill.py"

WRONG = '''
    import pytest
    from kafka_chaos import LeaderOf

    def test_wrong(kafka_cluster, chaos):
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
        admin.create_topics([NewTopic("t", num_partitions=1, replica_assignment=[[1, 2]])])["t"].result(timeout=30)
        verdict = chaos.step("controlled_shutdown", LeaderOf("t", 0), topics=["t"])
        assert verdict.passed
        assert verdict.observation.after.partitions[("t", 0)].leader == 1, "the leader should have moved"
'''

MINE = '''
    import kafka_chaos
    from common import helper
    from scenarios import checkout

    def test_my_own_packages_are_mine():
        assert helper() == "the project's common" and checkout() == "the project's scenarios"
        assert "/venv/" in kafka_chaos.__file__ and "site-packages" in kafka_chaos.__file__  # the wheel's
'''


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=300)
    [wheel] = out.glob("kafka_chaos-*.whl")
    return wheel


def fresh_venv(where: Path, wheel: Path) -> Path:
    """A new venv with only the wheel installed; its dependencies are read from this interpreter's
    site-packages (a path entry, so none of its .pth files, the editable install among them, run)."""
    venv.create(where, with_pip=False)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    (Path(purelib) / "kafka_chaos_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(purelib)
    return python


def test_the_wheel_installs_one_name_and_its_plugin_runs_beside_the_users_own_packages(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "dist")
    with zipfile.ZipFile(wheel) as z:
        tops = {name.split("/")[0] for name in z.namelist()}
    assert tops == {"kafka_chaos", wheel.name.split("-py3")[0] + ".dist-info"}, tops

    python = fresh_venv(tmp_path / "venv", wheel)
    project = tmp_path / "project"
    for package, text in (("scenarios", "def checkout():\n    return \"the project's scenarios\"\n"),
                          ("common", "def helper():\n    return \"the project's common\"\n")):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(text)
    shutil.copy(EXAMPLE, project / EXAMPLE.name)
    (project / "test_wrong.py").write_text(textwrap.dedent(WRONG))
    (project / "test_mine.py").write_text(textwrap.dedent(MINE))

    # One user's suite, one session-scoped cluster for every file: the example kills broker 1,
    # the chaos fixture's teardown restarts it, and the wrong expectation's topic then needs
    # broker 1 back as its leader.
    done = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--kafka-chaos-backend",
                           "local", "-o", "pythonpath=."], cwd=project, capture_output=True, text=True, timeout=420)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert f"PASSED {EXAMPLE.name}::" in out, out
    assert "PASSED test_mine.py::test_my_own_packages_are_mine" in out, out
    assert "FAILED test_wrong.py::test_wrong" in out and "the leader should have moved" in out, out
    assert "1 failed, 2 passed" in out, out
