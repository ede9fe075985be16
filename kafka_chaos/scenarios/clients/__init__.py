"""The clients that run through every step: the idempotent producer workload, the consumers, the
final read-back, the delivery accounting and the clients' operations as recorded."""
