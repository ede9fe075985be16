"""The local launcher's migrating cluster: a ZooKeeper-mode cluster (:class:`LocalCluster`) whose
schedule takes it to KRaft as Kafka 3.9's operations guide describes (``docs/ops.html`` 3.9,
"ZooKeeper to KRaft Migration"), each phase with its way back:

1. :meth:`provision_controllers` -- KRaft controllers formatted with the ZooKeeper cluster's id
   (``/cluster/id``), started with ``zookeeper.metadata.migration.enable`` (their node ids follow
   :meth:`ClusterConfig.controller_ids`: past every broker's, as KRaft shares one id space);
2. :meth:`set_broker_role` ``hybrid`` then a restart -- the broker joins in migration mode; once the
   last one has, the active controller copies the metadata and takes over (observed, not assumed:
   :meth:`migration_status`);
3. :meth:`set_broker_role` ``kraft`` then a restart -- the broker runs as a KRaft broker on its data;
4. :meth:`finalize_controllers` -- the controllers restart without the flag: no way back.

Rollback (ops.html 3.9 "Reverting to ZooKeeper mode During the Migration"): brokers back to
``hybrid``, then :meth:`deprovision_controllers` with :meth:`clear_migration_znodes`, then brokers
to ``zk``. Brokers keep their directories, ports and (for the JMX exporter) command lines: a
phase change rewrites only ``server.properties``.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.config import render_properties
from kafka_chaos.harness.distribution import java_executable
from kafka_chaos.harness.kraft.observer import KraftObserver
from kafka_chaos.harness.kraft.storage import format_storage
from kafka_chaos.harness.local.cds_paths import archive_options
from kafka_chaos.harness.local.cluster import LocalCluster
from kafka_chaos.harness.local.controllers import LocalControllerControls
from kafka_chaos.harness.local.kraft import controller_node_name
from kafka_chaos.harness.local.kraft_releases import LocalKraftReleases
from kafka_chaos.harness.local.nodes import (
    HOST,
    KAFKA_MAIN,
    LocalNode,
    NodeStartFailed,
    check_alive,
    jvm_command,
    read_properties,
    signal_node,
)
from kafka_chaos.harness.migration.properties import (
    HYBRID,
    KRAFT,
    MIGRATION_ENABLE,
    ZK,
    migration_log4j,
    hybrid_broker_properties,
    kraft_broker_properties,
    migration_controller_properties,
)
from kafka_chaos.harness.migration.status import COPY_COMPLETED, MigrationStatus, active_driver_state, parse_json_znode
from kafka_chaos.harness.nodes import free_ports
from kafka_chaos.harness.observer import ConvergenceTimeout
from kafka_chaos.harness.readiness import wait_metadata_lists
from kafka_chaos.harness.zkclient import short_session
from kafka_chaos.harness.zksnapshot import ZkSnapshot

log = logging.getLogger(__name__)

MigrationPredicate = Callable[[MigrationStatus], bool]

CLUSTER_ID = "/cluster/id"
MIGRATION_ZNODE = "/migration"
CONTROLLER_ZNODE = "/controller"
CONTROLLER_EPOCH_ZNODE = "/controller_epoch"
ZK_COMMAND_S = 10.0


class LocalMigrationCluster(LocalKraftReleases, LocalControllerControls, LocalCluster):
    """:class:`LocalCluster` plus :class:`harness.cluster.MigrationControl`, once provisioned
    :class:`harness.cluster.ControllerQuorumControl` over its KRaft controllers, and once finalised
    :class:`harness.cluster.KraftReleaseRoller` (:mod:`harness.local.kraft_releases`)."""

    mode = "migration"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """:class:`LocalCluster`'s arguments; no controller runs until :meth:`provision_controllers`."""
        super().__init__(*args, **kwargs)
        self._log4j_extra += migration_log4j(self.distribution.version)
        self._controllers: dict[int, LocalNode] = {}
        self._deprovisioned_logs: dict[str, Path] = {}  # node name -> its log, kept after a rollback
        self._voters: dict[int, str] = {}
        self._roles: dict[int, str] = {b: ZK for b in self.config.broker_ids()}
        self._finalized = False

    def __repr__(self) -> str:
        return f"LocalMigrationCluster({self.config.brokers} brokers, run_dir={self._run_dir})"

    # ---------------------------------------------------------------- what it is

    @property
    def controller_ids(self) -> list[int]:
        """The controllers provisioned (none before :meth:`provision_controllers`)."""
        return sorted(self._controllers)

    @property
    def planned_controller_ids(self) -> list[int]:
        return self.config.controller_ids()

    @property
    def controllers_provisioned(self) -> bool:
        return bool(self._controllers)

    @property
    def finalized(self) -> bool:
        return self._finalized

    def _controller_may_be_kraft(self) -> bool:
        return bool(self._controllers)

    def broker_role(self, broker_id: int) -> str:
        self._broker(broker_id)
        return self._roles[broker_id]

    def metadata_log_dirs(self) -> list[Path]:
        return [node.directory / "data" for _, node in sorted(self._controllers.items())]

    def controller_address(self, node_id: int) -> str:
        """host:port of the controller's CONTROLLER listener (its voter address)."""
        return self._controller(node_id).bootstrap

    def broker_settings(self) -> dict[str, str]:
        """The brokers' shared settings; while provisioned and not finalised, also the
        controllers' ``zookeeper.metadata.migration.enable`` (the KRaft model reads it)."""
        settings = super().broker_settings()
        if self._controllers and not self._finalized:
            settings[MIGRATION_ENABLE] = "true"
        return settings

    def log_files(self) -> dict[str, Path]:
        files = super().log_files()
        files.update(self._deprovisioned_logs)
        files.update({node.name: node.server_log for _, node in sorted(self._controllers.items())})
        return files

    # ---------------------------------------------------------------- provisioning

    def provision_controllers(self) -> None:
        """Format and start the KRaft controllers with the ZooKeeper cluster's id and the
        migration flag; returns once they run (their driver waits for the brokers)."""
        with self._lock:
            if self._controllers:
                raise HarnessError("the KRaft controllers are already provisioned")
            cluster_id = self._zookeeper_cluster_id()
            ids = self.planned_controller_ids
            self._voters = {c: f"{HOST}:{p}" for c, p in zip(ids, free_ports(len(ids)))}
            java = java_executable()
            for c in ids:
                self._controllers[c] = self._prepare_controller(c, java)
            try:
                format_storage(self.distribution, self.config.jvm_options, cluster_id,
                               {n.name: n.config_file for n in self._controllers.values()}, self.run_dir)
            except HarnessError as exc:
                raise NodeStartFailed(str(exc)) from None
            log.info("provisioning KRaft controllers %s for cluster %s", ids, cluster_id)
            for node in self._controllers.values():
                self._spawn(node)
            check_alive(self._controllers.values())

    def _zookeeper_cluster_id(self) -> str:
        with short_session(self.zookeeper_connect, command_s=ZK_COMMAND_S) as client:
            data, _ = client.retry(client.get, CLUSTER_ID)
        znode = parse_json_znode(data)
        if znode is None or not isinstance(znode.get("id"), str):
            raise HarnessError(f"{CLUSTER_ID} holds no cluster id: {data!r}")
        return str(znode["id"])

    def _prepare_controller(self, node_id: int, java: str) -> LocalNode:
        name = controller_node_name(node_id)
        directory = self.run_dir / name
        (directory / "data").mkdir(parents=True)
        (directory / "logs").mkdir()
        config_file = directory / "server.properties"
        self._write_controller_properties(node_id, config_file, directory, migrating=True)
        options = list(self.config.jvm_options)
        if self._class_data_sharing:  # the brokers' archive fits: same class path and main class
            options += archive_options(self.distribution, "broker", java)
        command = jvm_command(java, self.config.broker_heap, options, self.distribution.classpath,
                              self.run_dir / "log4j.properties", directory / "logs", KAFKA_MAIN, config_file)
        port = int(self._voters[node_id].rsplit(":", 1)[1])
        return LocalNode(name=name, directory=directory, port=port, config_file=config_file, command=command)

    def _write_controller_properties(self, node_id: int, config_file: Path, directory: Path, *,
                                     migrating: bool) -> None:
        props = migration_controller_properties(
            self.config, node_id, voters=self._voters, address=self._voters[node_id],
            log_dir=str(directory / "data"), zookeeper_connect=self.zookeeper_connect,
            kafka_version=self.kafka_version, migrating=migrating)
        config_file.write_text(render_properties(props))

    def finalize_controllers(self) -> None:
        """Restart each controller without the migration flag, one at a time (ops.html 3.9
        "Finalizing the migration"); each start waits for a quorum leader again."""
        with self._lock:
            if not self._controllers:
                raise HarnessError("no KRaft controllers to finalise")
            if any(role != KRAFT for role in self._roles.values()):
                raise HarnessError(f"finalising needs every broker in KRaft mode; roles: {self._roles}")
            for c, node in sorted(self._controllers.items()):
                if node.running():
                    signal_node(node, "stop", self.stop_timeout)
                self._write_controller_properties(c, node.config_file, node.directory, migrating=False)
                self._spawn(node)
                self._wait_quorum_leader(time.monotonic() + self.start_timeout)
            self._finalized = True

    def deprovision_controllers(self) -> None:
        """Stop the controllers and remove their directories (a rollback: ops.html 3.9, "Deprovision
        the KRaft controller quorum")."""
        with self._lock:
            if self._finalized:
                raise HarnessError("the migration is finalised: there is no way back to ZooKeeper")
            for node in self._controllers.values():
                if node.running():
                    signal_node(node, "kill", self.stop_timeout)
            for node in self._controllers.values():
                self._keep_deprovisioned_log(node)
                shutil.rmtree(node.directory, ignore_errors=True)
            self._controllers.clear()
            self._voters.clear()

    def _keep_deprovisioned_log(self, node: LocalNode) -> None:
        """A removed controller's log stays in the run directory until teardown: what its driver
        did before the rollback is evidence for a failed step after it."""
        if node.server_log.is_file():
            kept = self.run_dir / f"{node.name}-deprovisioned.log"
            shutil.move(node.server_log, kept)
            self._deprovisioned_logs[f"{node.name}-deprovisioned"] = kept

    def clear_migration_znodes(self, *, controller_epoch_above: int | None = None) -> dict[str, object]:
        """``delete /controller`` and ``get /migration`` then ``delete /migration`` (ops.html 3.9: so a
        broker becomes the ZooKeeper controller again and the migration can be re-attempted);
        returns what ``/migration`` held. ``controller_epoch_above``: first raise
        ``/controller_epoch`` above it when it is not (KAFKA-20488, below)."""
        with short_session(self.zookeeper_connect, command_s=ZK_COMMAND_S) as client:
            held: dict[str, object] = {}
            if client.retry(client.exists, MIGRATION_ZNODE):
                data, _ = client.retry(client.get, MIGRATION_ZNODE)
                held = parse_json_znode(data) or {}
            if controller_epoch_above is not None:
                self._raise_controller_epoch(client, controller_epoch_above)
            for path in (CONTROLLER_ZNODE, MIGRATION_ZNODE):
                if client.retry(client.exists, path):
                    client.retry(client.delete, path, recursive=True)
            return held

    @staticmethod
    def _raise_controller_epoch(client: KazooClient, above: int) -> None:
        """KAFKA-20488: the KRaft controller writes its own epoch into every partition state znode
        (``ZkTopicMigrationClient``), and a ZooKeeper controller refuses to elect for a partition
        whose znode carries a higher controller epoch than its own (``PartitionStateMachine``
        3.9 lines 385-389: "Aborted leader election ... already written by another controller"). The
        broker that wins after a rollback takes ``/controller_epoch`` + 1, so ``/controller_epoch`` is
        raised to at least ``above`` first (kafka-site PR #860 documents a check and a workaround for
        this; its text is not in the stored docs, this is the workaround the code implies)."""
        data, _ = client.retry(client.get, CONTROLLER_EPOCH_ZNODE)
        current = int(data.decode().strip() or "0")
        if current < above:
            client.retry(client.set, CONTROLLER_EPOCH_ZNODE, str(above).encode())
            log.info("rollback: /controller_epoch raised from %d to %d (the KRaft controller epoch)", current, above)

    # ---------------------------------------------------------------- brokers' roles

    def set_broker_role(self, broker_id: int, role: str) -> None:
        """The stopped broker's next start runs as ``role``: ``zk`` (plain ZooKeeper mode),
        ``hybrid`` (ZooKeeper mode with the migration on) or ``kraft`` (a KRaft broker)."""
        with self._lock:
            node = self._broker(broker_id)
            if node.running():
                raise HarnessError(f"broker {broker_id} runs: stop it before changing its role")
            if role not in (ZK, HYBRID, KRAFT):
                raise UsageError(f"a broker's role is {ZK}, {HYBRID} or {KRAFT}, not {role!r}")
            if role != ZK and not self._voters:
                raise HarnessError(f"broker {broker_id} cannot run as {role}: no KRaft controllers are provisioned")
            zk_props = self._zookeeper_properties(broker_id, node)
            if role == ZK:
                props = zk_props
            elif role == HYBRID:
                props = hybrid_broker_properties(zk_props, self._voters)
            else:
                props = kraft_broker_properties(self.config, broker_id, voters=self._voters,
                                                address=f"{HOST}:{node.port}", log_dirs=zk_props["log.dirs"],
                                                kafka_version=self.kafka_version)
            node.config_file.write_text(render_properties(props))
            self._roles[broker_id] = role
            log.info("broker %d runs as %s from its next start", broker_id, role)

    def _zookeeper_properties(self, broker_id: int, node: LocalNode) -> dict[str, str]:
        """The broker's ZooKeeper-mode properties as the cluster first wrote them."""
        original = node.directory / "server.properties.zk"
        if not original.exists():
            shutil.copyfile(node.config_file, original)
        return read_properties(original)

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped broker in its role: a ZooKeeper or hybrid broker as
        :meth:`LocalCluster.start_broker` does (registered in ``/brokers/ids``), a KRaft broker
        once the controllers' log shows it unfenced with a new epoch and its metadata answers."""
        if self._roles.get(broker_id, ZK) != KRAFT:
            super().start_broker(broker_id)
            return
        with self._lock:
            node = self._broker(broker_id)
            if node.running():
                raise HarnessError(f"broker {broker_id} is already running (pid {node.running_pid()})")
            with KraftObserver(self.metadata_log_dirs(), topics=[]) as observer:
                old = observer.broker_epochs().get(broker_id, -1)
                log.info("starting %s as a KRaft broker on port %d", node.name, node.port)
                self._spawn(node)
                deadline = time.monotonic() + self.start_timeout

                def ready(s: ZkSnapshot) -> bool:
                    check_alive([node])
                    return s.live_brokers.get(broker_id, -1) > old

                try:
                    observer.wait_until(ready, timeout=self.start_timeout,
                                        description=f"KRaft broker {broker_id} unfenced")
                except ConvergenceTimeout as exc:
                    raise NodeStartFailed(f"{exc}; {node.describe_failure('was starting as a KRaft broker')}") from None
            failure = wait_metadata_lists(node.bootstrap, {broker_id}, deadline=deadline,
                                          check_alive=lambda: check_alive([node]))
            if failure is not None:
                raise NodeStartFailed(node.describe_failure(f"was unfenced but its metadata did not answer ({failure})"))

    # ---------------------------------------------------------------- observation

    def migration_status(self) -> MigrationStatus:
        """Where the migration is, as Kafka says it (:mod:`harness.migration.status`)."""
        state: int | None = None
        leader: int | None = None
        if self._controllers:
            with KraftObserver(self.metadata_log_dirs(), topics=[]) as observer:
                state, leader = observer.zk_migration_state(), observer.snapshot().controller
        logs = {c: node.server_log.read_text(errors="replace").splitlines()
                for c, node in self._controllers.items() if node.server_log.exists()}
        migration, controller, epoch = self._read_znodes()
        return MigrationStatus(zk_migration_state=state, driver_state=active_driver_state(logs, leader, controller),
                               migration_znode=migration, controller_znode=controller,
                               copy_completed=any(COPY_COMPLETED in line.lower() for lines in logs.values()
                                                  for line in lines),
                               zk_controller_epoch=epoch, broker_roles=dict(self._roles))

    def _read_znodes(self) -> tuple[dict[str, object] | None, dict[str, object] | None, int | None]:
        """``/migration``, ``/controller`` and ``/controller_epoch`` (None where absent)."""
        with short_session(self.zookeeper_connect, command_s=ZK_COMMAND_S) as client:
            found = [client.retry(client.get, path)[0] if client.retry(client.exists, path) else None
                     for path in (MIGRATION_ZNODE, CONTROLLER_ZNODE, CONTROLLER_EPOCH_ZNODE)]
        epoch = found[2].decode().strip() if found[2] else ""
        return parse_json_znode(found[0]), parse_json_znode(found[1]), int(epoch) if epoch.isdigit() else None

    def wait_migration(self, predicate_name: str, predicate: MigrationPredicate, timeout: float) -> MigrationStatus:
        """Poll :meth:`migration_status` until ``predicate`` holds (bounded); HarnessError with the
        last status otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.migration_status()
            if predicate(status):
                return status
            if time.monotonic() >= deadline:
                raise HarnessError(f"the migration did not reach {predicate_name} within {timeout:.0f} s: "
                                   f"{status.to_json()}")
            check_alive([n for n in self._controllers.values() if n.process is not None and n.process.alive()])
            time.sleep(0.5)

    def _wait_quorum_leader(self, deadline: float) -> None:
        with KraftObserver(self.metadata_log_dirs(), topics=[]) as observer:
            try:
                observer.wait_until(lambda s: s.controller is not None,
                                    timeout=max(0.0, deadline - time.monotonic()), description="a quorum leader")
            except ConvergenceTimeout as exc:
                raise HarnessError(str(exc)) from None

    # ---------------------------------------------------------------- teardown

    def _nodes(self) -> list[LocalNode]:
        return [*super()._nodes(), *self._controllers.values()]

    def destroy(self) -> None:
        with self._lock:
            for node in self._controllers.values():
                if node.process is not None and node.process.alive():
                    try:
                        node.process.kill()
                    except HarnessError as exc:
                        log.warning("killing %s: %s", node.name, exc)
        super().destroy()


