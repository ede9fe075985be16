"""The pure parts of a plan the faults' generator side needs too: a topic with its explicit
assignment (``TopicSpec``) and a step — a fault kind, a pure target selector, options
(``Step``). ``scenarios.plans.spec`` builds scenarios of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kafka_chaos.scenarios.model.targets import NoTarget, Selector


def frozen(mapping: Mapping[Any, Any] | None = None) -> Mapping[Any, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class TopicSpec:
    name: str
    assignment: Mapping[int, tuple[int, ...]]  # partition -> replicas in AR order
    config: Mapping[str, str] = field(default_factory=frozen)
    # False: no producer or consumers on it (a topic a step deletes: its clients would only fail)
    workload: bool = True
    # True: the transactional workload's (scenarios.clients.txn_workload): the first such topic of a
    # scenario is its input, the second its output; no idempotent producer (``workload`` False)
    transactional: bool = False

    @property
    def partitions(self) -> tuple[int, ...]:
        return tuple(sorted(self.assignment))


@dataclass(frozen=True)
class Step:
    """One fault: its kind (``scenarios.faults.FAULT_KINDS``), the pure target selector, options
    (e.g. ``replicas`` of a reassignment, ``via`` of an election), and oracle events the cluster
    will run on its own after the fault (``auto_rebalance``)."""

    fault: str
    target: Selector = NoTarget()
    options: Mapping[str, Any] = field(default_factory=frozen)
    then: tuple[str, ...] = ()  # extra oracle events by name, e.g. ("auto_rebalance",)
