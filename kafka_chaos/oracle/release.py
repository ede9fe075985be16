"""Which Kafka release the controller runs, and the inter-broker protocol version it speaks:
the two keys of every rule that changed between releases (oracle/README.md lists them).

A rule written for a release applies from that release on (``Release.at_least``); a rule that
depends on the protocol compares ``inter.broker.protocol.version`` (``protocol_version``), whose
default is the release's own newest version (``MetadataVersion.latestProduction`` in 3.x,
``ApiVersion.latestVersion`` in 2.x: the newest IV of the release's own X.Y).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

INTER_BROKER_PROTOCOL_VERSION = "inter.broker.protocol.version"

_RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
# "2.7-IV2", "3.2-IV0", "2.7", "0.10.2-IV0", "0.10.2"
_PROTOCOL = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-IV(\d+))?$")
LATEST_IV = 99  # "X.Y" without an IV names the newest IV of X.Y (ApiVersion / MetadataVersion.fromVersionString)


@dataclass(frozen=True, order=True)
class Release:
    """A Kafka release, e.g. 3.9.2."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, version: str) -> Release:
        match = _RELEASE.match(version.strip())
        if match is None:
            raise ValueError(f"Kafka release {version!r} is not of the form X.Y.Z")
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        return (self.major, self.minor, self.patch) >= (major, minor, patch)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


NEWEST = Release(3, 9, 2)


@dataclass(frozen=True, order=True)
class ProtocolVersion:
    """An ``inter.broker.protocol.version``: release X.Y (or 0.X.Y) and its IV."""

    major: int
    minor: int
    patch: int
    iv: int

    def at_least(self, major: int, minor: int, iv: int = 0) -> bool:
        return self >= ProtocolVersion(major, minor, 0, iv)


def parse_protocol_version(value: str) -> ProtocolVersion | None:
    """``"3.2-IV0"``, ``"2.7"`` (its newest IV), ``"0.10.2"``; None if it is none of these."""
    match = _PROTOCOL.match(value.strip())
    if match is None:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    patch = int(match.group(3) or 0)
    iv = int(match.group(4)) if match.group(4) is not None else LATEST_IV
    if major == 0:  # "0.10.2": the release is 0.10, its "patch" the third number
        return ProtocolVersion(0, minor, patch, iv)
    return ProtocolVersion(major, minor, 0, iv)


def protocol_version(config: Mapping[str, object], release: Release) -> ProtocolVersion:
    """The IBP the controller speaks: the configured one, else the release's own. A value Kafka
    would refuse at start-up cannot be in a running cluster's config: the release's own then."""
    value = config.get(INTER_BROKER_PROTOCOL_VERSION)
    if isinstance(value, str):
        parsed = parse_protocol_version(value)
        if parsed is not None:
            return parsed
    return ProtocolVersion(release.major, release.minor, 0, LATEST_IV)
