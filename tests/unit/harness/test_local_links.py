"""The local launcher's network controls refuse what their rules would not cover."""

from __future__ import annotations

import pytest

from common.errors import HarnessError
from harness.config import ClusterConfig
from harness.local_links import LocalLinkControls


class _Controls(LocalLinkControls):
    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        self._zookeeper = None
        self._link_proxies = None

    @property
    def broker_ids(self) -> list[int]:
        return [1, 2, 3]


@pytest.mark.parametrize("fault", [
    lambda c: c.isolate(1, from_zookeeper=False, from_brokers=True),
    lambda c: c.isolate(1, from_zookeeper=False, from_brokers=False, from_clients=True),
    lambda c: c.degrade(1, to_zookeeper=False, to_brokers=True, loss_pct=10.0),
])
def test_peer_faults_refuse_a_cluster_with_a_control_plane_listener(fault) -> None:  # type: ignore[no-untyped-def]
    """The controller's connections to a KIP-291 listener would pass every rule unseen."""
    with pytest.raises(HarnessError, match="control-plane listener"):
        fault(_Controls(ClusterConfig(control_plane_listener=True)))
