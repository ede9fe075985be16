"""Benchmarks of the failover phases (``failover``, ``kip291``) with their produce load and
request-log reading; above ``scenarios``, below ``cli``."""
