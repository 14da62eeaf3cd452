"""The runtime image: envgym and its server's dependencies, for ``gym.make(id, backend="docker")``.

`DockerEnv` and `ContainerServer` (`envgym.remote.container`) run ``envgym
serve`` in containers of this image. It is built ``FROM`` the sandbox's base
image (`envgym.sandbox.images`, so build that first: ``envgym sandbox build``)
with ``containers/Dockerfile.runtime`` and ``--network none``: envgym and its
dependencies are pip-installed on the host into the build context, and the
build only copies them. The image carries a hash of the envgym source it holds
(`SOURCE_LABEL`), so a container never serves code older than the caller's.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from envgym.sandbox.base import SandboxError
from envgym.sandbox.images import (
    BASE_IMAGE,
    Progress,
    build_image,
    docker_client,
    image_problem,
    print_progress,
)

__all__ = [
    "RUNTIME_IMAGE",
    "RUNTIME_PACKAGES",
    "SOURCE_LABEL",
    "build_runtime_image",
    "runtime_image_problem",
    "source_hash",
]

RUNTIME_IMAGE = "envgym-runtime:latest"
#: Image label holding the hash of the envgym source the runtime image carries.
SOURCE_LABEL = "envgym.source"
#: Python packages the runtime image needs beyond envgym's own, to serve envs.
RUNTIME_PACKAGES = (
    "fastapi>=0.110",
    "uvicorn>=0.30",
    "websockets>=13",
    "pydantic>=2.5",
    "bm25s>=0.2",
    "httpx>=0.25",
)

#: envgym's package folder (envgym/), found without importing the package.
_ENVGYM_DIR = Path(__file__).resolve().parents[1]


def _envs_dir() -> Path:
    """The folder ``envgym.envs`` is installed from (envs/ in the repo)."""
    import envgym.envs as envs_package

    return Path(envs_package.__file__).resolve().parent


def source_hash() -> str:
    """A hash of envgym's Python source (envgym/ and the mapped envs/) as installed here."""
    digest = hashlib.sha256()
    for root in (_ENVGYM_DIR, _envs_dir()):
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            digest.update(str(path.relative_to(root.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def runtime_image_problem(client, image: str = RUNTIME_IMAGE) -> str | None:
    """Why `image` cannot serve this envgym's envs, or None when it can.

    `RUNTIME_IMAGE` must hold this very source (`SOURCE_LABEL`); an image
    given by another name is taken as it is.
    """
    problem = image_problem(client, image)
    if problem is not None or image != RUNTIME_IMAGE:
        return problem
    if client.images.get(image).labels.get(SOURCE_LABEL) != source_hash():
        return (
            f"image {image} holds a different envgym than this one; run `envgym sandbox build` "
            "to put this envgym in it"
        )
    return None


def _project_root() -> Path | None:
    root = _ENVGYM_DIR.parent
    return root if (root / "pyproject.toml").exists() and (root / "envs").is_dir() else None


def _install_envgym(site: Path) -> None:
    """pip-install envgym and the server's dependencies into `site`."""
    root = _project_root()
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(site)]
    if root is not None:
        subprocess.run([*pip, str(root), *RUNTIME_PACKAGES], check=True)
        return
    # An installed envgym: copy the package, install its dependencies.
    shutil.copytree(_ENVGYM_DIR, site / "envgym")
    subprocess.run([*pip, "gymnasium>=1.0,<2", "pettingzoo>=1.24", *RUNTIME_PACKAGES], check=True)


def build_runtime_image(progress: Progress = print_progress) -> None:
    """Build `RUNTIME_IMAGE` from this envgym, on the base image ``envgym sandbox build`` made."""
    import docker

    client = docker_client()
    try:
        client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        raise SandboxError(
            f"the runtime image is built on {BASE_IMAGE}, which is not built; run "
            "`envgym sandbox build`"
        ) from None
    progress(f"runtime image {RUNTIME_IMAGE}: pip install envgym into the build context")
    with tempfile.TemporaryDirectory(prefix="envgym-build-") as tmp:
        context = Path(tmp)
        _install_envgym(context / "site")
        build_image(
            client, "Dockerfile.runtime", context, RUNTIME_IMAGE, {SOURCE_LABEL: source_hash()}
        )
    progress(f"image ready: {RUNTIME_IMAGE}")
