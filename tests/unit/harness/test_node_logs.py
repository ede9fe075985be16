"""kafka_chaos.harness.node_logs: which files hold the controller lines, and reading only what was appended
after a mark (a broker restarted appends to the same files)."""

from __future__ import annotations

from pathlib import Path

from kafka_chaos.harness.node_logs import JVM_TIMEZONE_FLAG, LogCursor, controller_log_files


class _Cluster:
    def __init__(self, root: Path, backend: str = "local") -> None:
        self.root = root
        self.backend = backend

    def log_files(self) -> dict[str, Path]:
        return {name: self.root / name / "logs" / "server.log" for name in ("zookeeper", "broker-1", "broker-2")}


def _node(root: Path, name: str, split: bool) -> None:
    logs = root / name / "logs"
    logs.mkdir(parents=True)
    (logs / "server.log").write_text("server\n")
    if split:
        (logs / "controller.log").write_text("c1\n")
        (logs / "state-change.log").write_text("s1\n")


def test_split_logs_are_preferred_and_zookeeper_keeps_its_server_log(tmp_path: Path) -> None:
    for name, split in (("zookeeper", True), ("broker-1", True), ("broker-2", False)):
        _node(tmp_path, name, split)
    files = controller_log_files(_Cluster(tmp_path))
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "zookeeper/logs/server.log", "broker-1/logs/controller.log", "broker-1/logs/state-change.log",
        "broker-2/logs/server.log"]


def test_only_lines_appended_after_the_mark_are_read(tmp_path: Path) -> None:
    for name in ("zookeeper", "broker-1", "broker-2"):
        _node(tmp_path, name, True)
    cursor = LogCursor(_Cluster(tmp_path))
    cursor.mark()
    with open(tmp_path / "broker-1" / "logs" / "controller.log", "a") as f:
        f.write("c2\nc3\n")
    with open(tmp_path / "broker-2" / "logs" / "state-change.log", "a") as f:
        f.write("s2\n")
    assert sorted(cursor.lines_since_mark()) == ["c2", "c3", "s2"]


def test_every_node_jvm_logs_in_utc() -> None:
    """The controller-log parser reads timestamps as UTC: both launchers must start every JVM so."""
    from kafka_chaos.harness.containers.nodes import java_command
    from kafka_chaos.harness.local.nodes import jvm_command

    local = jvm_command("java", "1g", [], "cp", Path("l.properties"), Path("logs"), "kafka.Kafka", Path("s.properties"))
    container = java_command("1g", [], "kafka.Kafka", "s.properties", log4j="l.properties")
    assert JVM_TIMEZONE_FLAG == "-Duser.timezone=UTC"
    assert JVM_TIMEZONE_FLAG in local and JVM_TIMEZONE_FLAG in container
