"""Sandbox images, built from Debian packages with no container registry.

1. ``containers/build-rootfs.sh`` debootstraps a minimal Debian with python3
   and numpy into a cache folder. bubblewrap uses that folder as its system.
2. The folder is imported as the base image (``docker import``).
3. ``containers/Dockerfile.sandbox`` builds ``FROM`` the base with
   ``--network none``; it only copies the job runner in.

The runtime image (envgym itself, for ``gym.make(id, backend="docker")``) is
built ``FROM`` the same base by `envgym.remote.image`, with `build_image`.
This module imports nothing of envgym beyond the sandbox package.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from envgym.extras import missing_extra
from envgym.sandbox.base import RUNNER_FILES, SandboxError

BASE_IMAGE = "envgym-base:latest"
SANDBOX_IMAGE = "envgym-sandbox:latest"
#: Image label holding the hash of the runner the image carries.
RUNNER_LABEL = "envgym.runner"
#: Label on every container envgym starts; `envgym sandbox gc` removes them.
CONTAINER_LABEL = "envgym.sandbox"
OWNER_PID_LABEL = "envgym.owner-pid"
OWNER_HOST_LABEL = "envgym.owner-host"


def containers_dir() -> Path:
    """Build files: the repo's containers/ folder, or the installed copy."""
    for candidate in (
        Path(__file__).resolve().parents[2] / "containers",
        Path(__file__).resolve().parents[1] / "containers",
    ):
        if (candidate / "build-rootfs.sh").exists():
            return candidate
    raise SandboxError("envgym's containers/ build files are missing from this install")


def cache_dir() -> Path:
    return Path(os.environ.get("ENVGYM_CACHE", Path.home() / ".cache" / "envgym"))


def rootfs_path() -> Path:
    """The root filesystem `envgym sandbox build` makes (for bwrap and the images)."""
    override = os.environ.get("ENVGYM_SANDBOX_ROOTFS")
    if override:
        return Path(override)
    if os.geteuid() == 0 and "ENVGYM_CACHE" not in os.environ:
        # bwrap sandboxes run as an unprivileged uid, which cannot enter /root.
        return Path("/var/lib/envgym/rootfs")
    return cache_dir() / "sandbox" / "rootfs"


#: File in the root filesystem holding the hash of the build script that made it.
ROOTFS_STAMP = Path("etc") / "envgym-rootfs"
#: Base image label holding the same hash.
ROOTFS_LABEL = "envgym.rootfs"


def rootfs_recipe_hash() -> str:
    """Hash of ``containers/build-rootfs.sh``: a root filesystem made by another
    version of the script (other packages) is rebuilt."""
    return hashlib.sha256((containers_dir() / "build-rootfs.sh").read_bytes()).hexdigest()[:16]


def rootfs_problem(rootfs: Path | None = None) -> str | None:
    """Why the root filesystem can't be used as it is, or None when it can."""
    rootfs = rootfs or rootfs_path()
    if not (rootfs / "usr" / "bin" / "python3").exists():
        return f"not built at {rootfs}; run `envgym sandbox build`"
    try:
        stamp = (rootfs / ROOTFS_STAMP).read_text().strip()
    except OSError:
        stamp = ""
    if stamp != rootfs_recipe_hash():
        return (
            f"{rootfs} was built by an older containers/build-rootfs.sh (other packages); "
            "run `envgym sandbox build`"
        )
    return None


def runner_hash() -> str:
    digest = hashlib.sha256()
    for path in RUNNER_FILES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def docker_client(timeout: float = 60):
    """A Docker SDK client whose daemon answers, or a clear error."""
    try:
        import docker
    except ImportError as exc:
        missing = missing_extra("docker", extra="docker", purpose="the Docker backend")
        raise SandboxError(str(missing)) from exc
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:
        host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise SandboxError(
            f"DockerUnavailable: no Docker daemon at {host} ({type(exc).__name__}); start one "
            "(as root: dockerd --bridge=none --iptables=false --ip-forward=false, see "
            "containers/README.md) or set ENVGYM_SANDBOX=bwrap"
        ) from exc
    return client


def image_problem(client, image: str) -> str | None:
    """Why ``image`` can't be used as it is, or None when it can."""
    import docker

    try:
        found = client.images.get(image)
    except docker.errors.ImageNotFound:
        return f"image {image} is not built; run `envgym sandbox build`"
    labels = found.labels or {}
    if image == SANDBOX_IMAGE and labels.get(RUNNER_LABEL) != runner_hash():
        return f"image {image} carries an older job runner; run `envgym sandbox build`"
    if image == BASE_IMAGE and labels.get(ROOTFS_LABEL) != rootfs_recipe_hash():
        return (
            f"image {image} was made from an older root filesystem (other packages); "
            "run `envgym sandbox build`"
        )
    return None


Progress = Callable[[str], None]


def print_progress(message: str) -> None:
    """The default `Progress`: one line on stderr."""
    print(message, file=sys.stderr, flush=True)


def build_rootfs(dest: Path | None = None, progress: Progress = print_progress) -> Path:
    dest = dest or rootfs_path()
    if os.geteuid() != 0:
        raise SandboxError("building the root filesystem needs root (debootstrap); run as root")
    if shutil.which("debootstrap") is None:
        raise SandboxError("debootstrap is not installed: apt-get install debootstrap")
    dest.parent.mkdir(parents=True, exist_ok=True)
    progress(f"[1/3] root filesystem: debootstrap into {dest}")
    subprocess.run(["sh", str(containers_dir() / "build-rootfs.sh"), str(dest)], check=True)
    (dest / ROOTFS_STAMP).write_text(rootfs_recipe_hash() + "\n")
    return dest


def _import_base(rootfs: Path, progress: Progress) -> None:
    progress(f"[2/3] base image {BASE_IMAGE}: docker import of {rootfs}")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        subprocess.run(
            ["docker", "import", "--change", f"LABEL {ROOTFS_LABEL}={rootfs_recipe_hash()}"]
            + ["-", BASE_IMAGE],
            stdin=tar.stdout,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    finally:
        tar.stdout.close()
        tar.wait()


def build_image(client, dockerfile: str, context: Path, tag: str, labels: dict) -> None:
    """``docker build`` of ``containers/<dockerfile>`` ``FROM`` the base image, in
    `context` (a folder holding what the Dockerfile copies), with no network."""
    shutil.copy(containers_dir() / dockerfile, context / dockerfile)
    try:
        client.images.build(
            path=str(context),
            dockerfile=dockerfile,
            tag=tag,
            network_mode="none",
            labels=labels,
            buildargs={"BASE": BASE_IMAGE},
            rm=True,
            forcerm=True,
        )
    except Exception as exc:
        log = getattr(exc, "build_log", None) or []
        lines = "".join(str(entry.get("stream", entry)) for entry in log)[-2000:]
        raise SandboxError(f"docker build of {tag} failed: {exc}\n{lines}") from exc


def build_images(rebuild_rootfs: bool = False, progress: Progress = print_progress) -> None:
    """Build whatever is missing: the root filesystem, the base and the sandbox image
    (the runtime image is `envgym.remote.image.build_runtime_image`'s, built after)."""
    client = docker_client()
    rootfs = rootfs_path()
    stale = rootfs_problem(rootfs)
    fresh_rootfs = rebuild_rootfs or stale is not None
    if fresh_rootfs:
        if stale and rebuild_rootfs is False:
            progress(f"root filesystem: {stale.split(';')[0]}")
        build_rootfs(rootfs, progress)
    else:
        progress(f"[1/3] root filesystem: {rootfs} is current (--rebuild to redo it)")
    if fresh_rootfs or image_problem(client, BASE_IMAGE) is not None:
        _import_base(rootfs, progress)
    else:
        progress(f"[2/3] base image {BASE_IMAGE} exists")
    progress(f"[3/3] sandbox image {SANDBOX_IMAGE} (docker build --network none)")
    with tempfile.TemporaryDirectory(prefix="envgym-build-") as tmp:
        context = Path(tmp)
        for path in RUNNER_FILES:
            shutil.copy(path, context / path.name)
        build_image(
            client, "Dockerfile.sandbox", context, SANDBOX_IMAGE, {RUNNER_LABEL: runner_hash()}
        )
    progress("images ready: " + ", ".join((BASE_IMAGE, SANDBOX_IMAGE)))
