"""The Kafka image both container roles (ZooKeeper and broker) run, built with no registry.

Two layers, each tagged by a hash of what went into it and reused when the tag exists (a third,
the class-data archives, is :mod:`harness.containers.cds`):

1. ``kafka-chaos-jre:<hash>`` — a JRE root filesystem assembled from Debian packages
   (``apt-get download`` + ``dpkg -x`` of openjdk-17-jre-headless, libfaketime and their
   dependency closure) and ``docker import``-ed, because no image registry (Docker Hub) is
   reachable.  libfaketime is there for the clock faults (:mod:`harness.containers.clocks`: only
   a Kafka node of a fake-clock cluster preloads it); the image's ``FAKETIME_LABEL`` says where it
   is.  Users who can pull pass ``base_image`` (``--base-image``) instead; it must have ``java``
   on its PATH (and libfaketime, labelled so, for clock faults).
2. ``kafka-chaos-kafka:<kafka version>-<hash>`` — the distribution's flat ``libs_dir`` (the very
   jars the local launcher puts on its classpath) and a console logging configuration on top: this
   package's ``log4j.properties`` up to 3.9, ``log4j2.properties`` from 4.0 (KIP-653), the release's
   choice being :func:`harness.distribution.log4j_config_name`'s, as on the local launcher
   (:func:`logging_config`).

No shell is needed in the image: containers run ``java -cp /opt/kafka/libs/* ...`` directly.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_chaos.harness import jmx_exporter
from kafka_chaos.harness.distribution import log4j_config_name
from kafka_chaos.harness.errors import HarnessError

if TYPE_CHECKING:
    import docker

    from kafka_chaos.harness.distribution import KafkaDistribution

log = logging.getLogger(__name__)

JRE_PACKAGE = "openjdk-17-jre-headless"
FAKETIME_PACKAGE = "libfaketime"  # 0.9.10 on Debian 12: libc6 only, which the JRE has already
IMAGE_PACKAGES = (JRE_PACKAGE, FAKETIME_PACKAGE)
# The image label naming libfaketime's path in it (docker build keeps a base image's labels, so
# the Kafka and class-data layers carry it too).
FAKETIME_LABEL = "kafka-chaos.faketime"
JRE_REPOSITORY = "kafka-chaos-jre"
KAFKA_REPOSITORY = "kafka-chaos-kafka"
KAFKA_HOME = "/opt/kafka"
LIBS_DIR = f"{KAFKA_HOME}/libs"
# The brokers' JMX exporter agent and its configuration (harness.jmx_exporter), off the class path.
METRICS_DIR = f"{KAFKA_HOME}/metrics"
METRICS_AGENT = f"{METRICS_DIR}/jmx_prometheus_javaagent.jar"
METRICS_CONFIG = f"{METRICS_DIR}/jmx_exporter.yaml"
IMAGE_LABEL = "kafka-chaos.image"  # on every layer, so `prune --images` finds them
CDS_IMAGE_ROLE = "kafka-cds"  # IMAGE_LABEL of the class-data layer (harness.containers.cds)

# Bump when the way the root filesystem is assembled changes, so old tags are not reused.
_JRE_RECIPE = "jre-rootfs-v2"  # v2: libfaketime and its label
_KAFKA_RECIPE = "kafka-layer-v2"  # v2: the JMX exporter agent

# Packages the JRE "Depends" on only for their maintainer scripts (ca-certificates-java builds
# the cacerts store, java-common and util-linux serve postinst), which `dpkg -x` never runs;
# leaving them out drops debconf, perl, openssl and friends from the closure.
_MAINTAINER_SCRIPT_ONLY = frozenset({
    "ca-certificates-java", "java-common", "util-linux", "debconf", "cdebconf", "dpkg",
    "install-info", "sysvinit-utils", "lsb-base", "tar", "ca-certificates", "openssl",
})

_PASSWD = "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
_GROUP = "root:x:0:\nnogroup:x:65534:\n"


@dataclass(frozen=True)
class DebPackage:
    name: str
    version: str

    @property
    def pin(self) -> str:
        return f"{self.name}={self.version}"


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    reused: bool  # True when the tag existed and nothing was built
    seconds: float


def dpkg_architecture() -> str:
    return _run(["dpkg", "--print-architecture"]).strip()


def java_home_in_image(arch: str | None = None) -> str:
    return f"/usr/lib/jvm/java-17-openjdk-{arch or dpkg_architecture()}"


def resolve_jre_packages(roots: tuple[str, ...] = IMAGE_PACKAGES) -> tuple[DebPackage, ...]:
    """The runtime ``Depends``/``Pre-Depends`` closure of ``roots`` with candidate versions.

    Only the first alternative of an ``a | b`` group and the first provider of a virtual
    package are followed — what apt itself would pick on an empty system.  The answer is
    cached until apt's package cache changes (``apt-get update``): asking apt takes seconds.
    """
    cache_file = _cache_root() / "jre-packages.json"
    key = f"{_JRE_RECIPE}:{','.join(roots)}:{_apt_cache_stamp()}"
    try:
        cached = json.loads(cache_file.read_text())
        if cached["key"] == key:
            return tuple(DebPackage(name, version) for name, version in cached["packages"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    packages = _resolve_jre_packages(roots)
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    cache_file.write_text(json.dumps({"key": key, "packages": [[p.name, p.version] for p in packages]}))
    return packages


def _apt_cache_stamp() -> str:
    try:
        stat = Path("/var/cache/apt/pkgcache.bin").stat()
    except OSError:
        return "no-pkgcache"
    return f"{stat.st_mtime_ns}:{stat.st_size}"


def _resolve_jre_packages(roots: tuple[str, ...]) -> tuple[DebPackage, ...]:
    wanted: set[str] = set()
    frontier = sorted(roots)
    while frontier:
        wanted.update(frontier)
        output = _run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
                       "--no-breaks", "--no-replaces", "--no-enhances", *frontier])
        discovered = {dep for dep in _first_alternatives(output) if dep not in _MAINTAINER_SCRIPT_ONLY}
        frontier = sorted(discovered - wanted)
    versions = _candidate_versions(sorted(wanted))
    return tuple(DebPackage(name, versions[name]) for name in sorted(wanted))


def _first_alternatives(apt_cache_depends_output: str) -> set[str]:
    """Parse ``apt-cache depends`` output: a line starting with ``|`` continues an OR group."""
    chosen: set[str] = set()
    in_or_group = False
    virtual_pending = False
    for line in apt_cache_depends_output.splitlines():
        if not line.startswith(" "):  # a package header
            in_or_group = virtual_pending = False
            continue
        stripped = line.strip()
        if stripped.startswith(("Depends:", "PreDepends:", "|Depends:", "|PreDepends:")):
            name = stripped.split(":", 1)[1].strip()
            take = not in_or_group
            in_or_group = stripped.startswith("|")
            virtual_pending = False
            if take:
                if name.startswith("<"):
                    virtual_pending = True  # providers follow, indented deeper
                else:
                    chosen.add(name.split(":")[0])
        elif virtual_pending and line.startswith("    ") and not stripped.endswith(":"):
            chosen.add(stripped.split(":")[0])
            virtual_pending = False
        else:
            virtual_pending = False
    return chosen


def _candidate_versions(names: list[str]) -> dict[str, str]:
    versions: dict[str, str] = {}
    current = None
    for line in _run(["apt-cache", "policy", *names]).splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1].split(":")[0]
        elif current and line.strip().startswith("Candidate:"):
            versions[current] = line.split(":", 1)[1].strip()
    missing = [n for n in names if versions.get(n, "(none)") == "(none)"]
    if missing:
        raise HarnessError(f"apt has no candidate for {', '.join(missing)}: run apt-get update")
    return versions


def jre_image_tag(packages: tuple[DebPackage, ...]) -> str:
    digest = hashlib.sha256("\n".join([_JRE_RECIPE, *(p.pin for p in packages)]).encode())
    return f"{JRE_REPOSITORY}:{digest.hexdigest()[:16]}"


def ensure_jre_image(client: "docker.DockerClient", cache_dir: Path | None = None) -> BuiltImage:
    """``kafka-chaos-jre:<hash>``, assembled from Debian packages unless the tag exists."""
    started = time.monotonic()
    try:
        packages = resolve_jre_packages()
    except HarnessError:
        # No apt here (not Debian) or no package lists: a JRE image built earlier still does.
        existing = _newest_image(client, f"{IMAGE_LABEL}=jre")
        if existing is None:
            raise
        log.warning("cannot ask apt for the JRE packages; reusing %s", existing)
        return BuiltImage(existing, reused=True, seconds=time.monotonic() - started)
    tag = jre_image_tag(packages)
    if image_exists(client, tag):
        return BuiltImage(tag, reused=True, seconds=time.monotonic() - started)
    log.info("assembling %s from %d Debian packages", tag, len(packages))
    debs = download_packages(packages, cache_dir or _cache_root() / "debs")
    arch = dpkg_architecture()
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        faketime = assemble_rootfs(debs, rootfs, arch)
        archive = Path(tmp) / "rootfs.tar"
        _run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(archive), "."])
        java_home = java_home_in_image(arch)
        client.api.import_image_from_file(
            str(archive), repository=tag.split(":")[0], tag=tag.split(":")[1],
            changes=[f"ENV PATH={java_home}/bin:/usr/bin:/bin", f"ENV JAVA_HOME={java_home}",
                     f"LABEL {IMAGE_LABEL}=jre", f"LABEL {FAKETIME_LABEL}={faketime}"],
        )
    if not image_exists(client, tag):
        raise HarnessError(f"docker import did not produce {tag}")
    return BuiltImage(tag, reused=False, seconds=time.monotonic() - started)


def download_packages(packages: tuple[DebPackage, ...], cache_dir: Path) -> list[Path]:
    """``apt-get download`` each pinned version once into ``cache_dir``; return the .deb paths."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    wanted = {p: _deb_glob(p) for p in packages}
    missing = [p for p, pattern in wanted.items() if not list(cache_dir.glob(pattern))]
    if missing:
        log.info("apt-get download %d packages into %s", len(missing), cache_dir)
        _run(["apt-get", "download", "-q", *(p.pin for p in missing)], cwd=cache_dir)
    debs = []
    for package, pattern in wanted.items():
        found = sorted(cache_dir.glob(pattern))
        if not found:
            raise HarnessError(f"apt-get download gave no file for {package.pin}")
        debs.append(found[0])
    return debs


def _deb_glob(package: DebPackage) -> str:
    # apt-get names files name_version_arch.deb with ':' in the version escaped as %3a.
    return f"{package.name}_{package.version.replace(':', '%3a')}_*.deb"


def assemble_rootfs(debs: list[Path], rootfs: Path, arch: str) -> str:
    """Unpack the packages and add what their (never run) maintainer scripts would have; where
    libfaketime is in the image."""
    rootfs.mkdir(parents=True)
    for deb in debs:
        _run(["dpkg-deb", "-x", str(deb), str(rootfs)])
    java_home = java_home_in_image(arch)
    if not (rootfs / java_home.lstrip("/") / "bin" / "java").exists():
        raise HarnessError(f"{JRE_PACKAGE} unpacked without {java_home}/bin/java")
    # update-alternatives would create /usr/bin/java; we set PATH too, but keep the usual path.
    (rootfs / "usr/bin").mkdir(parents=True, exist_ok=True)
    _symlink(f"{java_home}/bin/java", rootfs / "usr/bin/java")
    for directory in ("tmp", "var/tmp"):
        (rootfs / directory).mkdir(parents=True, exist_ok=True)
        (rootfs / directory).chmod(0o1777)  # the JVM keeps hsperfdata in /tmp
    for directory in ("proc", "sys", "dev", "root", "etc", "opt"):
        (rootfs / directory).mkdir(parents=True, exist_ok=True)
    (rootfs / "etc/passwd").write_text(_PASSWD)
    (rootfs / "etc/group").write_text(_GROUP)
    (rootfs / "etc/nsswitch.conf").write_text("passwd: files\ngroup: files\nhosts: files dns\n")
    # Debian's Pre-Depends-less unpack leaves /lib64 and friends as real dirs, which is fine;
    # the multiarch library dirs are in ld.so's built-in search path, so no ld.so.cache needed.
    return faketime_in_rootfs(rootfs)


def faketime_in_rootfs(rootfs: Path) -> str:
    """libfaketime's path inside the image (Debian puts it under the multiarch directory)."""
    found = sorted(rootfs.glob("usr/lib/*/faketime/libfaketime.so.1"))
    if not found:
        raise HarnessError(f"{FAKETIME_PACKAGE} unpacked without usr/lib/<arch>/faketime/libfaketime.so.1")
    return "/" + found[0].relative_to(rootfs).as_posix()


def faketime_of_image(client: "docker.DockerClient", image: str) -> str | None:
    """libfaketime's path in ``image`` (its ``FAKETIME_LABEL``), None when it has none (a
    ``--base-image`` not labelled so, or a JRE layer from before libfaketime)."""
    labels = client.images.get(image).labels or {}
    path = labels.get(FAKETIME_LABEL)
    return str(path) if path else None


def _symlink(target: str, link: Path) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def logging_config(kafka_version: str) -> str:
    """Pure: where the image of ``kafka_version`` keeps its nodes' console logging configuration:
    ``config/log4j.properties`` up to 3.9, ``config/log4j2.properties`` from 4.0 (the local
    launcher's per-release choice, :func:`harness.distribution.log4j_config_name`); the JVM flag
    naming it is :func:`harness.distribution.log4j_option`'s (:func:`harness.containers.nodes.java_command`)."""
    return f"{KAFKA_HOME}/config/{log4j_config_name(kafka_version)}"


def kafka_image_tag(distribution: "KafkaDistribution", base_image_id: str) -> str:
    digest = hashlib.sha256()
    version = distribution.version
    for part in (_KAFKA_RECIPE, base_image_id, _dockerfile(base_image_id, version), _log4j_config(version),
                 jmx_exporter.config_text()):
        digest.update(part.encode())
    digest.update(_file_sha256(jmx_exporter.resolve_agent_jar()))
    for jar in sorted(Path(distribution.libs_dir).glob("*.jar")):
        digest.update(jar.name.encode())
        digest.update(_file_sha256(jar))
    return f"{KAFKA_REPOSITORY}:{distribution.version}-{digest.hexdigest()[:16]}"


def ensure_kafka_image(distribution: "KafkaDistribution", *, base_image: str | None = None,
                       client: "docker.DockerClient | None" = None) -> BuiltImage:
    """The image ZooKeeper and the brokers run; built once per Kafka version and content."""
    client = client or docker_client()
    started = time.monotonic()
    if base_image is None:
        base_image = ensure_jre_image(client).tag
    base_id = _image_id(client, base_image)
    tag = kafka_image_tag(distribution, base_id)
    if image_exists(client, tag):
        return BuiltImage(tag, reused=True, seconds=time.monotonic() - started)
    jars = sorted(Path(distribution.libs_dir).glob("*.jar"))
    if not jars:
        raise HarnessError(f"no jars in {distribution.libs_dir}")
    log.info("building %s on %s (%d jars)", tag, base_image, len(jars))
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-image-") as context:
        ctx = Path(context)
        (ctx / "libs").mkdir()
        for jar in jars:
            _link_or_copy(jar, ctx / "libs" / jar.name)
        (ctx / log4j_config_name(distribution.version)).write_text(_log4j_config(distribution.version))
        (ctx / "metrics").mkdir()
        _link_or_copy(jmx_exporter.resolve_agent_jar(), ctx / "metrics" / Path(METRICS_AGENT).name)
        (ctx / "metrics" / Path(METRICS_CONFIG).name).write_text(jmx_exporter.config_text())
        (ctx / "Dockerfile").write_text(_dockerfile(base_image, distribution.version))
        try:
            client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True, pull=False,
                                labels={IMAGE_LABEL: "kafka", "kafka-chaos.kafka-version": distribution.version})
        except Exception as exc:  # docker.errors.BuildError carries the build log
            raise HarnessError(f"building {tag} failed: {exc}") from exc
    return BuiltImage(tag, reused=False, seconds=time.monotonic() - started)


def _dockerfile(base_image: str, kafka_version: str) -> str:
    # No RUN steps: the imported rootfs has no shell. Up to 3.9 the very text of before 4.x ran
    # here, so those releases' tags (a hash of it) and images stay.
    return (f"FROM {base_image}\n"
            f"COPY libs/ {LIBS_DIR}/\n"
            f"COPY {log4j_config_name(kafka_version)} {logging_config(kafka_version)}\n"
            f"COPY metrics/ {METRICS_DIR}/\n"
            f"WORKDIR {KAFKA_HOME}\n")


def _log4j_config(kafka_version: str) -> str:
    return resources.files("kafka_chaos.harness.containers").joinpath(log4j_config_name(kafka_version)).read_text()


def docker_client() -> "docker.DockerClient":
    """A client of the local engine, or a one-line HarnessError saying none answers."""
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        raise HarnessError(f"no Docker engine answers ({exc.__class__.__name__}): "
                           "start dockerd (scripts/install-docker.sh) or use --backend local") from exc
    return client


def docker_available() -> bool:
    try:
        docker_client().close()
    except HarnessError:
        return False
    return True


def image_exists(client: "docker.DockerClient", tag: str) -> bool:
    """Whether the local Docker engine has an image tagged ``tag`` (nothing is pulled: no registry here)."""
    import docker

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def _newest_image(client: "docker.DockerClient", label: str) -> str | None:
    images = [i for i in client.images.list(filters={"label": label}) if i.tags]
    if not images:
        return None
    return str(max(images, key=lambda i: i.attrs.get("Created", "")).tags[0])


def _image_id(client: "docker.DockerClient", name: str) -> str:
    import docker

    try:
        return str(client.images.get(name).id)
    except docker.errors.ImageNotFound:
        raise HarnessError(f"base image {name} is not present locally: `docker pull {name}` first "
                           "(no registry is pulled from here)") from None


def _file_sha256(path: Path) -> bytes:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.digest()


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _cache_root() -> Path:
    from kafka_chaos.harness.distribution import cache_root  # the launcher's cache ($KAFKA_CHAOS_CACHE)

    return cache_root()


def _run(argv: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise HarnessError(f"{argv[0]} not found: building the JRE image needs a Debian host "
                           "(apt-get, dpkg-deb) or --base-image") from None
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()[-1:] or ["no output"]
        raise HarnessError(f"{' '.join(argv[:3])} ... failed: {detail[0]}") from None
    return done.stdout


__all__ = [
    "BuiltImage", "DebPackage", "FAKETIME_LABEL", "IMAGE_LABEL", "JRE_PACKAGE", "KAFKA_HOME", "LIBS_DIR",
    "docker_available", "docker_client", "ensure_jre_image", "ensure_kafka_image", "faketime_of_image", "jre_image_tag",
    "kafka_image_tag", "logging_config", "resolve_jre_packages",
]
