"""``kafka-chaos cluster delete-topic`` and ``add-partitions``: the topic operations faults make, by
hand, on the running CLI cluster (what the ``delete_topic`` and ``add_partitions`` fault kinds do)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kafka_chaos.common.errors import UsageError


def register_topic_verbs(verbs: "argparse._SubParsersAction[argparse.ArgumentParser]",
                         with_state_dir: Callable[[argparse.ArgumentParser], argparse.ArgumentParser]) -> None:
    delete = with_state_dir(verbs.add_parser(
        "delete-topic", help="delete a topic (AdminClient); says whether it waits for a down replica"))
    delete.add_argument("topic", metavar="TOPIC")
    delete.set_defaults(func=cluster_delete_topic)
    add = with_state_dir(verbs.add_parser(
        "add-partitions", help="add partitions with explicit replicas (AdminClient, or the topic znode)",
        description="New partitions are numbered on from the topic's current ones, one per "
                    "--replicas. The AdminClient accepts registered brokers only; --via znode "
                    "rewrites /brokers/topics/<t> and accepts stopped brokers too."))
    add.add_argument("topic", metavar="TOPIC")
    add.add_argument("--replicas", action="append", required=True, metavar="B1,B2,...",
                     help="one new partition's replicas in AR order (repeatable)")
    add.add_argument("--via", choices=("admin", "znode"), default="admin", help="[default: admin]")
    add.set_defaults(func=cluster_add_partitions)


def _replicas(text: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--replicas {text!r}: expected comma-separated broker ids, e.g. 1,2") from None
    if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
        raise UsageError(f"--replicas {text!r}: expected distinct non-negative broker ids")
    return ids


def cluster_delete_topic(args: argparse.Namespace) -> int:
    from kafka_chaos.cli.cluster import attach_running, state_dir_of
    from kafka_chaos.harness.metadata import request_topic_deletion

    import time

    from kafka_chaos.harness.zksnapshot import DELETE_TOPICS
    from kafka_chaos.scenarios.faults.topics import topic_exists

    cluster = attach_running(state_dir_of(args))
    if not topic_exists(cluster.zookeeper_connect, args.topic):
        raise UsageError(f"no topic {args.topic!r} in ZooKeeper")
    request_topic_deletion(cluster.bootstrap_servers, args.topic)
    deadline = time.monotonic() + 10.0  # the answer comes before the topic znode goes
    while topic_exists(cluster.zookeeper_connect, args.topic) and time.monotonic() < deadline:
        time.sleep(0.5)
    if not topic_exists(cluster.zookeeper_connect, args.topic):
        print(f"topic {args.topic} deleted")
    else:
        print(f"topic {args.topic} queued for deletion ({DELETE_TOPICS}/{args.topic}): a replica's broker "
              f"is down; the controller completes it when that broker starts")
    return 0


def cluster_add_partitions(args: argparse.Namespace) -> int:
    from kafka_chaos.cli.cluster import attach_running, state_dir_of
    from kafka_chaos.scenarios.faults.topics import partition_count

    wanted = [_replicas(text) for text in args.replicas]
    cluster = attach_running(state_dir_of(args))
    first = partition_count(cluster.zookeeper_connect, args.topic)
    additions = {first + i: replicas for i, replicas in enumerate(wanted)}
    if args.via == "admin":
        from kafka_chaos.harness.metadata import create_partitions

        create_partitions(cluster.bootstrap_servers, args.topic, additions)
    else:
        from kafka_chaos.scenarios.faults.topics import write_partitions_znode

        write_partitions_znode(cluster.zookeeper_connect, args.topic, additions)
    print(", ".join(f"{args.topic}-{p} on {list(r)}" for p, r in sorted(additions.items())) + f" added ({args.via})")
    return 0
