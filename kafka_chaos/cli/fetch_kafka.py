"""`kafka-chaos fetch-kafka`: resolve (download once) the Kafka jars and print their directory,
so set-up scripts can fetch ahead of the first run."""

from __future__ import annotations

import argparse


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "fetch-kafka", help="download Kafka 3.x and its dependencies once; print the libs dir",
        description="Resolve the Kafka distribution the local launcher runs: from Maven Central into "
                    "~/.cache/kafka-chaos/kafka-<version>/libs (once), or from --kafka-home / "
                    "$KAFKA_HOME, the brokers' Prometheus JMX exporter agent (Maven Central, once), "
                    "and build the class-data-sharing archives local JVMs start "
                    "faster with (once; a 1-broker cluster start). Prints the directory of jars.")
    parser.add_argument("--kafka-version", default=None, metavar="V", help="a Kafka release, 2.4.0 to 3.9.x or 4.x [default: 3.9.2]")
    parser.add_argument("--kafka-home", default=None, metavar="DIR",
                        help="an extracted Apache Kafka tarball [default: $KAFKA_HOME]")
    parser.add_argument("--no-cds", action="store_true",
                        help="skip building the class-data-sharing archives that speed up local start-up")
    parser.add_argument("--image", action="store_true",
                        help="also build the containers launcher's image of this release (needs a Docker "
                             "engine; the first containers cluster adds its class-data layer)")
    parser.set_defaults(func=fetch_kafka)


def fetch_kafka(args: argparse.Namespace) -> int:
    from kafka_chaos.cli.cluster import quiet_clients
    from kafka_chaos.harness.distribution import resolve_distribution

    quiet_clients(args)
    distribution = resolve_distribution(args.kafka_version, args.kafka_home)
    from kafka_chaos.harness.jmx_exporter import resolve_agent_jar

    resolve_agent_jar()  # the brokers' JMX exporter agent, fetched ahead of the first run too
    if not args.no_cds:
        from kafka_chaos.harness.local.cds import build_archives

        build_archives(distribution)
    if args.image:
        from kafka_chaos.harness.containers.image import ensure_kafka_image

        ensure_kafka_image(distribution)
    print(distribution.libs_dir)
    return 0
