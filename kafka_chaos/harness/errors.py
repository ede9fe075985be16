"""Re-export of :mod:`common.errors`, so ``from harness.errors import ...`` keeps working.

The errors live in the neutral ``common`` package because ``results/`` must not import
``harness``."""

from kafka_chaos.common.errors import HarnessError, UsageError

__all__ = ["HarnessError", "UsageError"]
