"""Pure parts the faults and checks share: targets, snapshots in the oracle's terms, ISR rules and
the ZooKeeper-delay rule (no I/O, no clocks)."""
