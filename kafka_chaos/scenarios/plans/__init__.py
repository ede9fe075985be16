"""What to run: the spec types (``spec``), the scenario catalogue, schedule files, the schedule
generator and the shrinker."""
