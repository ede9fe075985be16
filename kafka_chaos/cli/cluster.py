"""`kafka-chaos cluster`: a ZooKeeper-mode Kafka cluster that outlives the command.

``up`` starts ZooKeeper and N brokers — JVMs in their own sessions (``--backend local``, the
default) or Docker containers (``--backend containers``: :class:`ContainerCluster` with a state
dir, kept after this process exits) — and writes ``<state dir>/cluster.json``; the other verbs
re-attach to it from that file (its ``backend`` says which launcher, its ``mode`` whether it is
a KRaft cluster: ``--mode kraft`` on either launcher, :mod:`cli.cluster_kraft`).  The state dir defaults to
``./.kafka-chaos/cluster`` (or ``$KAFKA_CHAOS_STATE_DIR``); a local cluster keeps every node's
config, data and logs there, a containers cluster only the file.  ``down`` stops the nodes and
removes it.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Union

from kafka_chaos.harness.errors import HarnessError, UsageError

if TYPE_CHECKING:
    from kafka_chaos.harness.containers.cluster import ContainerCluster
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster
    from kafka_chaos.harness.local.cluster import LocalCluster
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    CliCluster = Union[LocalCluster, ContainerCluster]
    AnyCliCluster = Union[LocalCluster, ContainerCluster, LocalKraftCluster, ContainerKraftCluster]

DEFAULT_STATE_DIR = Path(".kafka-chaos") / "cluster"
STATE_DIR_ENV = "KAFKA_CHAOS_STATE_DIR"
ZOOKEEPER_TARGET = "zookeeper"
CUT_PEERS = ("zookeeper", "peers", "clients", "everyone", "zookeeper-leader")
ZOOKEEPER_SERVER_PREFIX = "zookeeper-"
DEGRADE_LINKS = ("zookeeper", "peers", "clients", "everyone")


def default_state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "cluster", help="start, inspect, break and stop a Kafka cluster that keeps running",
        description="ZooKeeper + N Kafka brokers (JVMs on 127.0.0.1, or Docker containers with "
                    "--backend containers) that keep running between commands; the state dir holds "
                    "cluster.json (and a local cluster's configs, data and logs).")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    def with_state_dir(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--state-dir", type=Path, default=None, metavar="DIR",
                       help=f"the cluster's directory [default: ${STATE_DIR_ENV} or ./{DEFAULT_STATE_DIR}]")
        return p

    up = with_state_dir(verbs.add_parser("up", help="start ZooKeeper and N brokers, print their addresses"))
    up.add_argument("--brokers", type=int, default=3, metavar="N", help="number of brokers, 1-9 [default: 3]")
    up.add_argument("--backend", default="local", metavar="local|containers|auto",
                    help="JVMs on loopback, or Docker containers kept after this command exits (later "
                         "verbs find them through cluster.json; docs/containers.md); auto: containers when "
                         "a Docker engine answers [default: local]")
    up.add_argument("--base-image", default=None, metavar="IMAGE",
                    help="containers: a local JRE image to build the Kafka image on (docs/containers.md)")
    up.add_argument("--mode", choices=("zookeeper", "kraft"), default="zookeeper",
                    help="kraft: KRaft controllers (--controllers) instead of ZooKeeper, on either launcher "
                         "[default: zookeeper]")
    up.add_argument("--controllers", type=int, default=1, choices=(1, 3), metavar="N",
                    help="KRaft controllers, 1 or 3 (--mode kraft) [default: 1]")
    up.add_argument("--quorum", choices=("static", "dynamic"), default="static",
                    help="dynamic: the KRaft controllers formatted with --initial-controllers, voters "
                         "changeable (KIP-853, Kafka 3.9+; --mode kraft) [default: static]")
    up.add_argument("--zookeepers", type=int, default=1, choices=(1, 3, 5), metavar="N",
                    help="ZooKeeper ensemble size, 1, 3 or 5 [default: 1]")
    up.add_argument("--log-dirs", type=int, default=1, choices=(1, 2, 3, 4), metavar="N",
                    help="log directories per broker (log.dirs); 2 or more: `fail-log-dir` leaves the "
                         "broker running [default: 1]")
    up.add_argument("--link-proxies", action="store_true",
                    help="brokers reach ZooKeeper through link proxies of their own, so `cluster delay` "
                         "and `cluster cut --from zookeeper` work without root; as root their peer and "
                         "client links go through the proxies too (`cluster delay --to peers|clients`)")
    up.add_argument("--control-plane-listener", action="store_true",
                    help="KIP-291: each broker also listens on a CONTROL_PLANE port of its own, named by "
                         "control.plane.listener.name, so the controller's requests get their own queue "
                         "and handler thread (docs/kip-291.md)")
    up.add_argument("--kafka-version", default=None, metavar="V", help="a Kafka release, 2.4.0 to 3.9.x, or 4.x with --mode kraft [default: 3.9.2]")
    up.add_argument("--kafka-home", default=None, metavar="DIR",
                    help="an extracted Apache Kafka tarball to run instead of the Maven download "
                         "[default: $KAFKA_HOME]")
    up.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                    help="broker property for every broker, or ID:KEY=VALUE for one (repeatable)")
    up.add_argument("--broker-heap", default=None, metavar="SIZE", help="broker -Xmx [default: 384m]")
    up.add_argument("--timeout", type=float, default=120.0, metavar="S",
                    help="how long to wait for the cluster to be ready [default: 120]")
    up.set_defaults(func=cluster_up)

    status = with_state_dir(verbs.add_parser("status", help="controller, brokers and partitions from ZooKeeper"))
    status.add_argument("--topic", action="append", default=None, metavar="T",
                        help="only these topics (repeatable) [default: all]")
    status.set_defaults(func=cluster_status)

    for verb, text in (("kill", "SIGKILL a broker"),
                       ("stop", "SIGTERM a broker (controlled shutdown) and wait for it to exit"),
                       ("pause", "SIGSTOP a broker (or 'zookeeper', or one server 'zookeeper-N')"),
                       ("resume", "SIGCONT a broker (or 'zookeeper', or one server 'zookeeper-N')"),
                       ("start", "start a stopped or killed broker on its old data")):
        p = with_state_dir(verbs.add_parser(verb, help=text))
        p.add_argument("target", metavar="BROKER_ID",
                       help="a broker id, or one ZooKeeper server 'zookeeper-N' (N = its id, "
                            "'zookeeper-leader' for the one leading)"
                            + (", or 'zookeeper' (every server)" if verb in ("pause", "resume") else ""))
        p.set_defaults(func=cluster_control, action=verb)

    cut = with_state_dir(verbs.add_parser(
        "cut", help="drop a broker's traffic with ZooKeeper, its peers and/or clients (root + iptables)",
        description="Drop every packet between the broker and the named peers, both ways, until "
                    "`cluster heal` (docs/local-network.md)."))
    cut.add_argument("target", metavar="BROKER_ID", help="a broker id")
    cut.add_argument("--from", dest="cut_from", action="append", choices=CUT_PEERS, default=None,
                     help="what to cut it from (repeatable) [default: everyone]; zookeeper-leader: "
                          "only the ZooKeeper server leading now (an ensemble)")
    cut.set_defaults(func=cluster_cut)
    degrade = with_state_dir(verbs.add_parser(
        "degrade", help="lose a share of a broker's packets and/or limit its bandwidth (root + iptables/tc)",
        description="Drop PCT %% of the packets between the broker and the named peers (both ways) "
                    "and/or limit them to KBIT kbit/s, until `cluster heal` (docs/local-network.md)."))
    degrade.add_argument("target", metavar="BROKER_ID", help="a broker id")
    degrade.add_argument("--to", dest="links", action="append", choices=DEGRADE_LINKS, default=None,
                         help="which links (repeatable) [default: everyone]")
    degrade.add_argument("--loss", type=float, default=0.0, metavar="PCT", help="packet loss in %%, (0, 100]")
    degrade.add_argument("--rate", type=int, default=None, metavar="KBIT", help="bandwidth limit in kbit/s")
    degrade.set_defaults(func=cluster_degrade)
    heal = with_state_dir(verbs.add_parser("heal", help="remove every cut and degradation"))
    heal.set_defaults(func=cluster_heal)

    from kafka_chaos.cli.cluster_topics import register_topic_verbs

    register_topic_verbs(verbs, with_state_dir)
    from kafka_chaos.cli.cluster_log_dirs import register_log_dir_verbs

    register_log_dir_verbs(verbs, with_state_dir)
    from kafka_chaos.cli.cluster_links import register_link_verbs

    register_link_verbs(verbs, with_state_dir)

    down = with_state_dir(verbs.add_parser("down", help="kill every node and remove the state dir"))
    down.set_defaults(func=cluster_down)

    prune = verbs.add_parser(
        "prune", help="remove containers/networks/volumes left by crashed container runs",
        description="Remove every Docker container, network and volume labelled kafka-chaos.run "
                    "whose owning process is gone (or of every run with --all).")
    prune.add_argument("--all", dest="all_runs", action="store_true",
                       help="also remove objects of runs whose owner is still alive")
    prune.add_argument("--run", dest="runs", action="append", metavar="RUN_ID",
                       help="only this run (repeatable); see the kafka-chaos.run label")
    prune.add_argument("--images", action="store_true",
                       help="also remove the built kafka-chaos-kafka and kafka-chaos-jre images")
    prune.set_defaults(func=cluster_prune)


def state_dir_of(args: argparse.Namespace) -> Path:
    return (args.state_dir or default_state_dir()).absolute()


def quiet_clients(args: argparse.Namespace) -> None:
    """ZooKeeper and librdkafka connection chatter is noise on a terminal unless -v."""
    if not getattr(args, "verbose", False):
        for name in ("kazoo", "kafka_chaos.harness.metadata.librdkafka"):
            logging.getLogger(name).setLevel(logging.ERROR)


def cluster_up(args: argparse.Namespace) -> int:
    from kafka_chaos.harness.backends import resolve_backend
    from kafka_chaos.harness.config import ClusterConfig, check_dynamic_quorum, check_kraft_release, parse_set_options
    from kafka_chaos.harness.distribution import resolve_distribution
    from kafka_chaos.harness.local.cluster import STATE_FILE, LocalCluster

    quiet_clients(args)
    backend = resolve_backend(args.backend)
    check_up_options(backend, link_proxies=args.link_proxies, base_image=args.base_image,
                     explicit=args.backend != "auto")
    state_dir = state_dir_of(args)
    cluster_overrides, broker_overrides = parse_set_options(args.settings)
    extra = {"broker_heap": args.broker_heap} if args.broker_heap else {}
    config = ClusterConfig(brokers=args.brokers, cluster_overrides=cluster_overrides,
                           broker_overrides=broker_overrides, zookeepers=args.zookeepers,
                           log_dirs=args.log_dirs, link_proxies=args.link_proxies,
                           control_plane_listener=args.control_plane_listener, mode=args.mode,
                           controllers=args.controllers, quorum=args.quorum, **extra)
    if args.mode == "kraft" and backend == "containers":
        from kafka_chaos.cli.cluster_kraft import check_container_kraft_up

        check_container_kraft_up(config)
    if (state_dir / STATE_FILE).exists():
        previous = _attach_any(state_dir)
        if previous.any_running():
            raise UsageError(f"a cluster is already running in {state_dir} "
                             f"(bootstrap {previous.bootstrap_servers}); "
                             f"run `kafka-chaos cluster down --state-dir {state_dir}` first")
        logging.getLogger(__name__).info("removing the dead cluster left in %s", state_dir)
        previous.destroy()
    elif state_dir.exists() and any(state_dir.iterdir()):
        raise UsageError(f"{state_dir} exists and is not a kafka-chaos cluster dir (no {STATE_FILE}); "
                         "choose another --state-dir")
    distribution = resolve_distribution(args.kafka_version, args.kafka_home)
    check_kraft_release(args.mode, distribution.version)  # 4.x: KRaft only, one line
    if config.quorum == "dynamic":
        check_dynamic_quorum(distribution.version)  # 3.9+, one line
    if args.mode == "kraft" and backend == "containers":
        from kafka_chaos.cli.cluster_kraft import container_kraft_up

        return container_kraft_up(config, distribution, state_dir, base_image=args.base_image, timeout=args.timeout)
    if args.mode == "kraft":
        from kafka_chaos.harness.local.kraft import LocalKraftCluster

        kraft = LocalKraftCluster(config, distribution, state_dir, detached=True, start_timeout=args.timeout)
        kraft.start()
        print(f"Kafka {kraft.kafka_version} KRaft cluster is up ({config.controllers} controller(s), {config.quorum} quorum, "
              f"{config.brokers} brokers), state in {state_dir}")
        print(f"bootstrap servers: {kraft.bootstrap_servers}")
        print(f"controllers:       {kraft.controller_quorum}")
        return 0
    cluster: CliCluster
    if backend == "containers":
        from kafka_chaos.harness.containers.cluster import ContainerCluster

        cluster = ContainerCluster(config, distribution, base_image=args.base_image, start_timeout=args.timeout,
                                   state_dir=state_dir)
        where = f"containers (run {cluster.run_id}), state"
    else:
        cluster = LocalCluster(config, distribution, state_dir, detached=True, start_timeout=args.timeout)
        where = "state"
    cluster.start()  # cleans up after itself on failure and Ctrl-C
    print(f"Kafka {cluster.kafka_version} cluster is up ({config.brokers} brokers), {where} in {state_dir}")
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    print(f"zookeeper:         {cluster.zookeeper_connect}")
    planes = [e.control_plane for e in map(cluster.endpoint, cluster.broker_ids) if e.control_plane]
    if planes:
        print(f"control plane:     {','.join(planes)} (CONTROL_PLANE: the controller's requests)")
    return 0


def check_up_options(backend: str, *, link_proxies: bool, base_image: str | None, explicit: bool) -> None:
    """The ``cluster up`` options one launcher has and the other lacks (one-line UsageError)."""
    if backend == "containers" and link_proxies:
        raise UsageError("--link-proxies is a local-launcher option: containers have no link proxies "
                         "(docs/containers.md, \"Delayed links: not yet\")")
    if backend == "local" and base_image is not None and explicit:
        raise UsageError("--base-image applies to --backend containers only")


def _attach_any(state_dir: Path) -> AnyCliCluster:
    """Either mode's cluster (a KRaft one when its cluster.json says so)."""
    from kafka_chaos.harness.containers.kraft_state import is_container_kraft_state
    from kafka_chaos.harness.local.state import load_state_file, state_mode

    state = load_state_file(state_dir)
    if is_container_kraft_state(state):
        from kafka_chaos.harness.containers.kraft import ContainerKraftCluster

        return ContainerKraftCluster.attach(state_dir)
    if state_mode(state) == "kraft":
        from kafka_chaos.harness.local.kraft import LocalKraftCluster

        return LocalKraftCluster.attach(state_dir)
    return _attach(state_dir)


def _attach(state_dir: Path) -> CliCluster:
    """The cluster ``cluster up`` left in ``state_dir``, on the launcher its cluster.json names."""
    from kafka_chaos.harness.containers.cluster import ContainerCluster
    from kafka_chaos.harness.containers.state import state_backend
    from kafka_chaos.harness.local.cluster import LocalCluster
    from kafka_chaos.harness.local.state import load_state_file

    if state_backend(load_state_file(state_dir)) == "containers":
        return ContainerCluster.attach(state_dir)
    return LocalCluster.attach(state_dir)


def attach_running(state_dir: Path) -> CliCluster:
    cluster = _attach_any(state_dir)
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    if isinstance(cluster, (LocalKraftCluster, ContainerKraftCluster)):
        raise UsageError(f"the cluster in {state_dir} is a KRaft one: this verb is ZooKeeper mode's")
    _running(cluster, state_dir)
    return cluster


def _running(cluster: AnyCliCluster, state_dir: Path) -> AnyCliCluster:
    if not cluster.any_running():
        raise HarnessError(f"the cluster in {state_dir} is not running (every node is gone); "
                           f"`kafka-chaos cluster down --state-dir {state_dir}` removes what is left")
    return cluster


def cluster_status(args: argparse.Namespace) -> int:
    from kafka_chaos.harness.local.cluster import LocalCluster
    from kafka_chaos.harness.observer import ZkObserver

    quiet_clients(args)
    state_dir = state_dir_of(args)
    any_cluster = _running(_attach_any(state_dir), state_dir)
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    if isinstance(any_cluster, (LocalKraftCluster, ContainerKraftCluster)):
        from kafka_chaos.cli.cluster_kraft import print_status

        print_status(any_cluster, state_dir, args.topic)
        return 0
    cluster = any_cluster
    if isinstance(cluster, LocalCluster):
        serving = _print_local_zookeeper(cluster, state_dir)
    else:
        serving = _print_container_zookeepers(cluster, state_dir)
    if not serving:
        _print_processes(cluster, live=None)
        return 0
    with ZkObserver(cluster.zookeeper_connect, topics=args.topic) as observer:
        snapshot = observer.snapshot()
    _print_processes(cluster, live=snapshot.live_brokers)
    print(f"controller: {snapshot.controller if snapshot.controller is not None else 'none'} "
          f"(controller_epoch {snapshot.controller_epoch})")
    if snapshot.pending_reassignment or snapshot.pending_preferred_election:
        print(f"pending: reassignment={snapshot.pending_reassignment} "
              f"preferred_election={snapshot.pending_preferred_election}")
    rows = [("TOPIC", "PARTITION", "REPLICAS", "LEADER", "ISR", "LEADER_EPOCH", "VERSION")]
    for key in sorted(snapshot.partitions):
        p = snapshot.partitions[key]
        rows.append((p.topic, str(p.partition), ",".join(map(str, p.replicas)),
                     str(p.leader), ",".join(map(str, p.isr)), str(p.leader_epoch), str(p.version)))
    if len(rows) == 1:
        print("no topics")
        return 0
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def _print_local_zookeeper(cluster: LocalCluster, state_dir: Path) -> bool:
    """The ZooKeeper lines of a local cluster; whether ZooKeeper can be asked for the rest."""
    zk_pid = cluster.zookeeper_pid
    zk_note = "running" if zk_pid else "DOWN"
    if zk_pid and cluster.zookeeper_paused():
        zk_note = "PAUSED"
    print(f"state dir {state_dir}; Kafka {cluster.kafka_version}")
    print(f"zookeeper {cluster.zookeeper_connect} pid {zk_pid or '-'} {zk_note}")
    _print_ensemble_modes(cluster)
    return bool(zk_pid) and zk_note != "PAUSED"


def _print_container_zookeepers(cluster: ContainerCluster, state_dir: Path) -> bool:
    """The ZooKeeper lines of a containers cluster (one per server's container); whether
    ZooKeeper can be asked for the rest."""
    print(f"state dir {state_dir}; Kafka {cluster.kafka_version}; containers (run {cluster.run_id}, "
          f"image {cluster.image})")
    print(f"zookeeper {cluster.zookeeper_connect}")
    states = []
    for node, container in cluster.node_containers().items():
        if node.startswith("zookeeper"):
            state = _container_note(cluster.zookeeper_server_running(_server_of(node)), container.status == "paused")
            print(f"  {node}  container {container.name}  {state}")
            states.append(state)
    _print_ensemble_modes(cluster)
    return "running" in states


def _server_of(node: str) -> int:
    """``zookeeper`` -> 1, ``zookeeper-N`` -> N."""
    return int(node.removeprefix(ZOOKEEPER_SERVER_PREFIX)) if node.startswith(ZOOKEEPER_SERVER_PREFIX) else 1


def _container_note(running: bool, paused: bool) -> str:
    return "PAUSED" if paused else "running" if running else "DOWN"


def _print_ensemble_modes(cluster: CliCluster) -> None:
    if len(cluster.zookeeper_servers()) > 1:
        from kafka_chaos.harness.zk_ensemble import modes

        for server, mode in modes(cluster.zookeeper_client_ports()).items():
            running = cluster.zookeeper_server_running(server)
            print(f"  zookeeper-{server}  {mode or ('not serving' if running else 'DOWN')}")


def _print_processes(cluster: CliCluster, live: object) -> None:
    print("brokers:")
    for broker_id in cluster.broker_ids:
        endpoint = cluster.endpoint(broker_id)
        running = cluster.broker_running(broker_id)
        state = _container_note(running, running and cluster.broker_paused(broker_id))
        # A container's log dirs are reachable only through a running (not frozen) process.
        failed = _failed_log_dirs(cluster, broker_id) if endpoint.container is None or state == "running" else []
        if isinstance(live, dict):
            state += ", registered" if broker_id in live else ", not registered"
        if failed:
            state += f", log dir(s) {','.join(map(str, failed))} FAILED (`cluster repair-log-dir {broker_id}`)"
        plane = f"  control plane {endpoint.control_plane}" if endpoint.control_plane else ""
        print(f"  {broker_id}  {endpoint.bootstrap}{plane}  {node_note(cluster, broker_id)}  {state}")


def _failed_log_dirs(cluster: CliCluster, broker_id: int) -> list[int]:
    try:
        return cluster.failed_log_dirs(broker_id)
    except (HarnessError, OSError) as exc:  # e.g. a container's, not as root: status goes on
        logging.getLogger(__name__).debug("log dirs of broker %d: %s", broker_id, exc)
        return []


def node_note(cluster: CliCluster, broker_id: int) -> str:
    """What runs a broker: ``pid N`` (local) or ``container NAME`` (containers)."""
    endpoint = cluster.endpoint(broker_id)
    if endpoint.container is not None:
        return f"container {endpoint.container}"
    return f"pid {endpoint.pid or '-'}"


_PAST = {"kill": "killed", "stop": "stopped", "pause": "paused", "resume": "resumed", "start": "started"}


def resolve_broker_id(target: str, cluster: AnyCliCluster) -> int:
    try:
        broker_id = int(target)
    except ValueError:
        raise UsageError(f"unknown broker id {target!r}: the brokers are "
                         f"{', '.join(map(str, cluster.broker_ids))}") from None
    if broker_id not in cluster.broker_ids:
        raise UsageError(f"unknown broker id {broker_id}: the brokers are "
                         f"{', '.join(map(str, cluster.broker_ids))}")
    return broker_id


def cluster_control(args: argparse.Namespace) -> int:
    quiet_clients(args)
    state_dir = state_dir_of(args)
    any_cluster = _running(_attach_any(state_dir), state_dir)
    action = args.action
    from kafka_chaos.harness.containers.kraft import ContainerKraftCluster
    from kafka_chaos.harness.local.kraft import LocalKraftCluster

    if isinstance(any_cluster, (LocalKraftCluster, ContainerKraftCluster)):
        from kafka_chaos.cli.cluster_kraft import CONTROLLER_PREFIX, control_controller

        if args.target.startswith(CONTROLLER_PREFIX):
            return control_controller(any_cluster, args.target, action)
        kraft_broker = resolve_broker_id(args.target, any_cluster)
        {"kill": any_cluster.kill_broker, "stop": any_cluster.stop_broker, "pause": any_cluster.pause_broker,
         "resume": any_cluster.resume_broker, "start": any_cluster.start_broker}[action](kraft_broker)
        any_cluster.write_state()
        print(f"broker {kraft_broker} {_PAST[action]}")
        return 0
    cluster = any_cluster
    if args.target.startswith(ZOOKEEPER_SERVER_PREFIX):
        return _zookeeper_server_control(cluster, args.target, action)
    if args.target == ZOOKEEPER_TARGET:
        if action not in ("pause", "resume"):
            raise UsageError(f"`cluster {action}` takes a broker id; ZooKeeper can only be paused or resumed")
        (cluster.pause_zookeeper if action == "pause" else cluster.resume_zookeeper)()
        print(f"zookeeper {action}d")
        return 0
    broker_id = resolve_broker_id(args.target, cluster)
    {"kill": cluster.kill_broker, "stop": cluster.stop_broker, "pause": cluster.pause_broker,
     "resume": cluster.resume_broker, "start": cluster.start_broker}[action](broker_id)
    cluster.write_state()  # current pids (None for a broker that is down)
    if action == "start":
        print(f"broker {broker_id} started ({node_note(cluster, broker_id)})")
    else:
        past = {"kill": "killed", "stop": "stopped", "pause": "paused", "resume": "resumed"}[action]
        print(f"broker {broker_id} {past}")
    return 0


def cut_arguments(peers: list[str] | None) -> dict[str, bool]:
    """``--from`` choices -> ``isolate`` keyword arguments (pure)."""
    chosen = set(peers or ["everyone"])
    every = "everyone" in chosen
    return {"from_zookeeper": every or "zookeeper" in chosen, "from_brokers": every or "peers" in chosen,
            "from_clients": every or "clients" in chosen}


def cluster_cut(args: argparse.Namespace) -> int:
    from kafka_chaos.harness.cluster import Capability, capabilities_of, capability_problems

    quiet_clients(args)
    cluster = attach_running(state_dir_of(args))
    broker_id = resolve_broker_id(args.target, cluster)
    peers = args.cut_from or []
    proxied_only = cluster.config.link_proxies and bool(peers) and set(peers) <= {"zookeeper", "zookeeper-leader"}
    if Capability.NETWORK_PARTITION not in capabilities_of(cluster) and not proxied_only:
        raise HarnessError(capability_problems(cluster).get(Capability.NETWORK_PARTITION)
                           or "this cluster cannot cut network links")
    if "zookeeper-leader" in peers:
        if len(peers) > 1:
            raise UsageError("--from zookeeper-leader cuts that link only; give it alone")
        leader = zookeeper_server_id("zookeeper-leader", cluster.zookeeper_servers(), cluster.zookeeper_leader())
        cluster.cut_from_zookeeper_server(broker_id, leader)
        print(f"broker {broker_id} cut from the ZooKeeper leader (zookeeper-{leader}); "
              f"`kafka-chaos cluster heal` undoes it")
        return 0
    cluster.isolate(broker_id, **cut_arguments(args.cut_from))
    print(f"broker {broker_id} cut from {', '.join(args.cut_from or ['everyone'])}; "
          f"`kafka-chaos cluster heal` undoes it")
    return 0


def cluster_degrade(args: argparse.Namespace) -> int:
    from kafka_chaos.harness.cluster import Capability, capabilities_of, capability_problems

    quiet_clients(args)
    if args.loss <= 0 and args.rate is None:
        raise UsageError("give --loss PCT and/or --rate KBIT")
    if not 0 <= args.loss <= 100:
        raise UsageError(f"--loss must be a percentage in (0, 100], not {args.loss:g}")
    cluster = attach_running(state_dir_of(args))
    broker_id = resolve_broker_id(args.target, cluster)
    if Capability.NETWORK_DEGRADE not in capabilities_of(cluster):
        raise HarnessError(capability_problems(cluster).get(Capability.NETWORK_DEGRADE)
                           or "this cluster cannot degrade links")
    chosen = cut_arguments(args.links)  # the same link names as `cluster cut --from`
    cluster.degrade(broker_id, to_zookeeper=chosen["from_zookeeper"], to_brokers=chosen["from_brokers"],
                    to_clients=chosen["from_clients"], loss_pct=args.loss, rate_kbit=args.rate)
    print(f"broker {broker_id} degraded towards {', '.join(args.links or ['everyone'])}: "
          f"loss {args.loss:g}%, rate {args.rate or 'unlimited'} kbit/s; `kafka-chaos cluster heal` undoes it")
    return 0


def cluster_heal(args: argparse.Namespace) -> int:
    cluster = attach_running(state_dir_of(args))
    cluster.heal_network()
    print("network healed")
    return 0


def zookeeper_server_id(target: str, servers: list[int], leader: int | None) -> int:
    """``zookeeper-N`` or ``zookeeper-leader`` -> a server id (one-line UsageError otherwise)."""
    name = target.removeprefix(ZOOKEEPER_SERVER_PREFIX)
    if name == "leader":
        if leader is None:
            raise HarnessError("no ZooKeeper server leads now (the ensemble has no quorum)")
        return leader
    if not name.isdigit() or int(name) not in servers:
        raise UsageError(f"unknown ZooKeeper server {target!r}: the servers are "
                         f"{', '.join(f'zookeeper-{z}' for z in servers)} (or zookeeper-leader)")
    return int(name)


def _zookeeper_server_control(cluster: CliCluster, target: str, action: str) -> int:
    server = zookeeper_server_id(target, cluster.zookeeper_servers(), cluster.zookeeper_leader())
    verbs = {"kill": cluster.kill_zookeeper_server, "pause": cluster.pause_zookeeper_server,
             "resume": cluster.resume_zookeeper_server, "start": cluster.start_zookeeper_server}
    if action not in verbs:
        raise UsageError(f"`cluster {action}` takes a broker id; a ZooKeeper server can be killed, "
                         "started, paused or resumed")
    verbs[action](server)
    cluster.write_state()
    past = {"kill": "killed", "pause": "paused", "resume": "resumed", "start": "started"}[action]
    print(f"zookeeper-{server} {past}")
    return 0


def cluster_down(args: argparse.Namespace) -> int:
    from kafka_chaos.harness.local.cluster import STATE_FILE

    state_dir = state_dir_of(args)
    if not (state_dir / STATE_FILE).exists():
        raise UsageError(f"nothing to stop: no cluster in {state_dir} (no {STATE_FILE})")
    cluster = _attach_any(state_dir)
    was_running = cluster.any_running()
    cluster.destroy()
    if not was_running:
        raise HarnessError(f"no cluster was running in {state_dir}; removed what was left of it")
    print(f"cluster in {state_dir} stopped and removed")
    return 0


def cluster_prune(args: argparse.Namespace) -> int:
    # Imported here: the Docker SDK is only needed by this verb.
    from kafka_chaos.harness.containers.prune import prune

    print(prune(all_runs=args.all_runs, images=args.images, runs=args.runs).summary())
    return 0
