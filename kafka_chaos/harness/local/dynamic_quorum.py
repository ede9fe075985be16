"""The local KRaft launcher's dynamic quorum (KIP-853, Kafka 3.9+): formatted with
``--initial-controllers``, voters added and removed with Kafka's own ``kafka-metadata-quorum`` tool
(``org.apache.kafka.tools.MetadataQuorumCommand``), each voter's voter set read from its log
(:mod:`harness.kraft.dynamic_quorum`).

* add: a new controller (the next node id) gets a ``server.properties`` naming the initial
  controllers in ``controller.quorum.bootstrap.servers``, is formatted with
  ``--no-initial-controllers`` and started: it fetches as an observer. Then ``add-controller``
  with that file (``MetadataQuorumCommand.handleAddController``, tools 4.1.0: the id, the metadata
  directory's ``directory.id`` and the CONTROLLER listener's endpoint). The leader refuses it with
  REQUEST_TIMED_OUT while the new controller lags its log end (``AddVoterHandler`` step 7, raft
  4.1.2), so the tool is run again until it is answered (bounded).
* remove: ``remove-controller --controller-id N --controller-directory-id D``; the leader answers
  once the VotersRecord without N is committed by the new voter set, and resigns if it was N
  (``RemoveVoterHandler.highWatermarkUpdated``, raft 4.1.2). The removed controller keeps running.

A mixin of :class:`harness.local.kraft.LocalKraftCluster`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from kafka_chaos.common.errors import HarnessError, UsageError
from kafka_chaos.harness.config import DYNAMIC_QUORUM, ClusterConfig, check_dynamic_quorum, kraft_node_properties, render_properties
from kafka_chaos.harness.distribution import KafkaDistribution, java_executable, log4j_config_name
from kafka_chaos.harness.kraft.dynamic_quorum import (
    VoterSetSeen,
    format_args,
    read_directory_id,
    voter_set_of_log,
)
from kafka_chaos.harness.kraft.records import random_cluster_id
from kafka_chaos.harness.kraft.storage import format_storage
from kafka_chaos.harness.local.nodes import HOST, LocalNode, NodeStartFailed, check_alive
from kafka_chaos.harness.nodes import free_ports

log = logging.getLogger(__name__)

QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand"  # what kafka-metadata-quorum.sh runs
# How long a voter change may take: the new controller catching up (a few seconds on this
# machine), the leader's answer, every running voter's log naming the new set.
VOTER_CHANGE_WAIT_S = 90.0
RETRY_S = 2.0


def controller_node_name(node_id: int) -> str:
    return f"controller-{node_id}"


class LocalDynamicQuorum:
    """Add and remove voters of a local KRaft cluster formatted dynamic
    (:class:`harness.kraft.dynamic_quorum.VoterChanges`)."""

    config: ClusterConfig
    distribution: KafkaDistribution
    _controllers: dict[int, LocalNode]
    _lock: threading.RLock
    _cluster_id: str
    # the launcher's own (declared, not defined)
    _spawn: Callable[[LocalNode], None]
    _prepare: Callable[[str, int, int, Mapping[int, str], str, Path, str | None, str], LocalNode]
    write_state: Callable[[], Path]

    @property
    def run_dir(self) -> Path:
        raise NotImplementedError

    @property
    def dynamic_quorum(self) -> bool:
        return self.config.quorum == DYNAMIC_QUORUM

    @property
    def controller_ids(self) -> list[int]:
        """Every controller this cluster started, those added since included (a removed one too:
        it still runs, as an observer)."""
        return sorted(self._controllers) if self._controllers else self.config.controller_ids()

    def _quorum_format_args(self) -> dict[str, list[str]]:
        """The format tool's quorum arguments per node name: none for a static quorum; for a
        dynamic one every initial controller's ``--initial-controllers``, each with a directory id
        of its own (:func:`harness.kraft.dynamic_quorum.format_args`)."""
        if not self.dynamic_quorum:
            return {}
        check_dynamic_quorum(self.distribution.version)
        voters = {c: (node.bootstrap, random_cluster_id()) for c, node in self._controllers.items()}
        return {controller_node_name(c): args for c, args in format_args(voters).items()}

    def controller_directory_id(self, node_id: int) -> str:
        return read_directory_id(self._voter_node(node_id).directory / "data")

    def voter_sets(self) -> dict[int, VoterSetSeen | None]:
        return {c: voter_set_of_log(node.directory / "data") for c, node in sorted(self._controllers.items())}

    # ---------------------------------------------------------------- add

    def add_controller(self) -> int:
        with self._lock:
            self._require_dynamic("add a controller")
            node_id = max(self._controllers) + 1
            node = self._prepare_added(node_id)
            self._controllers[node_id] = node
            log.info("starting %s (formatted with --no-initial-controllers) on port %d", node.name, node.port)
            self._spawn(node)
            self.write_state()
            check_alive([node])
            deadline = time.monotonic() + VOTER_CHANGE_WAIT_S
            said = self._until_answered(["--command-config", str(node.config_file), "add-controller"],
                                        f"add-controller {node_id}", deadline, alive=node)
            log.info("%s", said)
            self._wait_voter_sets(lambda ids: node_id in ids, f"controller {node_id} a voter", deadline)
            return node_id

    def _prepare_added(self, node_id: int) -> LocalNode:
        """A new controller's directory, properties and storage: the initial controllers as its
        bootstrap servers, formatted with ``--no-initial-controllers`` (StorageTool 4.0.2 line 155)."""
        [port] = free_ports(1, taken=[n.port for n in self._controllers.values()])
        voters = {c: n.bootstrap for c, n in self._controllers.items()}
        log4j = self.run_dir / log4j_config_name(self.distribution.version)
        name = controller_node_name(node_id)
        node = self._prepare(name, node_id, port, voters, java_executable(), log4j, None, "controller")
        props = kraft_node_properties(self.config, node_id, voters=voters, address=f"{HOST}:{port}",
                                      log_dir=str(node.directory / "data"), kafka_version=self.distribution.version,
                                      controller=True)
        node.config_file.write_text(render_properties(props))
        try:
            format_storage(self.distribution, self.config.jvm_options, self._cluster_id, {name: node.config_file},
                           self.run_dir, extra_args={name: format_args({}, [node_id])[node_id]})
        except HarnessError as exc:
            raise NodeStartFailed(str(exc)) from None
        return node

    # ---------------------------------------------------------------- remove

    def remove_controller(self, node_id: int) -> None:
        with self._lock:
            self._require_dynamic("remove a controller")
            directory = self.controller_directory_id(node_id)
            deadline = time.monotonic() + VOTER_CHANGE_WAIT_S
            said = self._until_answered(["remove-controller", "--controller-id", str(node_id),
                                         "--controller-directory-id", directory], f"remove-controller {node_id}",
                                        deadline)
            log.info("%s", said)

    # ---------------------------------------------------------------- the tool

    def _require_dynamic(self, what: str) -> None:
        if not self.dynamic_quorum:
            raise UsageError(f"cannot {what}: this KRaft cluster's quorum is static (controller.quorum.voters); "
                             f"start it with quorum='dynamic' (cluster up --quorum dynamic)")

    def _voter_node(self, node_id: int) -> LocalNode:
        node = self._controllers.get(node_id)
        if node is None:
            raise UsageError(f"unknown controller id {node_id}: the controllers are "
                             f"{', '.join(map(str, sorted(self._controllers)))}")
        return node

    def quorum_tool(self, args: list[str]) -> tuple[int, str]:
        """``kafka-metadata-quorum --bootstrap-controller <running controllers> ARGS``: its exit
        code and what it printed."""
        from kafka_chaos.harness.java_clients import tools_classpath
        from kafka_chaos.harness.local.kraft_releases import _run_tool

        running = [n.bootstrap for _, n in sorted(self._controllers.items()) if n.running()]
        if not running:
            raise HarnessError("no controller is running to ask")
        return _run_tool([java_executable(), "-Xmx256m", "-cp", tools_classpath(self.distribution), QUORUM_COMMAND,
                          "--bootstrap-controller", ",".join(running), *args])

    def _until_answered(self, args: list[str], what: str, deadline: float, alive: LocalNode | None = None) -> str:
        """Run the tool until it exits 0 (the leader refuses a voter change with REQUEST_TIMED_OUT
        while it cannot make it yet: a lagging new voter, an uncommitted change, an unknown high
        watermark -- AddVoterHandler/RemoveVoterHandler steps 1, 3, 7); HarnessError with its last
        words at ``deadline``."""
        while True:
            code, said = self.quorum_tool(args)
            if code == 0:
                return said
            if alive is not None:
                check_alive([alive])
            if time.monotonic() + RETRY_S >= deadline:
                raise HarnessError(f"kafka-metadata-quorum {what} exited {code}: {' | '.join(said.splitlines()[-4:])}")
            log.info("kafka-metadata-quorum %s exited %d, again in %.0f s: %s", what, code, RETRY_S,
                     said.splitlines()[-1] if said else "")
            time.sleep(RETRY_S)

    def _wait_voter_sets(self, wanted: Callable[[tuple[int, ...]], bool], what: str, deadline: float) -> None:
        """Until every running controller that is a voter of the set it reads names a set ``wanted``
        accepts (bounded by ``deadline``)."""
        while True:
            seen = {c: s for c, s in self.voter_sets().items() if self._controllers[c].running()}
            voters = {c: s for c, s in seen.items() if s is not None and c in s.ids}
            if voters and all(wanted(s.ids) for s in voters.values()):
                return
            if time.monotonic() >= deadline:
                raise HarnessError(f"{what}: the voters' logs name "
                                   f"{ {c: (None if s is None else list(s.ids)) for c, s in seen.items()} }")
            time.sleep(0.2)
