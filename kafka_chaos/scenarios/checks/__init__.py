"""The check registry (``registry``) and the checks: pure functions of what was observed —
partition state against the oracle (``functions``, ``expectations``), the clients' history
(``client_history``, ``availability``, ``latency``, ``misplaced``) and the triage of failures."""
