"""A dynamic KRaft quorum (KIP-853, Kafka 3.9+): how it is formatted, and the voter set each voter
holds, read from its own metadata log.

Formatting. Every initial controller is formatted with ``kafka-storage format --initial-controllers
id@host:port:directory-id,...`` (``StorageTool.runFormatCommand``, 3.9.2 and 4.0.2): the tool gives
the node's metadata directory the directory id its entry names (``Formatter.doFormat``, metadata
4.1.2 line 426) and writes the voter set into the bootstrap checkpoint
(``00000000000000000000-0000000000.checkpoint``: ``Formatter.writeDynamicQuorumSnapshot``, line 499).
The nodes find the voters through ``controller.quorum.bootstrap.servers`` instead of
``controller.quorum.voters`` (the tool refuses both: StorageTool 4.0.2 line 142). A controller to
be added later is formatted with ``--no-initial-controllers`` and joins as an observer until
``kafka-metadata-quorum add-controller`` makes it a voter.

The voter set. A voter change is a ``KRAFT_VOTERS`` control record (``ControlRecordType`` 6, 4.4.0
javap) holding a ``VotersRecord`` (``common/message/VotersRecord.json``, version 0, flexible): the
leader appends it, and every replica uses the newest one in its log at once, committed or not
(``KRaftControlRecordStateMachine``, raft 4.1.2; the RemoveVoterHandler/AddVoterHandler comments:
"The KRaft internal listener will read this uncommitted record from the log"). So reading each
voter's ``__cluster_metadata-0`` -- its newest snapshot, then the segments past it -- is reading the
voter set that voter acts on. Pure but for :func:`voter_set_of_log` and :func:`read_directory_id`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from kafka_chaos.harness.kraft.records import MetadataLogError, _Reader, batch_headers

KRAFT_VOTERS = 6  # ControlRecordType.KRAFT_VOTERS (clients 4.4.0 javap: KRAFT_VOTERS(6, 6))
METADATA_PARTITION_DIR = "__cluster_metadata-0"
META_PROPERTIES = "meta.properties"
DIRECTORY_ID = "directory.id"  # MetaProperties.DIRECTORY_ID_PROP


@dataclass(frozen=True, order=True)
class Voter:
    """One voter of a VotersRecord: node id, directory id (Kafka's base64 Uuid text), endpoints
    as ``NAME://host:port``."""

    node_id: int
    directory_id: str
    endpoints: tuple[str, ...] = ()


@dataclass(frozen=True)
class VoterSetSeen:
    """The newest VotersRecord in one voter's metadata log: where it is (``offset``; -1: the
    snapshot's) and its voters."""

    offset: int
    voters: tuple[Voter, ...]

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(sorted(v.node_id for v in self.voters))


def initial_controllers(voters: Mapping[int, tuple[str, str]]) -> str:
    """Pure: ``--initial-controllers``' value from node id -> (host:port, directory id):
    ``id@host:port:directory-id`` joined by commas (``DynamicVoter.toString``, raft 4.1.2 line 187)."""
    return ",".join(f"{node_id}@{address}:{directory}" for node_id, (address, directory) in sorted(voters.items()))


def format_args(controllers: Mapping[int, tuple[str, str]], added: Iterable[int] = ()) -> dict[int, list[str]]:
    """Pure: the format tool's quorum arguments per node id: the initial controllers' entry for
    each of ``controllers``, ``--no-initial-controllers`` for a controller to be ``added`` later
    (StorageTool 4.0.2 lines 150-162). Brokers take none."""
    args: dict[int, list[str]] = {c: ["--initial-controllers", initial_controllers(controllers)] for c in controllers}
    args.update({c: ["--no-initial-controllers"] for c in added})
    return args


def decode_voters_record(value: bytes) -> tuple[Voter, ...]:
    """Pure: a VotersRecord value (version 0, flexible: compact arrays and strings, tagged fields)."""
    r = _Reader(value)
    version = r.int16()
    if version != 0:
        raise MetadataLogError(f"VotersRecord version {version}, only 0 is known")
    voters = []
    for _ in range(max(0, r.uvarint() - 1)):
        node_id = r.int32()
        directory = r.uuid()
        endpoints = []
        for _ in range(max(0, r.uvarint() - 1)):
            name, host, port = r.compact_string(), r.compact_string(), r.uint16()
            r.tagged()
            endpoints.append(f"{name}://{host}:{port}")
        r.int16(), r.int16()  # KRaftVersionFeature: min and max supported
        r.tagged()  # the feature struct's
        r.tagged()  # the voter's
        voters.append(Voter(node_id, directory, tuple(endpoints)))
    r.tagged()
    return tuple(voters)


def voters_records(data: bytes) -> list[tuple[int, tuple[Voter, ...]]]:
    """Pure: every KRAFT_VOTERS control record in ``data`` (a segment's or a snapshot's bytes),
    as (offset, voters), in file order; a trailing partial batch is left out."""
    return [(raw.offset, decode_voters_record(raw.value))
            for batch in batch_headers(data) if batch.control and not batch.compressed
            for raw in batch.records(data) if raw.control_type() == KRAFT_VOTERS]


def newest_voter_set(snapshot: Sequence[tuple[int, tuple[Voter, ...]]], snapshot_end: int,
                     segments: Sequence[tuple[int, tuple[Voter, ...]]]) -> VoterSetSeen | None:
    """Pure: the voter set a replica acts on -- the newest VotersRecord of its log past its newest
    snapshot (which ends at ``snapshot_end``), else the snapshot's newest (offset -1), else None
    (a static quorum's log has none)."""
    later = [(o, v) for o, v in segments if o >= snapshot_end]
    if later:
        offset, voters = max(later, key=lambda e: e[0])
        return VoterSetSeen(offset, voters)
    if snapshot:
        return VoterSetSeen(-1, snapshot[-1][1])
    return None


def _snapshot_end(path: Path) -> int:
    """A snapshot file ``<end offset>-<epoch>.checkpoint``'s end offset."""
    return int(path.name.split("-", 1)[0])


def voter_set_of_log(metadata_dir: Path) -> VoterSetSeen | None:
    """The voter set the node whose metadata log directory is ``metadata_dir`` (the parent of
    ``__cluster_metadata-0``) acts on (:func:`newest_voter_set`), read from its files now."""
    partition = metadata_dir / METADATA_PARTITION_DIR
    if not partition.is_dir():
        return None
    snapshots = sorted(partition.glob("*.checkpoint"), key=_snapshot_end)
    snapshot: list[tuple[int, tuple[Voter, ...]]] = []
    end = 0
    for path in reversed(snapshots):  # the newest readable one
        try:
            snapshot, end = voters_records(path.read_bytes()), _snapshot_end(path)
            break
        except (FileNotFoundError, MetadataLogError):
            continue
    segments: list[tuple[int, tuple[Voter, ...]]] = []
    for segment in sorted(partition.glob("*.log")):
        try:
            segments += voters_records(segment.read_bytes())
        except FileNotFoundError:  # deleted by retention between glob and read
            continue
    return newest_voter_set(snapshot, end, segments)


def read_directory_id(metadata_dir: Path) -> str:
    """The ``directory.id`` the format tool wrote in ``metadata_dir``'s meta.properties (what
    ``kafka-metadata-quorum add-controller`` sends: ``MetadataQuorumCommand.getMetadataDirectoryId``)."""
    for line in (metadata_dir / META_PROPERTIES).read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == DIRECTORY_ID:
            return value.strip()
    raise MetadataLogError(f"no {DIRECTORY_ID} in {metadata_dir / META_PROPERTIES}")


@runtime_checkable
class VoterChanges(Protocol):
    """A launcher whose KRaft cluster runs a dynamic quorum and can change its voters (the local
    launcher's :class:`harness.local.dynamic_quorum.LocalDynamicQuorum`)."""

    @property
    def dynamic_quorum(self) -> bool: ...

    def add_controller(self) -> int:
        """Start a new controller formatted with ``--no-initial-controllers`` and make it a voter
        (``add-controller``); its node id, once every running voter's log names it."""

    def remove_controller(self, node_id: int) -> None:
        """``remove-controller --controller-id N --controller-directory-id D``; returns once the
        tool's request was answered (the VotersRecord committed)."""

    def voter_sets(self) -> dict[int, VoterSetSeen | None]:
        """Each controller's voter set, read from its own metadata log now."""

    def controller_directory_id(self, node_id: int) -> str: ...
