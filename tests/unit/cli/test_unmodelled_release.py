"""A KRaft or migrating run on a release the KRaft model does not cover is refused in one line
before any cluster starts (``harness.config.check_kraft_release``, which ``run`` and
``explore`` call first); ZooKeeper mode runs every release."""

from __future__ import annotations

import pytest

from kafka_chaos.harness.config import check_kraft_release
from kafka_chaos.common.errors import UsageError

ROWS = [
    # (mode, release, refused)
    ("kraft", "3.9.2", False), ("migration", "3.9.0", False), ("kraft", "3.6.1", False), ("migration", "3.6.0", False),
    ("kraft", "3.8.1", False), ("migration", "3.7.2", False), ("kraft", "3.7.0", False), ("migration", "3.8.0", False),
    ("kraft", "3.5.2", True), ("migration", "2.8.2", True), ("kraft", "3.5.0", True),
    ("zookeeper", "3.8.1", False), ("zookeeper", "2.4.1", False),
]


@pytest.mark.parametrize("mode, release, refused", ROWS)
def test_releases_the_kraft_model_does_not_cover_are_refused(mode, release, refused) -> None:
    if refused:
        with pytest.raises(UsageError, match=rf"--mode {mode} runs Kafka 3\.6\.x, 3\.7\.x, 3\.8\.x and 3\.9\.x .*not {release}"):
            check_kraft_release(mode, release)
    else:
        check_kraft_release(mode, release)
