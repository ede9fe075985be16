"""A pure model of the Kafka 3.9 KRaft quorum controller's partition decisions (3.6.0 to 3.8.x
through the release-keyed differences in ``config``; oracle/README.md, "3.6.x" and "3.7.x and 3.8.x")
(``metadata/src/main/java/org/apache/kafka/controller/``): ``builder`` (PartitionChangeBuilder,
PartitionRegistration.merge), ``controller`` (ReplicationControlManager's handlers),
``interleavings`` (the orders Kafka leaves open), ``config`` (settings and metadata-version
switches), ``migration`` (ZooKeeper migration mode, KIP-866).  Reached through
:func:`oracle.predict` with a ``ClusterState`` whose ``mode`` is
``Mode.KRAFT``; see ``oracle/README.md``, "KRaft mode"."""
