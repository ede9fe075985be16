"""The containers launcher's per-release choices (issue 45): which logging configuration a node's
image carries and which JVM flag names it -- log4j 1 properties up to 3.9, log4j2 from 4.0
(KIP-653) -- taken from the very functions the local launcher calls
(``harness.distribution.log4j_config_name``, ``log4j_option``), so the two never disagree."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from kafka_chaos.harness.containers.image import KAFKA_HOME, _dockerfile, _log4j_config, logging_config
from kafka_chaos.harness.containers.nodes import FILE_LOG4J_CONFIG, java_command
from kafka_chaos.harness.distribution import log4j_config_name, log4j_option

# release, the configuration in the image, the JVM flag naming it
RELEASES = [
    ("2.8.2", f"{KAFKA_HOME}/config/log4j.properties", f"-Dlog4j.configuration=file:{KAFKA_HOME}/config/log4j.properties"),
    ("3.9.2", f"{KAFKA_HOME}/config/log4j.properties", f"-Dlog4j.configuration=file:{KAFKA_HOME}/config/log4j.properties"),
    ("4.0.0", f"{KAFKA_HOME}/config/log4j2.properties", f"-Dlog4j2.configurationFile={KAFKA_HOME}/config/log4j2.properties"),
    ("4.3.1", f"{KAFKA_HOME}/config/log4j2.properties", f"-Dlog4j2.configurationFile={KAFKA_HOME}/config/log4j2.properties"),
    ("4.4.0", f"{KAFKA_HOME}/config/log4j2.properties", f"-Dlog4j2.configurationFile={KAFKA_HOME}/config/log4j2.properties"),
]


@pytest.mark.parametrize(("version", "config", "flag"), RELEASES)
def test_a_node_logs_with_its_releases_configuration_and_flag(version: str, config: str, flag: str) -> None:
    assert logging_config(version) == config
    command = java_command("1g", [], "kafka.Kafka", "s.properties", log4j=logging_config(version))
    assert flag in command
    assert [a for a in command if "log4j" in a] == [flag]  # exactly one logging flag
    # the local launcher's choice, whatever the directory
    assert Path(config).name == log4j_config_name(version)
    assert flag == log4j_option(Path(config))


@pytest.mark.parametrize(("version", "config", "flag"), RELEASES)
def test_the_kafka_layer_copies_the_releases_configuration_where_the_flag_points(
        version: str, config: str, flag: str) -> None:
    dockerfile = _dockerfile("base", version)
    assert f"COPY {log4j_config_name(version)} {config}\n" in dockerfile
    text = _log4j_config(version)
    expected = resources.files("kafka_chaos.harness.containers").joinpath(log4j_config_name(version)).read_text()
    assert text == expected


def test_up_to_3_9_the_kafka_layer_is_the_one_built_before_4x_ran_here() -> None:
    """Its tag is a hash of this text: unchanged, every 3.x image built so far is reused."""
    assert _dockerfile("base", "3.9.2") == ("FROM base\n"
                                            f"COPY libs/ {KAFKA_HOME}/libs/\n"
                                            f"COPY log4j.properties {KAFKA_HOME}/config/log4j.properties\n"
                                            f"COPY metrics/ {KAFKA_HOME}/metrics/\n"
                                            f"WORKDIR {KAFKA_HOME}\n")


def _properties(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def test_the_log4j2_configuration_prints_what_the_log4j_one_does_on_stdout() -> None:
    """Same console, layout and levels as the 3.x containers' log4j.properties, so `docker logs`
    (the run's <node>.log) reads the same on either release."""
    one = _properties(_log4j_config("3.9.2"))
    two = _properties(_log4j_config("4.4.0"))
    assert two["appender.stdout.type"] == "Console" and two["appender.stdout.target"] == "SYSTEM_OUT"
    assert two["appender.stdout.layout.pattern"] == one["log4j.appender.stdout.layout.ConversionPattern"]
    assert one["log4j.rootLogger"] == f"{two['rootLogger.level']}, stdout"
    assert two["rootLogger.appenderRef.stdout.ref"] == "stdout"
    levels_one = {key.removeprefix("log4j.logger."): value for key, value in one.items()
                  if key.startswith("log4j.logger.")}
    names = {key.split(".")[1]: value for key, value in two.items() if key.startswith("logger.") and key.endswith(".name")}
    levels_two = {name: two[f"logger.{key}.level"] for key, name in names.items()}
    assert levels_two == {name: level for name, level in levels_one.items() if name != "org.apache.zookeeper"}


def test_file_logging_stays_log4j_1() -> None:
    """broker_log_files is a ZooKeeper-mode broker's (3.x only): its configuration is log4j 1's."""
    assert java_command("1g", [], "kafka.Kafka", "s", log4j=FILE_LOG4J_CONFIG)[-5] == \
        f"-Dlog4j.configuration=file:{FILE_LOG4J_CONFIG}"
