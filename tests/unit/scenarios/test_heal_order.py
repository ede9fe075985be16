"""Teardown heals a voter cut before the faults that start brokers (explore-7734-3 on 3.9.2: the
power failure's heal started broker 5 while voter 3000 was still cut; the broker followed the cut
candidate's epochs, 5 to 31, and exited after 60 s without catching up)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kafka_chaos.scenarios.faults import FaultEnv, Nemesis, make_fault
from kafka_chaos.scenarios.faults.base import Fault, FaultBase
from kafka_chaos.scenarios.faults.quorum_links import QuorumLeaderCut
from kafka_chaos.scenarios.faults.voter_links import QuorumFollowerCut
from kafka_chaos.scenarios.model.targets import Target
from tests.unit.scenarios.fakes import FakeBrokers


class _Observer:
    def wait_broker_gone(self, b: int, timeout: float) -> None:
        pass


def _env() -> FaultEnv:
    return FaultEnv(FakeBrokers(), _Observer(), _Observer())  # type: ignore[arg-type]


def _recording(cls: type[FaultBase]) -> type[FaultBase]:
    """``cls`` with its links left alone: inject holds the cut, heal records it among the broker calls."""

    @dataclass
    class Recording(cls):  # type: ignore[valid-type, misc]
        def inject(self, env: FaultEnv) -> None:
            self._cut = True

        def heal(self, env: FaultEnv) -> None:
            if self._cut:
                env.cluster.calls.append(("heal_cut", 0))  # type: ignore[attr-defined]
                self._cut = False

    return Recording


def _kill(b: int) -> Fault:
    return make_fault("hard_kill", Target((b,), f"brokers [{b}]"), {}, topic_names={}, topic_partitions={})


@pytest.mark.parametrize("cut", [QuorumLeaderCut, QuorumFollowerCut])
def test_a_voter_cut_is_healed_before_the_brokers_are_started(cut: type[FaultBase]) -> None:
    assert cut.heals_first and not FaultBase.heals_first
    e = _env()
    nemesis = Nemesis(e)
    nemesis.inject(_kill(1))
    nemesis.inject(_recording(cut)(Target((), "the quorum leader")))
    nemesis.inject(_kill(2))
    assert nemesis.heal_all() == []
    assert e.cluster.calls == [("kill", 1), ("kill", 2), ("heal_cut", 0), ("start", 2), ("start", 1)]
