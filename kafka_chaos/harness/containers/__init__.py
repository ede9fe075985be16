"""The containers launcher: the same cluster contract as :mod:`harness.local.cluster`, with each
ZooKeeper and broker in its own Docker container (testcontainers-python), which gives every
node its own network namespace and therefore real network partitions."""
