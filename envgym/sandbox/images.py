"""Sandbox images, built from Debian packages with no container registry.

1. ``containers/build-rootfs.sh`` debootstraps a minimal Debian with python3
   and numpy into a cache folder. bubblewrap uses that folder as its system.
2. The folder is imported as the base image (``docker import``).
3. ``containers/Dockerfile.sandbox`` and ``Dockerfile.runtime`` build ``FROM``
   the base with ``--network none``; they only copy (the job runner; envgym and
   its dependencies, installed on the host with pip into the build context).
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

from envgym.sandbox.base import RUNNER_PATH, SandboxError

BASE_IMAGE = "envgym-base:latest"
SANDBOX_IMAGE = "envgym-sandbox:latest"
RUNTIME_IMAGE = "envgym-runtime:latest"
#: Image label holding the hash of the runner the image carries.
RUNNER_LABEL = "envgym.runner"
#: Image label holding the hash of the envgym source the runtime image carries.
SOURCE_LABEL = "envgym.source"
#: Label on every container envgym starts; `envgym sandbox gc` removes them.
CONTAINER_LABEL = "envgym.sandbox"
OWNER_PID_LABEL = "envgym.owner-pid"
OWNER_HOST_LABEL = "envgym.owner-host"
#: Extra Python packages the runtime image needs to serve envs.
RUNTIME_PACKAGES = (
    "fastapi>=0.110",
    "uvicorn>=0.30",
    "websockets>=13",
    "bm25s>=0.2",
    "httpx>=0.25",
)


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


def runner_hash() -> str:
    return hashlib.sha256(RUNNER_PATH.read_bytes()).hexdigest()[:16]


def source_hash() -> str:
    """A hash of envgym's Python source (envgym/ and the mapped envs/) as installed here."""
    import envgym
    import envgym.envs

    digest = hashlib.sha256()
    for root in (Path(envgym.__file__).parent, Path(envgym.envs.__file__).parent):
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            digest.update(str(path.relative_to(root.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def docker_client(timeout: float = 60):
    """A Docker SDK client whose daemon answers, or a clear error."""
    try:
        import docker
    except ImportError as exc:
        raise SandboxError(
            "the Docker backend needs the docker SDK: pip install 'envgym[docker]'"
        ) from exc
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
    if image == SANDBOX_IMAGE and found.labels.get(RUNNER_LABEL) != runner_hash():
        return f"image {image} carries an older job runner; run `envgym sandbox build`"
    if image == RUNTIME_IMAGE and found.labels.get(SOURCE_LABEL) != source_hash():
        return (
            f"image {image} holds a different envgym than this one; run `envgym sandbox build` "
            "to put this envgym in it"
        )
    return None


Progress = Callable[[str], None]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_rootfs(dest: Path | None = None, progress: Progress = _say) -> Path:
    dest = dest or rootfs_path()
    if os.geteuid() != 0:
        raise SandboxError("building the root filesystem needs root (debootstrap); run as root")
    if shutil.which("debootstrap") is None:
        raise SandboxError("debootstrap is not installed: apt-get install debootstrap")
    dest.parent.mkdir(parents=True, exist_ok=True)
    progress(f"[1/4] root filesystem: debootstrap into {dest}")
    subprocess.run(["sh", str(containers_dir() / "build-rootfs.sh"), str(dest)], check=True)
    return dest


def _import_base(rootfs: Path, progress: Progress) -> None:
    progress(f"[2/4] base image {BASE_IMAGE}: docker import of {rootfs}")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        subprocess.run(
            ["docker", "import", "-", BASE_IMAGE],
            stdin=tar.stdout,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    finally:
        tar.stdout.close()
        tar.wait()


def _build(client, dockerfile: str, context: Path, tag: str, labels: dict) -> None:
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


def _project_root() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").exists() and (root / "envs").is_dir() else None


def _install_envgym(site: Path, progress: Progress) -> None:
    """pip-install envgym and the server's dependencies into ``site``."""
    root = _project_root()
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(site)]
    if root is not None:
        subprocess.run([*pip, str(root), *RUNTIME_PACKAGES], check=True)
        return
    # An installed envgym: copy the package, install its dependencies.
    import envgym

    shutil.copytree(Path(envgym.__file__).parent, site / "envgym")
    subprocess.run([*pip, "gymnasium>=1.0,<2", "pettingzoo>=1.24", *RUNTIME_PACKAGES], check=True)


def build_images(
    rebuild_rootfs: bool = False, runtime: bool = True, progress: Progress = _say
) -> None:
    """Build whatever is missing: root filesystem, base, sandbox and runtime images."""
    import docker

    client = docker_client()
    rootfs = rootfs_path()
    fresh_rootfs = rebuild_rootfs or not (rootfs / "usr" / "bin" / "python3").exists()
    if fresh_rootfs:
        build_rootfs(rootfs, progress)
    else:
        progress(f"[1/4] root filesystem: {rootfs} exists (--rebuild to redo it)")
    try:
        client.images.get(BASE_IMAGE)
        have_base = True
    except docker.errors.ImageNotFound:
        have_base = False
    if fresh_rootfs or not have_base:
        _import_base(rootfs, progress)
    else:
        progress(f"[2/4] base image {BASE_IMAGE} exists")
    progress(f"[3/4] sandbox image {SANDBOX_IMAGE} (docker build --network none)")
    with tempfile.TemporaryDirectory(prefix="envgym-build-") as tmp:
        context = Path(tmp)
        shutil.copy(RUNNER_PATH, context / "runner.py")
        _build(client, "Dockerfile.sandbox", context, SANDBOX_IMAGE, {RUNNER_LABEL: runner_hash()})
    if not runtime:
        return
    progress(f"[4/4] runtime image {RUNTIME_IMAGE}: pip install envgym into the build context")
    with tempfile.TemporaryDirectory(prefix="envgym-build-") as tmp:
        context = Path(tmp)
        _install_envgym(context / "site", progress)
        _build(client, "Dockerfile.runtime", context, RUNTIME_IMAGE, {SOURCE_LABEL: source_hash()})
    progress("images ready: " + ", ".join((BASE_IMAGE, SANDBOX_IMAGE, RUNTIME_IMAGE)))
