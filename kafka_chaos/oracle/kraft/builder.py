"""``PartitionChangeBuilder`` and ``PartitionRegistration.merge`` (Kafka 3.9), pure.

Every change the KRaft controller makes to a partition -- a fence, an unfence, a controlled
shutdown, an election, a reassignment step, a leader's AlterPartition -- is one
``PartitionChangeBuilder(...).build()`` producing one ``PartitionChangeRecord`` or nothing, which
every controller then replays with ``PartitionRegistration.merge``.  :func:`build` and
:func:`merge` mirror them step by step; :func:`change` is both.

Line numbers are those of apache/kafka branch ``3.9`` (commit ``c821449fb7c1``),
``metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java`` unless said
otherwise.  Eligible leader replicas (KIP-966) are off: ``ReplicationControlManager.isElrEnabled``
needs ``MetadataVersion.isElrSupported`` = 4.0-IV0 (ReplicationControlManager.java lines 1004-1006,
MetadataVersion.java lines 347-349), an unstable version in 3.9; every ELR step of ``build()``
(``maybePopulateTargetElr``, ``maybeUpdateRecordElr``, ``maybeUpdateLastKnownLeader``,
``canElectLastKnownLeader``) is then a no-op and is left out.

Releases before 3.9 (3.6.1 checked line by line, ``git show 3.6.1:metadata/.../PartitionChangeBuilder.java``):
the builder has no ELR, no directories and no ``minISR``; elections (``electPreferredLeader``,
``electAnyLeader``, ``tryElection``: 3.6.1 lines 169-262) and ``PartitionRegistration.merge``
(PartitionRegistration.java 3.6.1 lines 159-188) are the same.  Two steps differ, each a flag of
:func:`build` set by the controller from the release: ``isr_shrink_bump_reads_target_isr``
(before 3.8.0: the one ``triggerLeaderEpochBumpIfNeeded``, 3.6.1 lines 289-301, reads the
target ISR before it is written) and ``reassignment_completes_when_adding_in_isr`` (before 3.8.0:
``maybeCompleteReassignment`` waits for the *adding* replicas only, PartitionReassignmentReplicas.java
3.6.1 lines 123-125).

3.7.x and 3.8.x (the 3.7.2 and 3.8.1 sources jars): 3.7.0 adds ELR, directories and ``minISR``
to the builder, every ELR step behind ``eligibleLeaderReplicasEnabled`` (set only where
``ReplicationControlManager.isElrEnabled``: refused by :func:`oracle.kraft.config.check_elr_not_in_effect`)
-- with it off, ``isValidNewLeader`` (3.7.2 lines 326-330) and the empty-ISR rule (lines 440-444)
are 3.6's.  3.7.x keeps 3.6's one ``triggerLeaderEpochBumpIfNeeded`` (3.7.2 lines 392-405, called
at line 438 before the ISR is set at lines 443-451) and the adding-replicas completion
(PartitionReassignmentReplicas.java 3.7.2 lines 123-125): both flags are on.  3.8.0 brings 3.9's
split bump (KAFKA-16624: 3.8.1 lines 376-422, called at lines 459 and 473) and completion
(KAFKA-15665: PartitionReassignmentReplicas.java 3.8.1 line 122): both flags off; 3.8.1 and 3.9.0
differ in style only.  A 3.7+ record also carries ``directories`` when the replicas change
(3.7.2 lines 468-480): never a record of its own here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable, Sequence

from kafka_chaos.oracle.state import NO_LEADER, RECOVERING, PartitionState


class Election(Enum):
    """``PartitionChangeBuilder.Election`` (lines 69-82)."""

    PREFERRED = "PREFERRED"
    ONLINE = "ONLINE"
    UNCLEAN = "UNCLEAN"


@dataclass(frozen=True)
class ChangeRecord:
    """The fields of a ``PartitionChangeRecord`` the model needs; None = field not set (for
    ``leader``: ``NO_LEADER_CHANGE``, for ``leader_recovery_state``: ``LeaderRecoveryState.NO_CHANGE``)."""

    leader: int | None = None
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    leader_recovery_state: int | None = None
    unclean: bool = False  # the election chose a leader from outside the ISR (not a record field)
    # KIP-966 (4.x, ELR on): EligibleLeaderReplicas and LastKnownElr (PartitionChangeRecord v2 tags 6, 7)
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None

    def is_no_op(self) -> bool:
        """``changeRecordIsNoOp`` (lines 54-64; 4.1.2 the same with the ELR fields), the directory
        fields being never set here."""
        return (self.leader is None and self.isr is None and self.replicas is None
                and self.removing_replicas is None and self.adding_replicas is None
                and self.leader_recovery_state is None and self.elr is None and self.last_known_elr is None)


def _contains_all(outer: Sequence[int], inner: Sequence[int]) -> bool:
    """``Replicas.contains(outer, inner)``: every element of ``inner`` is in ``outer``."""
    return set(inner) <= set(outer)


def _complete_reassignment(
    isr: tuple[int, ...], replicas: tuple[int, ...], removing: tuple[int, ...], adding: tuple[int, ...],
    when_adding_in_isr: bool = False,
    kafka_19975: bool = False,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``completeReassignmentIfNeeded`` (lines 425-444) ->
    ``PartitionReassignmentReplicas.maybeCompleteReassignment`` (PartitionReassignmentReplicas.java
    lines 97-126): with a reassignment in progress, the target ISR minus the removing replicas
    must be non-empty and hold every remaining replica; then ISR and replicas lose the removing
    ones (order kept) and adding/removing are cleared.  Returns (isr, replicas, removing, adding).
    ``when_adding_in_isr`` (before 3.8.0, PartitionReassignmentReplicas.java 3.6.1 lines 123-125):
    it need only hold every *adding* replica -- a target replica that was a replica already may
    be out of the ISR (KAFKA-15665 made 3.8.0 wait for it).  ``kafka_19975`` (4.3.0+, PR #21114,
    PartitionReassignmentReplicas.java 4.3.0 lines 122-129): every *adding* replica, and every
    target replica only when the reassignment removes more replicas than it adds."""
    if not removing and not adding:
        return isr, replicas, removing, adding
    new_isr, new_replicas = isr, replicas
    if removing:
        new_isr = tuple(r for r in isr if r not in removing)
        if not new_isr:
            return isr, replicas, removing, adding
        new_replicas = tuple(r for r in replicas if r not in removing)
        if not new_replicas:
            return isr, replicas, removing, adding
    if kafka_19975:
        if not _contains_all(new_isr, adding) or (len(adding) < len(removing)
                                                  and not _contains_all(new_isr, new_replicas)):
            return isr, replicas, removing, adding
    elif not _contains_all(new_isr, adding if when_adding_in_isr else new_replicas):
        return isr, replicas, removing, adding
    return new_isr, new_replicas, (), ()


@dataclass(frozen=True)
class Elr:
    """The KIP-966 switches of one builder (Kafka 4.x): ``eligibleLeaderReplicasEnabled``
    (``featureControl.isElrFeatureEnabled()``), ``minISR`` (``getTopicEffectiveMinIsr``:
    min(min.insync.replicas, replication factor), ReplicationControlManager.java 4.1.2 lines
    2350-2356), ``uncleanShutdownReplicas`` (``brokerWithUncleanShutdown``, lines 2026-2028) and
    the release keys :func:`oracle.kraft.config.last_known_leader_must_be_acceptable` (KAFKA-19522)
    and :func:`oracle.kraft.config.last_known_leader_simplified` (PR #20629)."""

    min_isr: int = 1
    unclean_shutdown_replicas: tuple[int, ...] = ()
    lke_must_be_acceptable: bool = True
    lke_simplified: bool = True


def _populate_target_elr(p: PartitionState, isr: tuple[int, ...], elr: Elr) -> tuple[int, ...]:
    """``maybePopulateTargetElr`` (PartitionChangeBuilder.java 4.1.2 lines 536-567), run before
    the election: a target ISR of at least minISR clears the ELR; otherwise ELR = (current ELR |
    current ISR) - target ISR - unclean-shutdown replicas.  (The target last known ELR it computes
    is never written while ``useLastKnownLeaderInBalancedRecovery`` is true, as it always is:
    ``maybeUpdateRecordElr`` returns before, lines 524-528; the LKE is
    ``maybeUpdateLastKnownLeader``'s.)  A HashSet of small Integers iterates ascending: sorted."""
    if len(isr) >= elr.min_isr:
        return ()
    return tuple(sorted((set(p.elr) | set(p.isr)) - set(isr) - set(elr.unclean_shutdown_replicas)))


def _can_elect_last_known_leader(p: PartitionState, isr: tuple[int, ...], target_elr: tuple[int, ...],
                                 acceptable: Callable[[int], bool], elr: Elr) -> bool:
    """``canElectLastKnownLeader`` (4.1.2 lines 290-320): ISR and ELR targets empty, exactly one
    last known ELR member, and it acceptable -- 4.0.x elects it even when not (KAFKA-19522)."""
    if isr or target_elr or len(p.last_known_elr) != 1:
        return False
    return acceptable(p.last_known_elr[0]) or not elr.lke_must_be_acceptable


def _elect(
    p: PartitionState,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    election: Election,
    acceptable: Callable[[int], bool],
    elr: Elr | None = None,
    target_elr: tuple[int, ...] = (),
) -> tuple[int, bool]:
    """``electLeader`` (lines 228-234): (leader, unclean).

    ``isValidNewLeader`` (lines 331-335): in the target ISR and acceptable.  PREFERRED
    (``electPreferredLeader``, lines 239-263): the first target replica, else the current leader
    if still valid, else the first valid of the other replicas in assignment order.  ONLINE /
    UNCLEAN (``electAnyLeader``, lines 268-296): the current leader if still valid, else the first
    valid replica in assignment order, else (UNCLEAN only) the first *acceptable* replica, in the
    ISR or not.  Nothing: NO_LEADER.

    With ELR on (``elr`` given; PartitionChangeBuilder.java 4.1.2 lines 231-326): a replica of the
    target ELR is valid too when the target ISR is empty (``isValidNewLeader``, lines 322-326), and
    before giving up -- in PREFERRED and ONLINE elections too, whatever unclean.leader.election.enable
    says -- the last known leader is elected, *uncleanly* (``canElectLastKnownLeader``,
    lines 250-252, 278-280)."""

    def valid(replica: int) -> bool:
        in_isr = replica in isr or (elr is not None and not isr and replica in target_elr)
        return in_isr and acceptable(replica)

    def last_known() -> bool:
        return elr is not None and _can_elect_last_known_leader(p, isr, target_elr, acceptable, elr)

    if election is Election.PREFERRED:
        if valid(replicas[0]):
            return replicas[0], False
        if valid(p.leader):
            return p.leader, False
        other = next((r for r in replicas[1:] if valid(r)), None)
        if other is not None:
            return other, False
        if last_known():
            return p.last_known_elr[0], True
        return NO_LEADER, False
    if valid(p.leader):
        return p.leader, False
    clean = next((r for r in replicas if valid(r)), None)
    if clean is not None:
        return clean, False
    if last_known():
        return p.last_known_elr[0], True
    if election is Election.UNCLEAN:
        unclean = next((r for r in replicas if acceptable(r)), None)
        if unclean is not None:
            return unclean, True
    return NO_LEADER, False


def build(
    p: PartitionState,
    acceptable: Callable[[int], bool],
    *,
    election: Election = Election.ONLINE,
    target_isr: Sequence[int] | None = None,
    target_replicas: Sequence[int] | None = None,
    target_removing: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None,
    target_leader_recovery_state: int | None = None,
    bump_leader_epoch_on_isr_shrink: bool = False,
    leader_recovery_supported: bool = True,
    isr_shrink_bump_reads_target_isr: bool = False,
    reassignment_completes_when_adding_in_isr: bool = False,
    elr: Elr | None = None,
    reassignment_kafka_19975: bool = False,
) -> ChangeRecord | None:
    """``PartitionChangeBuilder.build()`` (lines 446-486); None when the record would be a no-op.

    ``acceptable``: the builder's ``isAcceptableLeader`` (a ``LeaderAcceptor``: an active broker
    whose directory holding the partition is online).  Each ``target_*`` left None keeps the
    partition's own value (the builder's constructor, lines 125-131).  Steps in ``build()`` order:

    1. ``completeReassignmentIfNeeded`` against the target ISR;
    2. ``tryElection`` (lines 337-370): a leader other than the current one is written; an
       unclean one also sets ISR = [leader] and, if the metadata version supports it and the
       partition is not RECOVERING already, RECOVERING;
    3. ``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`` (lines 378-388): a replica set
       that loses a replica writes the *same* leader, which bumps the leader epoch;
    4. the ISR is written when it differs (as a list: order counts) and is not empty -- with ELR
       off an empty target ISR is never written (lines 461-469): the last ISR member of a
       partition that loses its leader stays in the ISR;
    5. ``triggerLeaderEpochBumpForIsrShrinkIfNeeded`` (lines 396-423): an ISR shrink without a
       leader change writes the same leader (leader epoch +1) only when
       ``bump_leader_epoch_on_isr_shrink``: below metadata version 3.6-IV0 (KAFKA-15021) or in
       ZooKeeper migration mode (``zkMigrationEnabled``, line 397;
       :func:`oracle.kraft.migration.isr_shrink_bumps_leader_epoch`);
    6. ``setAssignmentChanges`` (lines 488-509): replicas, removing, adding where they differ;
    7. the leader recovery state when the target differs (lines 477-479).

    ``isr_shrink_bump_reads_target_isr`` (releases before 3.8.0): step 5 comes right after step
    3, in the same ``triggerLeaderEpochBumpIfNeeded`` (PartitionChangeBuilder.java 3.6.1 lines
    289-301, called at line 333 before the ISR is set at lines 335-338), and tests the *target*
    ISR: a target ISR that is empty -- not written by step 4 -- still counts as a shrink, so the
    record sets the same leader (NO_LEADER for a leaderless partition) and bumps the leader
    epoch (KAFKA-16624 removed that record in 3.8.0).  ``reassignment_completes_when_adding_in_isr``:
    see :func:`_complete_reassignment`.
    """
    isr = tuple(p.isr if target_isr is None else target_isr)
    replicas = tuple(p.replicas if target_replicas is None else target_replicas)
    removing = tuple(p.removing_replicas if target_removing is None else target_removing)
    adding = tuple(p.adding_replicas if target_adding is None else target_adding)
    recovery = p.leader_recovery_state if target_leader_recovery_state is None else target_leader_recovery_state

    isr, replicas, removing, adding = _complete_reassignment(
        isr, replicas, removing, adding, reassignment_completes_when_adding_in_isr, reassignment_kafka_19975)

    # KIP-966 (elr given: 4.x with the feature on), PartitionChangeBuilder.java 4.1.2 build(),
    # lines 437-453: maybePopulateTargetElr before the election
    target_elr = p.elr if elr is None else _populate_target_elr(p, isr, elr)

    leader: int | None = None
    record_isr: tuple[int, ...] | None = None
    record_recovery: int | None = None
    node, unclean = _elect(p, replicas, isr, election, acceptable, elr, target_elr)
    if node != p.leader:
        leader = node
        if elr is not None and node in target_elr:
            # tryElection (4.1.2 lines 333-338): an ELR member elected: ISR [it], out of the ELR, clean
            isr = (node,)
            target_elr = tuple(r for r in target_elr if r != node)
        if unclean:
            record_isr = (node,)
            if p.leader_recovery_state != RECOVERING and leader_recovery_supported:
                record_recovery = RECOVERING
    else:
        unclean = False

    if leader is None and not _contains_all(replicas, p.replicas):
        leader = p.leader

    if isr_shrink_bump_reads_target_isr and bump_leader_epoch_on_isr_shrink and leader is None \
            and not _contains_all(isr, p.isr):
        # 3.6.1 line 296: the target ISR, empty or not (the ISR field is set after, lines 335-338)
        leader = p.leader

    record_elr: tuple[int, ...] | None = None
    if elr is not None:
        # maybeUpdateRecordElr (4.1.2 lines 506-534): an unclean election (the ISR set already)
        # clears the ELR; written when it differs
        if record_isr is not None:
            target_elr = ()
        if target_elr != p.elr:
            record_elr = target_elr

    # lines 445-453: with ELR on an empty target ISR is written too
    if record_isr is None and (isr or elr is not None) and isr != p.isr:
        record_isr = isr

    if not isr_shrink_bump_reads_target_isr and bump_leader_epoch_on_isr_shrink and leader is None \
            and record_isr is not None and not _contains_all(record_isr, p.isr):
        leader = p.leader

    record_lke = None if elr is None else _last_known_leader(p, leader, record_isr, elr)

    record = ChangeRecord(
        leader=leader,
        isr=record_isr,
        replicas=replicas if replicas and replicas != p.replicas else None,
        removing_replicas=removing if removing != p.removing_replicas else None,
        adding_replicas=adding if adding != p.adding_replicas else None,
        leader_recovery_state=recovery if recovery != p.leader_recovery_state else record_recovery,
        unclean=unclean,
        elr=record_elr,
        last_known_elr=record_lke,
    )
    return None if record.is_no_op() else record


def _last_known_leader(p: PartitionState, leader: int | None, record_isr: tuple[int, ...] | None,
                       elr: Elr) -> tuple[int, ...] | None:
    """``maybeUpdateLastKnownLeader``: the record's LastKnownElr, None for unset.  4.1.1+/4.2.0+
    (PartitionChangeBuilder.java 4.1.2 lines 495-504): [old leader] when the record writes leader
    -1 and the LKE is empty; [] when it writes a leader and the LKE is not.  4.0.0-4.1.0 (4.1.0
    lines 495-506): [old leader] when the record writes an empty ISR and the LKE is not already
    [old leader]; [] when the record writes a leader >= 0, or the partition has a leader the record
    does not remove, and the LKE is not empty."""
    if elr.lke_simplified:
        if leader == NO_LEADER and not p.last_known_elr:
            return (p.leader,)
        if leader is not None and leader >= 0 and p.last_known_elr:
            return ()
        return None
    if record_isr == () and p.last_known_elr != (p.leader,):
        return (p.leader,)
    if ((leader is not None and leader >= 0) or (p.leader != NO_LEADER and leader != NO_LEADER)) \
            and p.last_known_elr:
        return ()
    return None


def merge(p: PartitionState, record: ChangeRecord) -> PartitionState:
    """``PartitionRegistration.merge`` (metadata/.../PartitionRegistration.java 3.9 lines 241-280):
    unset fields are kept; a set ``leader`` -- even the same one -- bumps the leader epoch by one;
    the partition epoch goes up by one for every record (kept None when not known)."""
    changes: dict[str, object] = {}
    for name in ("isr", "replicas", "removing_replicas", "adding_replicas", "leader_recovery_state", "elr",
                 "last_known_elr"):
        value = getattr(record, name)
        if value is not None:
            changes[name] = value
    if record.leader is not None:
        changes["leader"] = record.leader
        changes["leader_epoch"] = p.leader_epoch + 1
    if p.partition_epoch is not None:
        changes["partition_epoch"] = p.partition_epoch + 1
    return p.with_changes(**changes)


def change(
    p: PartitionState,
    acceptable: Callable[[int], bool],
    *,
    election: Election = Election.ONLINE,
    target_isr: Sequence[int] | None = None,
    target_replicas: Sequence[int] | None = None,
    target_removing: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None,
    target_leader_recovery_state: int | None = None,
    bump_leader_epoch_on_isr_shrink: bool = False,
    leader_recovery_supported: bool = True,
    isr_shrink_bump_reads_target_isr: bool = False,
    reassignment_completes_when_adding_in_isr: bool = False,
    elr: Elr | None = None,
    reassignment_kafka_19975: bool = False,
) -> tuple[PartitionState, bool] | None:
    """:func:`build` then :func:`merge`: (the new registration, unclean) or None for no record."""
    record = build(
        p,
        acceptable,
        election=election,
        target_isr=target_isr,
        target_replicas=target_replicas,
        target_removing=target_removing,
        target_adding=target_adding,
        target_leader_recovery_state=target_leader_recovery_state,
        bump_leader_epoch_on_isr_shrink=bump_leader_epoch_on_isr_shrink,
        leader_recovery_supported=leader_recovery_supported,
        isr_shrink_bump_reads_target_isr=isr_shrink_bump_reads_target_isr,
        reassignment_completes_when_adding_in_isr=reassignment_completes_when_adding_in_isr,
        elr=elr,
        reassignment_kafka_19975=reassignment_kafka_19975,
    )
    if record is None:
        return None
    return merge(p, record), record.unclean
