"""The codecs the workloads' producers may compress their batches with: a schedule's
``workload.compression`` (:mod:`scenarios.plans.schedule`), handed to the transactional
workload's clients (:mod:`scenarios.clients.txn_workload`, :mod:`scenarios.clients.java_txn_workload`)."""

from __future__ import annotations

# The codecs a workload's producers may compress their batches with (a schedule's
# ``workload.compression``): the producer property ``compression.type`` of librdkafka and of the
# Java client alike, and the ``CompressionType`` names of every Kafka release the harness runs
# (clients/src/main/java/org/apache/kafka/common/record/CompressionType.java, 2.4 to 3.9). The
# first is the default. Compressed transactional produces are what KAFKA-15653 needs (3.6.0:
# the verified produce's callback decompressed with another request thread's BufferSupplier).
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


def compression_problem(value: object) -> str | None:
    """Why ``value`` is no :data:`COMPRESSIONS` codec, in one line, or None when it is one."""
    if isinstance(value, str) and value in COMPRESSIONS:
        return None
    return f"must be one of {', '.join(COMPRESSIONS)}, not {value!r}"
