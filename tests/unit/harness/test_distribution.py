"""Distribution resolution on fake layouts: a fake Kafka tarball, a fake cache, a fake mvn."""

from __future__ import annotations

import os
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


def test_kafka_home_with_kafka_4_is_refused(tools: Path, tmp_path: Path) -> None:
    home = tarball(tmp_path / "k", "kafka_2.13-4.0.0.jar")
    with pytest.raises(UsageError, match="no ZooKeeper mode"):
        resolve_distribution(kafka_home=home)


@pytest.mark.parametrize("version, message", [
    ("4.0.0", "no ZooKeeper mode"), ("4.1.1", "no ZooKeeper mode"),
    ("2.3.1", "Maven Central from 2.4.0"), ("1.1.1", "Maven Central from 2.4.0"), ("0.11.0", "Maven Central"),
    ("3.9", "not of the form"), ("latest", "not of the form"),
])
def test_version_outside_2_4_to_3_9_is_refused(tools: Path, version: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_distribution(version)


@pytest.mark.parametrize("version", ["2.4.0", "2.4.1", "2.8.2", "3.0.0", "3.9.2", " 3.4.1 "])
def test_version_from_2_4_to_3_9_is_accepted(version: str) -> None:
    assert check_version(version) == version.strip()


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
