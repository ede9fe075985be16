"""Which partition of an internal topic owns a transactional id or a consumer group: Kafka's own
arithmetic, pure.

Both coordinators map a key to a partition the same way (3.9):

* ``TransactionStateManager.partitionFor`` (``core/.../coordinator/transaction/TransactionStateManager.scala``):
  ``Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount`` — a partition of
  ``__transaction_state``;
* ``GroupMetadataManager.partitionFor`` (``core/.../coordinator/group/GroupMetadataManager.scala``,
  the ZooKeeper-mode and old coordinator) and the KRaft new group coordinator's
  ``GroupCoordinatorService.partitionFor`` (``group-coordinator/.../GroupCoordinatorService.java``):
  ``Utils.abs(groupId.hashCode()) % numPartitions`` — a partition of ``__consumer_offsets``.

The coordinator of the key is that partition's leader.
"""

from __future__ import annotations

TRANSACTION_STATE_TOPIC = "__transaction_state"
GROUP_METADATA_TOPIC = "__consumer_offsets"

_INT_MIN = -(2 ** 31)


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over the string's UTF-16 code
    units (a character beyond the BMP is two), in 32-bit two's-complement arithmetic."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs`` (clients ``org.apache.kafka.common.utils.Utils``): ``Math.abs``
    but 0 for ``Integer.MIN_VALUE``, whose ``Math.abs`` stays negative."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(key: str, partitions: int) -> int:
    """The internal topic's partition that owns ``key`` (a transactional id, a group id) among
    ``partitions``: ``Utils.abs(key.hashCode) % partitions``."""
    if partitions < 1:
        raise ValueError(f"an internal topic of {partitions} partitions owns no key")
    return kafka_abs(java_string_hash(key)) % partitions
