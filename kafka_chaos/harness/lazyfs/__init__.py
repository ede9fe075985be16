"""The crash-consistency layer: a FUSE filesystem under a node's data directory that can lose
what was not fsynced (a power failure), and slow or fail I/O (docs/durability.md)."""
