"""``oracle.scala_order`` against the order the real scala-library jar produces.

``data/scala_groupby_order.txt`` was generated once from scala-library-2.13.15.jar (the jar Kafka
3.9.2 ships) by ``data/scala_groupby_order.jsh``; the command is in that script's header:

    jshell --class-path ~/.cache/kafka-chaos/kafka-3.9.2/libs/scala-library-2.13.15.jar \\
        tests/unit/oracle/data/scala_groupby_order.jsh > tests/unit/oracle/data/scala_groupby_order.txt
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_chaos.oracle.scala_order import _BIT_PARTITION_MASK, hash_map_order, improve

TABLE = Path(__file__).parent / "data" / "scala_groupby_order.txt"


def _rows() -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    rows = []
    for line in TABLE.read_text().splitlines():
        keys, order = line.split("\t")
        rows.append((tuple(map(int, keys.split())), tuple(map(int, order.split()))))
    return rows


ROWS = _rows()


def test_the_table_is_the_generated_one():
    assert len(ROWS) == 2801
    assert ROWS[:3] == [((0,), (0,)), ((1,), (1,)), ((0, 1), (0, 1))]
    # every row is a permutation of its keys
    assert all(sorted(order) == list(keys) for keys, order in ROWS)


def test_every_row_of_the_jar_table():
    wrong = [(keys, order, hash_map_order(keys)) for keys, order in ROWS if hash_map_order(keys) != order]
    assert not wrong, wrong[:5]


def test_the_table_exercises_sub_nodes():
    # Rows where two ids share their lowest 5 hash bits: the trie nests, data entries come first.
    nested = [keys for keys, _ in ROWS
              if len({improve(k) & _BIT_PARTITION_MASK for k in keys}) < len(keys)]
    assert len(nested) > 100


@pytest.mark.parametrize(
    "keys, order",
    [
        ((4, 5), (5, 4)),  # the audit's real-cluster case: 4 is removed last and kept
        ((1, 2), (1, 2)),
        ((1, 2, 3), (1, 2, 3)),
        (tuple(range(11)), (0, 5, 10, 1, 6, 9, 2, 7, 3, 8, 4)),
        ((5, 6), (5, 6)),
        ((3, 4, 5), (5, 3, 4)),
    ],
)
def test_known_orders(keys, order):
    assert hash_map_order(keys) == order
    assert hash_map_order(reversed(keys)) == order  # depends on the set only


def test_order_is_not_one_total_order():
    # CHAMP puts a node's data entries before its sub-nodes, so the relative order of two ids can
    # depend on which other ids are present: find such a pair in the jar's table.
    def before(a: int, b: int, order: tuple[int, ...]) -> bool:
        return order.index(a) < order.index(b)

    seen: dict[tuple[int, int], bool] = {}
    flips = 0
    for keys, order in ROWS:
        for i, a in enumerate(order):
            for b in order[i + 1:]:
                pair = (min(a, b), max(a, b))
                value = before(pair[0], pair[1], order)
                if seen.setdefault(pair, value) != value:
                    flips += 1
    assert flips > 0


def test_improve_matches_scala_hashing_for_known_values():
    # Hashing.improve(0) = ~0 + ... ; spot values checked by the table above, bijective on 32 bits
    samples = list(range(0, 5000)) + [2**31 - 1, 2**31, 2**32 - 1]
    assert len({improve(v) for v in samples}) == len(samples)
    assert all(0 <= improve(v) < 2**32 for v in samples)
