"""The local launcher: ZooKeeper and brokers as JVMs on loopback (``cluster.LocalCluster``), with
its nodes, ZooKeeper ensemble, network cuts (iptables), link proxies and failed log directories."""
