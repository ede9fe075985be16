"""Distribution resolution on fake layouts: a fake Kafka tarball, a fake cache, a fake mvn."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from kafka_chaos.harness import distribution as d
from kafka_chaos.harness.distribution import COMPLETE_MARKER, check_version, resolve_distribution
from kafka_chaos.harness.errors import HarnessError, UsageError


def executable(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only a fake java; an empty cache; no KAFKA_HOME / JAVA_HOME."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "java", "exit 0\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv(d.CACHE_ENV, str(tmp_path / "cache"))
    return bin_dir


def fake_mvn(bin_dir: Path, jars: list[str], exit_code: int = 0, output: str = "") -> Path:
    """Copies nothing from anywhere: writes empty jars into -DoutputDirectory, records the pom."""
    names = " ".join(jars)
    return executable(bin_dir / "mvn", f"""
PATH=/usr/bin:/bin
for arg in "$@"; do
  case "$arg" in
    -DoutputDirectory=*) out="${{arg#-DoutputDirectory=}}" ;;
  esac
done
pom=""
while [ $# -gt 0 ]; do [ "$1" = "-f" ] && pom="$2"; shift; done
cp "$pom" "$(dirname "$0")/last-pom.xml"
echo "{output}"
[ {exit_code} -eq 0 ] || exit {exit_code}
mkdir -p "$out"
for j in {names}; do : > "$out/$j"; done
""")


def tarball(root: Path, *jars: str) -> Path:
    libs = root / "libs"
    libs.mkdir(parents=True)
    for jar in jars:
        (libs / jar).write_bytes(b"")
    return root


def test_kafka_home_version_comes_from_the_kafka_jar(tools: Path, tmp_path: Path) -> None:
    home = tarball(tmp_path / "kafka_2.13-3.9.1", "kafka_2.13-3.9.1.jar", "zookeeper-3.8.4.jar",
                   "kafka-clients-3.9.1.jar", "kafka_2.13-3.9.1-sources.jar", "README.txt")
    dist = resolve_distribution(kafka_home=home)
    assert (dist.version, dist.source, dist.libs_dir) == ("3.9.1", "kafka_home", home / "libs")
    assert dist.classpath.split(os.pathsep) == [
        str(home / "libs" / j) for j in ("kafka-clients-3.9.1.jar", "kafka_2.13-3.9.1-sources.jar",
                                          "kafka_2.13-3.9.1.jar", "zookeeper-3.8.4.jar")]


def test_kafka_home_from_the_environment(tools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tarball(tmp_path / "k", "kafka_2.13-3.8.0.jar")
    monkeypatch.setenv("KAFKA_HOME", str(home))
    assert resolve_distribution().version == "3.8.0"


def test_kafka_home_that_does_not_match_the_asked_version(tools: Path, tmp_path: Path) -> None:
    home = tarball(tmp_path / "k", "kafka_2.13-3.9.1.jar")
    with pytest.raises(UsageError, match="does not match"):
        resolve_distribution("3.9.2", home)


@pytest.mark.parametrize("layout, message", [
    (None, "not readable as an extracted Kafka tarball"),
    ((), "no kafka_2.13-X.Y.Z.jar"),
    (("kafka_2.12-3.9.1.jar",), "no kafka_2.13-X.Y.Z.jar"),
    (("kafka_2.13-3.9.1.jar", "kafka_2.13-3.8.0.jar"), "several Kafka versions"),
])
def test_unreadable_kafka_home(tools: Path, tmp_path: Path, layout: tuple[str, ...] | None, message: str) -> None:
    home = tmp_path / "k"
    if layout is not None:
        tarball(home, *layout)
    with pytest.raises(HarnessError, match=message) as info:
        resolve_distribution(kafka_home=home)
    assert "\n" not in str(info.value)


def test_kafka_home_with_kafka_4_is_a_kraft_only_distribution(tools: Path, tmp_path: Path) -> None:
    home = tarball(tmp_path / "k", "kafka_2.13-4.0.0.jar", "log4j-core-2.24.3.jar")
    assert resolve_distribution(kafka_home=home).version == "4.0.0"  # ZooKeeper mode: harness.config refuses


@pytest.mark.parametrize("version, message", [
    ("5.0.0", "Kafka 5.0.0 is not supported: use a 2.4-3.9 release, e.g. 3.9.2, or a 4.x one in KRaft mode"),
    ("2.3.1", "Maven Central from 2.4.0"), ("1.1.1", "Maven Central from 2.4.0"), ("0.11.0", "Maven Central"),
    ("3.9", "not of the form"), ("latest", "not of the form"), ("4.0", "not of the form"),
])
def test_version_outside_2_4_to_4_x_is_refused(tools: Path, version: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message) if "," in message else message) as info:
        resolve_distribution(version)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("version", ["2.4.0", "2.4.1", "2.8.2", "3.0.0", "3.9.2", " 3.4.1 ", "4.0.0", "4.1.2", "4.4.0"])
def test_version_from_2_4_to_4_x_is_accepted(version: str) -> None:
    assert check_version(version) == version.strip()


@pytest.mark.parametrize("version, refused", [("3.9.2", False), ("2.4.1", False), ("4.0.0", True), ("4.4.0", True)])
def test_a_zookeeper_mode_release_is_before_4_0(version: str, refused: bool) -> None:
    if refused:  # a rolling upgrade's target: one line
        with pytest.raises(UsageError, match=rf"^Kafka {re.escape(version)} has no ZooKeeper mode \(removed in 4\.0"):
            d.check_zookeeper_version(version)
    else:
        assert d.check_zookeeper_version(version) == version


@pytest.mark.parametrize("version, artifacts, config, option", [
    # 3.9's tarball: slf4j-reload4j + reload4j, -Dlog4j.configuration (a URL)
    ("3.9.2", ("slf4j-reload4j", "reload4j"), "log4j.properties", "-Dlog4j.configuration=file:/r/log4j.properties"),
    ("2.4.1", ("slf4j-reload4j", "reload4j"), "log4j.properties", "-Dlog4j.configuration=file:/r/log4j.properties"),
    # 4.0 moved to log4j2 (KIP-653): the slf4j 1.7 binding, -Dlog4j2.configurationFile (a path)
    ("4.0.0", ("log4j-slf4j-impl", "log4j-core", "log4j-api"), "log4j2.properties",
     "-Dlog4j2.configurationFile=/r/log4j2.properties"),
    ("4.4.0", ("log4j-slf4j-impl", "log4j-core", "log4j-api"), "log4j2.properties",
     "-Dlog4j2.configurationFile=/r/log4j2.properties"),
])
def test_each_release_logs_with_its_own_framework(version: str, artifacts: tuple[str, ...], config: str,
                                                  option: str) -> None:
    assert tuple(a for _, a, _ in d.logging_artifacts(version)) == artifacts
    assert d.log4j_config_name(version) == config
    assert d.log4j_option(Path("/r") / config) == option
    assert f"<artifactId>{artifacts[0]}</artifactId>" in d.maven_pom(version)


def test_both_logging_configurations_ship_and_write_the_same_files() -> None:
    from importlib import resources

    files = resources.files("kafka_chaos.harness")
    log4j, log4j2 = (files.joinpath(n).read_text() for n in ("log4j.properties", "log4j2.properties"))
    for name in ("server.log", "controller.log", "state-change.log", "kafka-request.log", "log-cleaner.log"):
        assert f"${{kafka.logs.dir}}/{name}" in log4j and f"${{sys:kafka.logs.dir}}/{name}" in log4j2
    assert "Console" not in log4j2  # stdout.log keeps only what the JVM says before logging is up


def test_missing_java(tools: Path) -> None:
    (tools / "java").unlink()
    with pytest.raises(HarnessError, match="Java not found") as info:
        resolve_distribution()
    assert "\n" not in str(info.value)


def test_java_home_wins_over_path(tools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tools / "java").unlink()
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    java = executable(tmp_path / "jdk" / "bin" / "java", "exit 0\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert d.java_executable() == str(java)


def test_missing_maven(tools: Path) -> None:
    with pytest.raises(HarnessError, match=r"Maven \(mvn\) not found"):
        resolve_distribution("3.9.2")


def test_complete_cache_needs_no_maven(tools: Path, tmp_path: Path) -> None:
    home = tmp_path / "cache" / "kafka-3.9.2"
    tarball(home, "kafka_2.13-3.9.2.jar")
    (home / COMPLETE_MARKER).write_text("kafka_2.13-3.9.2.jar\n")
    dist = resolve_distribution()
    assert (dist.version, dist.source, dist.libs_dir) == ("3.9.2", "maven", home / "libs")


def test_maven_fetch_once_then_cached(tools: Path, tmp_path: Path) -> None:
    mvn = fake_mvn(tools, ["kafka_2.13-3.9.1.jar", "reload4j-1.2.25.jar", "slf4j-reload4j-1.7.36.jar"])
    dist = resolve_distribution("3.9.1")
    assert sorted(p.name for p in dist.jars) == ["kafka_2.13-3.9.1.jar", "reload4j-1.2.25.jar",
                                                  "slf4j-reload4j-1.7.36.jar"]
    pom = (tools / "last-pom.xml").read_text()
    for artifact in ("<artifactId>kafka_2.13</artifactId><version>3.9.1</version>",
                     "<artifactId>slf4j-reload4j</artifactId><version>1.7.36</version>",
                     "<artifactId>reload4j</artifactId><version>1.2.25</version>"):
        assert artifact in pom
    mvn.unlink()  # a second resolution must not call Maven
    assert resolve_distribution("3.9.1").libs_dir == dist.libs_dir


def test_half_done_fetch_is_redone(tools: Path, tmp_path: Path) -> None:
    home = tmp_path / "cache" / "kafka-3.9.2"
    tarball(home, "kafka_2.13-3.9.2.jar", "half-written.jar")  # no .complete marker
    fake_mvn(tools, ["kafka_2.13-3.9.2.jar", "zookeeper-3.8.4.jar"])
    dist = resolve_distribution()
    assert sorted(p.name for p in dist.jars) == ["kafka_2.13-3.9.2.jar", "zookeeper-3.8.4.jar"]
    assert (home / COMPLETE_MARKER).is_file()


def test_maven_failure_is_one_line(tools: Path, tmp_path: Path) -> None:
    fake_mvn(tools, [], exit_code=1, output="[ERROR] Failed to execute goal: Could not resolve "
                                             "org.apache.kafka:kafka_2.13:jar:3.9.7")
    with pytest.raises(HarnessError, match="Maven could not fetch Kafka 3.9.7: Failed to execute goal") as info:
        resolve_distribution("3.9.7")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "cache" / "kafka-3.9.7" / COMPLETE_MARKER).exists()


def test_maven_without_the_kafka_jar_is_an_error(tools: Path) -> None:
    fake_mvn(tools, ["something-else.jar"])
    with pytest.raises(HarnessError, match="kafka_2.13-3.9.2.jar is not among"):
        resolve_distribution()


def test_class_data_sharing_flag_only_when_an_archive_exists(tools: Path, tmp_path: Path) -> None:
    from kafka_chaos.harness.local import cds

    dist = resolve_distribution(kafka_home=tarball(tmp_path / "k", "kafka_2.13-3.9.1.jar"))
    assert cds.archive_options(dist, "broker") == []
    archive = cds.archive_path(dist, "broker")
    assert archive.parent == tmp_path / "cache" / "cds"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"x")
    assert cds.archive_options(dist, "broker") == [f"-XX:SharedArchiveFile={archive}"]
    assert cds.archive_options(dist, "zookeeper") == []  # one archive per role
    (tmp_path / "k" / "libs" / "extra.jar").write_bytes(b"")  # another classpath, another archive
    assert cds.archive_options(dist, "broker") == []
