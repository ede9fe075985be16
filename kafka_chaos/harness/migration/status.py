"""Which phase of the migration a cluster is in, as Kafka itself says it -- never assumed from
the steps the harness took:

* the ``ZkMigrationStateRecord`` the active controller wrote to the metadata log (what the
  ``kafka.controller:type=KafkaController,name=ZkMigrationState`` metric reports; values of
  ``ZkMigrationState.java`` 3.9: NONE 0, MIGRATION 1, PRE_MIGRATION 2, POST_MIGRATION 3);
* the ``/migration`` znode (``MigrationZNode`` in ``ZkData.scala`` 3.9: the KRaft metadata
  offset and epoch last written to ZooKeeper, the KRaft controller's id and epoch);
* the ``/controller`` znode (a KRaft controller that claimed leadership writes its node id
  and ``kraftControllerEpoch``, ``KRaftMigrationZkWriter`` / ``ZkMigrationClient``
  ``claimControllerLeadership``);
* the migration driver's states in the active controller's log:
  ``KRaftMigrationDriver.transitionTo`` logs "<node> transitioning from <A> to <B> state"
  (KRaftMigrationDriver.java 3.9 line 338), and the copy ends with "Completed migration of
  metadata from ZooKeeper to KRaft" (line 789).

Pure: parsing and the summary; the launcher reads the bytes and lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# ZkMigrationState.java 3.9 lines 38-72
ZK_MIGRATION_STATES: Mapping[int, str] = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION",
                                          4: "ZK"}
MIGRATION, POST_MIGRATION = 1, 3
# MigrationDriverState.java 3.9, in the order a migration passes them
DRIVER_STATES = ("UNINITIALIZED", "INACTIVE", "WAIT_FOR_CONTROLLER_QUORUM", "WAIT_FOR_BROKERS", "BECOME_CONTROLLER",
                 "ZK_MIGRATION", "SYNC_KRAFT_TO_ZK", "KRAFT_CONTROLLER_TO_BROKER_COMM", "DUAL_WRITE")
DUAL_WRITE = "DUAL_WRITE"
WAIT_FOR_BROKERS = "WAIT_FOR_BROKERS"

def kraft_in_charge(zk_migration_state: int | None) -> bool:
    """The KRaft controller is the cluster's controller: the log's last ``ZkMigrationStateRecord``
    is MIGRATION (the copy completed, ``KRaftMigrationDriver``) or POST_MIGRATION (finalised)."""
    return zk_migration_state in (MIGRATION, POST_MIGRATION)


_TRANSITION = re.compile(r"(\d+) transitioning from (\w+) to (\w+) state")
# 3.5 logs "Zookeeper"; 3.6+ "ZooKeeper" (KRaftMigrationDriver): matched without case
COPY_COMPLETED = "completed migration of metadata from zookeeper to kraft"


@dataclass(frozen=True)
class DriverTransition:
    node_id: int
    from_state: str
    to_state: str
    line: str


def driver_transitions(lines: Iterable[str]) -> list[DriverTransition]:
    """Every ``KRaftMigrationDriver.transitionTo`` line, in log order."""
    found = []
    for line in lines:
        m = _TRANSITION.search(line)
        if m:
            found.append(DriverTransition(int(m.group(1)), m.group(2), m.group(3), line.rstrip()))
    return found


def last_driver_state(lines: Iterable[str]) -> str | None:
    transitions = driver_transitions(lines)
    return transitions[-1].to_state if transitions else None


def kraft_controller_epoch_of(controller_znode: Mapping[str, Any] | None) -> int | None:
    epoch = (controller_znode or {}).get("kraftControllerEpoch")
    return epoch if isinstance(epoch, int) and epoch >= 0 else None


def kraft_controller_of(controller_znode: Mapping[str, Any] | None) -> int | None:
    """The controller ``/controller`` names when a KRaft controller wrote it (a ZooKeeper
    controller of 3.9 writes ``kraftControllerEpoch`` -1)."""
    if kraft_controller_epoch_of(controller_znode) is None:
        return None
    broker = (controller_znode or {}).get("brokerid")
    return broker if isinstance(broker, int) else None


def _logged_at(line: str) -> str:
    """A log4j line's own time, ``[yyyy-MM-dd HH:mm:ss,SSS]``: as text it sorts as the time does."""
    return line[1:24] if line.startswith("[") else ""


def active_driver_state(logs: Mapping[int, Sequence[str]], quorum_leader: int | None,
                        controller_znode: Mapping[str, Any] | None) -> str | None:
    """The migration driver state of the active controller, from each controller's log lines.
    Only the active controller's driver leaves INACTIVE (``KRaftMigrationDriver`` reacts to
    ``handleLeaderChange``: a standby logs "... to INACTIVE" and nothing more), so the standbys'
    logs must not speak for it: the quorum leader's last transition (the metadata log's committed
    leader), else that of the KRaft controller ``/controller`` names, else -- no leader known --
    the latest transition any controller logged, by the line's own time."""
    for active in (quorum_leader, kraft_controller_of(controller_znode)):
        if isinstance(active, int) and active in logs:
            return last_driver_state(logs[active])
    latest = max((t for lines in logs.values() for t in driver_transitions(lines)),
                 key=lambda t: _logged_at(t.line), default=None)
    return latest.to_state if latest is not None else None


def parse_json_znode(data: bytes | None) -> dict[str, Any] | None:
    """A znode's JSON (``/migration``, ``/controller``); None when absent or not JSON."""
    if not data:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class MigrationStatus:
    """One observation of where the migration is."""

    zk_migration_state: int | None  # the metadata log's last ZkMigrationStateRecord (None: none)
    driver_state: str | None  # the active controller's last driver transition (None: none logged)
    migration_znode: Mapping[str, Any] | None = None  # /migration
    controller_znode: Mapping[str, Any] | None = None  # /controller
    copy_completed: bool = False  # "Completed migration of metadata ..." logged by a controller
    zk_controller_epoch: int | None = None  # /controller_epoch (None: absent)
    broker_roles: Mapping[int, str] = field(default_factory=dict)  # what the harness last started each broker as

    @property
    def state_name(self) -> str:
        if self.zk_migration_state is None:
            return "ZK"  # nothing written yet: ZkMigrationState.ZK is what the metric shows then
        return ZK_MIGRATION_STATES.get(self.zk_migration_state, str(self.zk_migration_state))

    @property
    def kraft_controller_in_charge(self) -> bool:
        """The KRaft controller is the cluster's controller (:func:`kraft_in_charge`)."""
        return kraft_in_charge(self.zk_migration_state)

    @property
    def kraft_controller_id(self) -> int | None:
        return kraft_controller_of(self.controller_znode)

    @property
    def kraft_controller_epoch(self) -> int | None:
        return kraft_controller_epoch_of(self.controller_znode)

    @property
    def phase(self) -> str:
        """The operations guide's phase names (ops.html 3.9 "Migration Phases")."""
        roles = set(self.broker_roles.values())
        if self.zk_migration_state == POST_MIGRATION:
            return "finalized"
        if not self.kraft_controller_in_charge:
            return "zookeeper" if self.driver_state is None else "pre-migration"
        if roles == {"kraft"}:
            return "dual-write"
        return "hybrid"

    def to_json(self) -> dict[str, Any]:
        return {"zk_migration_state": self.state_name, "driver_state": self.driver_state, "phase": self.phase,
                "copy_completed": self.copy_completed,
                "migration_znode": dict(self.migration_znode) if self.migration_znode is not None else None,
                "kraft_controller": self.kraft_controller_id, "kraft_controller_epoch": self.kraft_controller_epoch,
                "zk_controller_epoch": self.zk_controller_epoch,
                "broker_roles": {str(b): r for b, r in sorted(self.broker_roles.items())}}
