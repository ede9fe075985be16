"""The proof both launchers' quorum-link tests make (tests/integration/test_kraft_links.py and
tests/containers/test_kraft_links_on_containers.py): a KRaft quorum leader cut from the two other
voters with ``cut_links`` is replaced -- the others' logs carry a leader of a later epoch, the cut
one's does not -- while the harness still reaches it; it then stands as a candidate in epochs past
the new leader's (its ``quorum-state`` file: its Vote requests are dropped); healed, its own log
shows the quorum's leader and epoch: it follows again."""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kafka_chaos.common.waits import wait_until
from kafka_chaos.harness.kraft.observer import KraftObserver
from kafka_chaos.harness.zksnapshot import ZkSnapshot

TIMEOUT = 60.0  # a bound for a busy shared machine, never a speed assertion


class CuttableQuorum(Protocol):
    def cut_links(self, node_id: int, peers: Sequence[int]) -> None: ...

    def heal_network(self) -> None: ...

    def controller_address(self, node_id: int) -> str: ...


@dataclass(frozen=True)
class CutProof:
    leader: int
    epoch: int
    others: list[int]
    elected: ZkSnapshot
    standing: int  # the epoch the cut one stood in as a candidate
    healed: tuple[int | None, int | None, int | None, int | None]  # its own leader/epoch, the quorum's


def own_view(metadata_dir: Path) -> ZkSnapshot:
    """What one controller's own metadata log says: the last leader it holds a LEADER_CHANGE of."""
    with KraftObserver([metadata_dir], topics=[]) as observer:
        return observer.snapshot()


def quorum_state_epoch(metadata_dir: Path) -> int:
    """The epoch a voter stands in now, from its ``quorum-state`` file (``FileQuorumStateStore``:
    ``leaderEpoch``), which it rewrites at every epoch it enters -- as a candidate too."""
    state = json.loads((metadata_dir / "__cluster_metadata-0" / "quorum-state").read_text())
    return int(state["leaderEpoch"])


def prove_leader_cut(cluster: CuttableQuorum, quorum: KraftObserver, own_dirs: Mapping[int, Path]) -> CutProof:
    before = quorum.wait_until(lambda s: s.controller is not None, timeout=TIMEOUT, description="a quorum leader")
    leader, epoch = before.controller, before.controller_epoch
    assert leader is not None and epoch is not None
    others = [c for c in own_dirs if c != leader]

    cluster.cut_links(leader, others)
    elected = quorum.wait_until(
        lambda s: s.controller in others and (s.controller_epoch or -1) > epoch, timeout=TIMEOUT,
        description=f"voters {others} to elect a leader of an epoch above {epoch} without {leader}")
    for other in others:
        theirs = own_view(own_dirs[other])
        assert (theirs.controller_epoch or -1) >= (elected.controller_epoch or -1), (other, theirs)
    mine = own_view(own_dirs[leader])
    assert mine.controller_epoch == epoch, f"the cut voter's log took no later epoch: {mine.controller_epoch}"
    # the harness keeps its links to the cut node (connections no node opened are never cut)
    host, port = cluster.controller_address(leader).rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5):
        pass
    new_epoch = elected.controller_epoch or -1
    standing = wait_until(lambda: quorum_state_epoch(own_dirs[leader]), timeout=TIMEOUT, interval=0.5,
                          retry_on=(OSError, ValueError, KeyError), accept=lambda e: e > new_epoch,
                          description=f"the cut voter {leader} to stand in an epoch past {new_epoch}")
    assert own_view(own_dirs[leader]).controller_epoch == epoch, "still no later epoch in its log"

    cluster.heal_network()

    def follows() -> tuple[int | None, int | None, int | None, int | None]:
        mine, now = own_view(own_dirs[leader]), quorum.snapshot()
        return mine.controller, mine.controller_epoch, now.controller, now.controller_epoch

    def caught_up(view: tuple[int | None, int | None, int | None, int | None]) -> bool:
        own_leader, own_epoch, quorum_leader, quorum_epoch = view
        return (quorum_leader is not None and (own_leader, own_epoch) == (quorum_leader, quorum_epoch)
                and (quorum_epoch or -1) > standing)

    healed = wait_until(follows, timeout=TIMEOUT, interval=0.5, accept=caught_up,
                        description=f"voter {leader}'s own log to show the quorum's leader and epoch")
    return CutProof(leader, epoch, others, elected, standing, healed)


def describe(proof: CutProof) -> str:
    return (f"leader {proof.leader} (epoch {proof.epoch}) cut from {proof.others}: {proof.elected.controller} elected "
            f"at epoch {proof.elected.controller_epoch}, {proof.leader} standing in epoch {proof.standing}; healed, "
            f"{proof.leader} follows {proof.healed[2]} at epoch {proof.healed[3]}")
