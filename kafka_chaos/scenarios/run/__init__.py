"""Running steps against a cluster: the step pipeline (``step``), the runner, the cluster pool,
the metadata poller, the clients' cuts, the pytest plugin's probe and the JUnit output."""
