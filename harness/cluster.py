"""The cluster contract shared by every launcher (local JVMs, Testcontainers).

Scenarios depend only on these protocols.  Optional capabilities are separate small protocols
(as Jepsen's ``db.clj`` does with ``Kill`` and ``Pause``) so a launcher that cannot, say, cut
the network simply does not implement :class:`NetworkPartitioner`, and callers test for it with
``isinstance(cluster, NetworkPartitioner)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class BrokerEndpoint:
    """Where a client reaches one broker, and what runs it."""

    broker_id: int
    host: str
    port: int
    pid: int | None = None  # local launcher only
    container: str | None = None  # containers launcher only

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


@runtime_checkable
class Cluster(Protocol):
    """One ZooKeeper and N brokers that scenarios can start, break and read."""

    backend: str  # "local" or "containers"
    kafka_version: str

    def start(self) -> None:
        """Start ZooKeeper and every broker; return once all are ready (bounded wait)."""

    def destroy(self) -> None:
        """Stop everything this cluster started and remove its data. Idempotent."""

    @property
    def broker_ids(self) -> list[int]: ...

    @property
    def bootstrap_servers(self) -> str: ...

    @property
    def zookeeper_connect(self) -> str: ...

    def endpoint(self, broker_id: int) -> BrokerEndpoint: ...

    def broker_settings(self) -> dict[str, str]:
        """The effective broker properties shared by all brokers (session timeout, ...)."""

    def log_files(self) -> dict[str, Path]:
        """Node name ("zookeeper", "broker-1", ...) -> a local file with that node's log."""


@runtime_checkable
class BrokerControl(Protocol):
    """Process-level faults on one broker."""

    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL; returns once the process is gone (its ZK session lives on until expiry)."""

    def stop_broker(self, broker_id: int) -> None:
        """SIGTERM (controlled shutdown); returns once the process has exited (bounded)."""

    def pause_broker(self, broker_id: int) -> None:
        """SIGSTOP / docker pause."""

    def resume_broker(self, broker_id: int) -> None:
        """SIGCONT / docker unpause."""

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped broker with its old data; waits until its old ZK registration is
        gone first (else NODEEXISTS) and until it has registered again."""

    def broker_running(self, broker_id: int) -> bool: ...


@runtime_checkable
class NetworkPartitioner(Protocol):
    """Network faults; only launchers that give brokers their own network namespace have it."""

    def isolate(self, broker_id: int, *, from_zookeeper: bool = True, from_brokers: bool = True,
                from_clients: bool = False) -> None:
        """Drop traffic between the broker and the named peers, in both directions."""

    def heal_network(self) -> None:
        """Remove every partition this cluster made. Idempotent."""
