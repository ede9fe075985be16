"""A pure model of the Kafka 3.9 ZooKeeper-mode controller and (``ClusterState.mode`` =
``Mode.KRAFT``, :mod:`oracle.kraft`) of the 3.9 KRaft quorum controller: given a settled cluster
state and a fault or admin operation, the leader, ISR, epochs and replicas every partition must
show once the cluster has settled again.  No I/O, no clocks; see ``oracle/README.md``."""

from kafka_chaos.oracle.controller import settled
from kafka_chaos.oracle.interleavings import apply_event, apply_event_alternatives
from kafka_chaos.oracle.events import (
    EVENT_TYPES,
    KRAFT_ONLY_EVENTS,
    AddPartitions,
    AutoRebalance,
    BrokerFailure,
    BrokerStartup,
    CancelReassignment,
    ControlledShutdown,
    ControllerFailover,
    CreateTopic,
    DeleteTopic,
    Event,
    LogDirFailure,
    PreferredElection,
    Reassign,
    TopicConfigChange,
    UncleanElection,
)
from kafka_chaos.oracle.mode import Mode
from kafka_chaos.oracle.outcomes import Outcome, PartitionOutcome
from kafka_chaos.oracle.prediction import Alternative, Prediction, epochs_determined, isr_eligibility_enforced, leaders_ask_controller, predict
from kafka_chaos.oracle.release import NEWEST as NEWEST_RELEASE, Release
from kafka_chaos.oracle.state import (
    NO_LEADER,
    ClusterState,
    PartitionPhase,
    PartitionState,
    TopicPartition,
    TopicState,
    initial_phase,
)

__all__ = [
    "NO_LEADER",
    "NEWEST_RELEASE",
    "EVENT_TYPES",
    "KRAFT_ONLY_EVENTS",
    "AddPartitions",
    "Alternative",
    "AutoRebalance",
    "BrokerFailure",
    "BrokerStartup",
    "ClusterState",
    "ControlledShutdown",
    "CancelReassignment",
    "ControllerFailover",
    "CreateTopic",
    "DeleteTopic",
    "Event",
    "LogDirFailure",
    "Mode",
    "Outcome",
    "PartitionOutcome",
    "PartitionPhase",
    "PartitionState",
    "Prediction",
    "PreferredElection",
    "Reassign",
    "Release",
    "TopicConfigChange",
    "TopicPartition",
    "TopicState",
    "UncleanElection",
    "apply_event",
    "apply_event_alternatives",
    "epochs_determined",
    "isr_eligibility_enforced",
    "leaders_ask_controller",
    "initial_phase",
    "predict",
    "settled",
]
