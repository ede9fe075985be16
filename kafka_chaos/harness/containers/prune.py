"""Remove the Docker objects of runs whose owner is gone (``kafka-chaos cluster prune``).

A run normally cleans up after itself (``ContainerCluster.destroy`` via ``with``, atexit and
signal handlers); this is for what a SIGKILLed or crashed run left behind.  Only objects with
the ``kafka-chaos.run`` label are touched, and by default only those whose owning process
(``kafka-chaos.owner``) is gone, so live runs on a shared engine survive.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_chaos.harness.containers.image import CDS_IMAGE_ROLE, IMAGE_LABEL, docker_client
from kafka_chaos.harness.containers.labels import RUN_LABEL, owner_alive

if TYPE_CHECKING:
    import docker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PruneReport:
    runs: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()
    networks: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    kept_live_runs: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        removed = (f"removed {len(self.containers)} containers, {len(self.networks)} networks, "
                   f"{len(self.volumes)} volumes, {len(self.images)} images of {len(self.runs)} runs")
        if self.kept_live_runs:
            removed += f"; kept {len(self.kept_live_runs)} live runs ({', '.join(self.kept_live_runs)}; --all removes them)"
        return removed


def labelled_objects(client: "docker.DockerClient", run_id: str | None = None) -> dict[str, list[Any]]:
    """Every container, network and volume with the run label (of ``run_id``, or of any run)."""
    selector = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
    filters = {"label": selector}
    return {
        "containers": client.containers.list(all=True, filters=filters),
        "networks": client.networks.list(filters=filters),
        "volumes": client.volumes.list(filters=filters),
    }


def remove_run(client: "docker.DockerClient", run_id: str) -> None:
    """Remove every container, network and volume of one run, by label rather than by handle:
    that also catches an object created just before an exception (or Ctrl-C) prevented its
    creator from keeping the handle.  Best effort: a failure is logged, the rest still goes."""
    objects = labelled_objects(client, run_id)
    for container in objects["containers"]:  # first: a network or volume in use cannot go
        try:
            container.remove(force=True, v=True)
        except Exception as exc:
            log.warning("removing container %s: %s", container.name, exc)
    for network in objects["networks"]:
        try:
            network.remove()
        except Exception as exc:
            log.warning("removing network %s: %s", network.name, exc)
    for volume in objects["volumes"]:
        try:
            volume.remove(force=True)
        except Exception as exc:
            log.warning("removing volume %s: %s", volume.name, exc)


def _labels(obj: object) -> dict[str, str]:
    attrs = obj.attrs  # type: ignore[attr-defined]
    return attrs.get("Labels") or attrs.get("Config", {}).get("Labels") or {}


def prune(*, all_runs: bool = False, images: bool = False, runs: Collection[str] | None = None,
          client: "docker.DockerClient | None" = None) -> PruneReport:
    """Remove the objects of dead runs (of every run with ``all_runs``), only among ``runs``
    when given.  A run counts as live while any of its objects names a living owner."""
    client = client or docker_client()
    objects = labelled_objects(client)
    live_runs: set[str] = set()
    seen_runs: set[str] = set()
    for kind in ("containers", "networks", "volumes"):
        for obj in objects[kind]:
            labels = _labels(obj)
            run = labels.get(RUN_LABEL, "?")
            if runs is not None and run not in runs:
                continue
            seen_runs.add(run)
            if not all_runs and owner_alive(labels):
                live_runs.add(run)
    dead_runs = seen_runs - live_runs

    def doomed(obj: object) -> bool:
        return _labels(obj).get(RUN_LABEL) in dead_runs

    removed: dict[str, list[str]] = {"containers": [], "networks": [], "volumes": [], "images": []}
    # Containers first: a network or volume in use cannot be removed.
    for container in filter(doomed, objects["containers"]):
        container.remove(force=True, v=True)
        removed["containers"].append(container.name)
    for network in filter(doomed, objects["networks"]):
        network.remove()
        removed["networks"].append(network.name)
    for volume in filter(doomed, objects["volumes"]):
        volume.remove(force=True)
        removed["volumes"].append(volume.name)
    if images:
        removed["images"] = _remove_images(client)
    report = PruneReport(runs=tuple(sorted(dead_runs)), kept_live_runs=tuple(sorted(live_runs)),
                         **{k: tuple(v) for k, v in removed.items()})
    log.info("prune: %s", report.summary())
    return report


def _remove_images(client: "docker.DockerClient") -> list[str]:
    """The built Kafka and JRE images (rebuilt on the next run; the .deb cache stays)."""
    import docker

    removed = []
    # Each layer sits on the next one: class-data archives on Kafka on the JRE.
    for role in (CDS_IMAGE_ROLE, "kafka", "jre"):
        for image in client.images.list(filters={"label": f"{IMAGE_LABEL}={role}"}):
            for tag in image.tags or [image.id]:
                try:
                    client.images.remove(tag, noprune=False)
                    removed.append(tag)
                except docker.errors.APIError as exc:  # in use by a live run's container
                    log.warning("kept image %s: %s", tag, exc.explanation or exc)
    return removed
