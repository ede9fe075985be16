"""A dynamic KRaft quorum's pure parts (harness.kraft.dynamic_quorum): the format tool's quorum
arguments, VotersRecord decoding, and which VotersRecord a voter acts on; the properties and
refusals of harness.config for quorum="dynamic"."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafka_chaos.common.errors import UsageError
from kafka_chaos.harness.config import (
    CONTROLLER_QUORUM_BOOTSTRAP_SERVERS,
    CONTROLLER_QUORUM_VOTERS,
    PROCESS_ROLES,
    ClusterConfig,
    check_dynamic_quorum,
    kraft_node_properties,
)
from kafka_chaos.harness.kraft.dynamic_quorum import (
    KRAFT_VOTERS,
    Voter,
    VoterSetSeen,
    decode_voters_record,
    format_args,
    initial_controllers,
    newest_voter_set,
    read_directory_id,
    voter_set_of_log,
    voters_records,
)
from kafka_chaos.harness.kraft.records import kafka_uuid, uuid_to_bytes
from tests.unit.harness.test_kraft_log import LEADER_CHANGE_KEY, batch, cstr, leader_change, tagged, uvarint

DIR_A, DIR_B, DIR_C = (kafka_uuid(bytes([i]) * 16) for i in (1, 2, 3))


def voters_record(*voters: tuple[int, str, int]) -> bytes:
    """A VotersRecord v0 value: (id, directory id, CONTROLLER port) per voter."""
    def voter(v: tuple[int, str, int]) -> bytes:
        node_id, directory, port = v
        endpoint = cstr("CONTROLLER") + cstr("127.0.0.1") + struct.pack(">H", port) + tagged({})
        return (struct.pack(">i", node_id) + uuid_to_bytes(directory) + uvarint(2) + endpoint
                + struct.pack(">hh", 0, 1) + tagged({}) + tagged({}))
    return struct.pack(">h", 0) + uvarint(len(voters) + 1) + b"".join(map(voter, voters)) + tagged({})


VOTERS_KEY = struct.pack(">hh", 0, KRAFT_VOTERS)


@pytest.mark.parametrize("voters, expected", [
    ({3000: ("127.0.0.1:9001", DIR_A)}, f"3000@127.0.0.1:9001:{DIR_A}"),
    ({3002: ("127.0.0.1:9003", DIR_C), 3000: ("127.0.0.1:9001", DIR_A), 3001: ("127.0.0.1:9002", DIR_B)},
     f"3000@127.0.0.1:9001:{DIR_A},3001@127.0.0.1:9002:{DIR_B},3002@127.0.0.1:9003:{DIR_C}"),
])
def test_initial_controllers_is_what_dynamic_voter_parses(voters: dict[int, tuple[str, str]], expected: str) -> None:
    assert initial_controllers(voters) == expected


def test_format_args_name_every_initial_controller_and_leave_an_added_one_out() -> None:
    args = format_args({3000: ("h:1", DIR_A), 3001: ("h:2", DIR_B)}, added=[3002])
    assert args[3000] == args[3001] == ["--initial-controllers", f"3000@h:1:{DIR_A},3001@h:2:{DIR_B}"]
    assert args[3002] == ["--no-initial-controllers"]
    assert format_args({}, [3003]) == {3003: ["--no-initial-controllers"]}


def test_a_voters_record_decodes_ids_directories_and_endpoints() -> None:
    voters = decode_voters_record(voters_record((3000, DIR_A, 9001), (3001, DIR_B, 9002)))
    assert voters == (Voter(3000, DIR_A, ("CONTROLLER://127.0.0.1:9001",)),
                      Voter(3001, DIR_B, ("CONTROLLER://127.0.0.1:9002",)))


def test_only_kraft_voters_control_records_are_read_from_a_log() -> None:
    data = (batch(0, [leader_change(3000, (3000,))], control_key=LEADER_CHANGE_KEY)
            + batch(1, [voters_record((3000, DIR_A, 9001))], control_key=VOTERS_KEY)
            + batch(2, [voters_record((3000, DIR_A, 9001), (3001, DIR_B, 9002))], control_key=VOTERS_KEY))
    found = voters_records(data + data[:30])  # a batch being written is left out
    assert [(o, tuple(v.node_id for v in vs)) for o, vs in found] == [(1, (3000,)), (2, (3000, 3001))]


A = (Voter(3000, DIR_A),)
AB = (Voter(3000, DIR_A), Voter(3001, DIR_B))
ABC = (*AB, Voter(3002, DIR_C))


@pytest.mark.parametrize("snapshot, end, segments, expected", [
    ([], 0, [], None),  # a static quorum's log has none
    ([(0, ABC)], 0, [], VoterSetSeen(-1, ABC)),  # the bootstrap checkpoint's voters
    ([(0, ABC)], 0, [(40, AB)], VoterSetSeen(40, AB)),  # a removal appended since
    ([(0, AB)], 0, [(40, ABC), (90, A)], VoterSetSeen(90, A)),  # the newest, committed or not
    ([(3, AB)], 100, [(40, ABC)], VoterSetSeen(-1, AB)),  # a segment record older than the snapshot
])
def test_a_voter_acts_on_the_newest_voters_record_past_its_snapshot(
        snapshot: list[tuple[int, tuple[Voter, ...]]], end: int, segments: list[tuple[int, tuple[Voter, ...]]],
        expected: VoterSetSeen | None) -> None:
    assert newest_voter_set(snapshot, end, segments) == expected


def test_voter_set_and_directory_id_are_read_from_a_metadata_directory(tmp_path: Path) -> None:
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    (partition / "00000000000000000000-0000000000.checkpoint").write_bytes(
        batch(0, [voters_record((3000, DIR_A, 1), (3001, DIR_B, 2), (3002, DIR_C, 3))], control_key=VOTERS_KEY))
    (partition / "00000000000000000000.log").write_bytes(
        batch(7, [voters_record((3001, DIR_B, 2), (3002, DIR_C, 3))], control_key=VOTERS_KEY))
    assert voter_set_of_log(tmp_path) == VoterSetSeen(7, decode_voters_record(voters_record((3001, DIR_B, 2),
                                                                                            (3002, DIR_C, 3))))
    assert voter_set_of_log(tmp_path / "nothing") is None
    (tmp_path / "meta.properties").write_text(f"#\nnode.id=3000\ndirectory.id={DIR_A}\nversion=1\n")
    assert read_directory_id(tmp_path) == DIR_A


# --- properties and refusals (harness.config) -----------------------------------------------------

KRAFT3 = dict(mode="kraft", controllers=3)
VOTERS = {3000: "127.0.0.1:9001", 3001: "127.0.0.1:9002", 3002: "127.0.0.1:9003"}


@pytest.mark.parametrize("node_id, controller, role", [
    (3000, None, "controller"), (1, None, "broker"), (3003, True, "controller")])
def test_a_dynamic_quorum_names_bootstrap_servers_not_voters(node_id: int, controller: bool | None, role: str) -> None:
    props = kraft_node_properties(ClusterConfig(**KRAFT3, quorum="dynamic"), node_id, voters=VOTERS, address="h:1",
                                  log_dir="/d", kafka_version="4.1.2", controller=controller)
    assert props[PROCESS_ROLES] == role
    assert props[CONTROLLER_QUORUM_BOOTSTRAP_SERVERS] == "127.0.0.1:9001,127.0.0.1:9002,127.0.0.1:9003"
    assert CONTROLLER_QUORUM_VOTERS not in props


def test_a_static_quorum_keeps_its_voters() -> None:
    props = kraft_node_properties(ClusterConfig(**KRAFT3), 3000, voters=VOTERS, address="h:1", log_dir="/d",
                                  kafka_version="4.1.2")
    assert props[CONTROLLER_QUORUM_VOTERS].startswith("3000@127.0.0.1:9001,")
    assert CONTROLLER_QUORUM_BOOTSTRAP_SERVERS not in props


@pytest.mark.parametrize("version, refused", [("3.8.1", True), ("3.6.2", True), ("3.9.0", False), ("3.9.2", False),
                                              ("4.1.2", False), ("4.4.0", False)])
def test_a_dynamic_quorum_needs_3_9(version: str, refused: bool) -> None:
    if refused:
        with pytest.raises(UsageError, match=f"needs Kafka 3.9 or later, not {version}"):
            check_dynamic_quorum(version)
    else:
        check_dynamic_quorum(version)


@pytest.mark.parametrize("kwargs, message", [
    (dict(quorum="dynamic"), "a dynamic quorum is a KRaft cluster's"),
    (dict(mode="migration", controllers=3, quorum="dynamic"), "a dynamic quorum is a KRaft cluster's"),
    (dict(mode="kraft", quorum="elastic"), "quorum must be one of static, dynamic"),
])
def test_bad_quorum_settings_are_one_line(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        ClusterConfig(**kwargs)  # type: ignore[arg-type]
