"""``kafka-chaos cluster fail-log-dir`` and ``repair-log-dir``: a failed log directory by hand, on
the running CLI cluster (what the ``log_dir_failure`` fault kind and its heal do;
:mod:`harness.log_dirs`). ``cluster up --log-dirs 2`` gives every broker two directories, so one
can fail while the broker keeps running; ``cluster up --mode kraft --log-dirs 2`` too (local
launcher, Kafka 3.7+: JBOD, KIP-858)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from kafka_chaos.common.errors import HarnessError, UsageError

if TYPE_CHECKING:
    from typing import Union

    from kafka_chaos.cli.cluster import CliCluster
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    LogDirCliCluster = Union[CliCluster, LocalKraftCluster]


def register_log_dir_verbs(verbs: "argparse._SubParsersAction[argparse.ArgumentParser]",
                           with_state_dir: Callable[[argparse.ArgumentParser], argparse.ArgumentParser]) -> None:
    fail = with_state_dir(verbs.add_parser(
        "fail-log-dir", help="fail one of a broker's log directories (its replicas there go offline)",
        description="Move the directory aside and put a file in its place: the broker notices at its "
                    "next write there (the high-watermark checkpoint, every "
                    "replica.high.watermark.checkpoint.interval.ms), takes the replicas there offline and "
                    "tells the controller; with no live directory left it halts. "
                    "`kafka-chaos cluster repair-log-dir BROKER_ID` undoes it (restarting the broker)."))
    fail.add_argument("target", metavar="BROKER_ID", help="a broker id")
    fail.add_argument("--dir", dest="directory", type=int, default=0, metavar="N",
                      help="which of its log.dirs, 0 = the first [default: 0]")
    fail.set_defaults(func=cluster_fail_log_dir)
    repair = with_state_dir(verbs.add_parser(
        "repair-log-dir", help="put a broker's failed log directories back and restart it",
        description="Kafka keeps a failed directory offline until the broker restarts: the directory is "
                    "put back, then the broker is stopped (controlled shutdown) if it runs, and started."))
    repair.add_argument("target", metavar="BROKER_ID", help="a broker id")
    repair.set_defaults(func=cluster_repair_log_dir)


def _log_dir_cluster(args: argparse.Namespace) -> tuple[LogDirCliCluster, int]:
    """The running cluster (either mode: a KRaft broker's heartbeat reports the directory,
    ``handleDirectoriesOffline``), when its launcher can fail log directories."""
    from kafka_chaos.cli.cluster import _attach_any, _running, quiet_clients, resolve_broker_id, state_dir_of
    from kafka_chaos.harness.cluster import Capability, capabilities_of, capability_problems

    quiet_clients(args)
    state_dir = state_dir_of(args)
    cluster = _running(_attach_any(state_dir), state_dir)
    broker_id = resolve_broker_id(args.target, cluster)
    if Capability.LOG_DIR_FAILURE not in capabilities_of(cluster):
        raise HarnessError(capability_problems(cluster).get(Capability.LOG_DIR_FAILURE)
                           or "this cluster cannot fail log directories (the containers KRaft launcher has none yet)")
    return cast("LogDirCliCluster", cluster), broker_id


def cluster_fail_log_dir(args: argparse.Namespace) -> int:
    cluster, broker_id = _log_dir_cluster(args)
    dirs = cluster.log_dirs(broker_id)
    if not 0 <= args.directory < len(dirs):
        raise UsageError(f"--dir {args.directory}: broker {broker_id} has log directories "
                         f"0..{len(dirs) - 1} ({', '.join(dirs)})")
    if not cluster.broker_running(broker_id):
        raise HarnessError(f"broker {broker_id} is not running: a failed directory is noticed by a running broker")
    failed = set(cluster.failed_log_dirs(broker_id))
    if args.directory in failed:
        raise UsageError(f"log directory {args.directory} of broker {broker_id} is already failed")
    held = cluster.log_dir_partitions(broker_id, args.directory)
    cluster.fail_log_dir(broker_id, args.directory)
    last = len(failed | {args.directory}) == len(dirs)
    print(f"broker {broker_id}: log directory {args.directory} ({dirs[args.directory]}) failed; it holds "
          f"{len(held)} replica(s): {', '.join(f'{t}-{p}' for t, p in held) or 'none'}")
    print("it was the broker's last live directory: the broker halts once it notices" if last
          else "the broker takes them offline once it notices and keeps running on its other directories")
    print(f"`kafka-chaos cluster repair-log-dir {broker_id}` repairs it and restarts the broker")
    return 0


def cluster_repair_log_dir(args: argparse.Namespace) -> int:
    from kafka_chaos.cli.cluster import node_note

    cluster, broker_id = _log_dir_cluster(args)
    failed = cluster.failed_log_dirs(broker_id)
    if not failed:
        raise UsageError(f"broker {broker_id} has no failed log directory")
    repaired = cluster.repair_log_dirs(broker_id)
    if cluster.broker_running(broker_id):
        cluster.stop_broker(broker_id)
    cluster.start_broker(broker_id)
    cluster.write_state()
    print(f"broker {broker_id}: log directories {', '.join(map(str, repaired))} repaired; "
          f"restarted ({node_note(cast('CliCluster', cluster), broker_id)})")  # it reads endpoint() only
    return 0
