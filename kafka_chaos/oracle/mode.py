"""Which controller a :class:`~oracle.state.ClusterState` describes and which model predicts it.

* ``ZOOKEEPER``: the ZooKeeper-mode controller (a broker elected through ``/controller``),
  modelled by :mod:`oracle.controller` / :mod:`oracle.interleavings`.
* ``KRAFT``: the KRaft quorum controller (``process.roles=controller`` nodes; the active one
  writes the ``__cluster_metadata`` log), modelled by :mod:`oracle.kraft`.
"""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    ZOOKEEPER = "zookeeper"
    KRAFT = "kraft"
