"""What a run stores in ``history.jsonl`` (``observations``), and what the controller's own logs
and metrics said about a step."""
