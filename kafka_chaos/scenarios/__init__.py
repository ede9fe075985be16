"""Faults composed into checked steps. The rooms, each importing only those listed before it:

* ``model`` — pure: targets, what a ZooKeeper snapshot says in the oracle's terms, ISR rules,
  the ZooKeeper-delay rule;
* ``faults`` — one registered class per fault kind;
* ``plans`` — what to run: the spec types, the scenario catalogue, schedule files, the schedule
  generator and shrinker;
* ``clients`` — the producer workload, the consumers, the read-back, the delivery accounting and
  the clients' recorded operations;
* ``history`` — the observations stored in ``history.jsonl`` and what the controller's logs and
  metrics said;
* ``checks`` — the check registry and every check: pure functions of what was observed;
* ``run`` — the step pipeline, the runner, the cluster pool, the pytest plugin's probe, JUnit.
"""
