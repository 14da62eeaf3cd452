"""Which sandbox backends the tests can use here, and why a skipped one was skipped."""

from __future__ import annotations

import os

import pytest

from envgym.sandbox import _bwrap_ready, _docker_ready

DOCKER_HOWTO = (
    "Docker tests need a daemon and the images: as root, apt-get install docker.io debootstrap; "
    "dockerd --bridge=none --iptables=false --ip-forward=false &; envgym sandbox build "
    "(.ci/run does all of this)"
)


def require_backend(backend: str) -> None:
    """Skip (or, with ENVGYM_REQUIRE_DOCKER=1 as in CI, fail) when ``backend`` can't run."""
    if backend == "docker":
        problem = _docker_ready()
        if problem:
            message = f"{problem}. {DOCKER_HOWTO}"
            if os.environ.get("ENVGYM_REQUIRE_DOCKER") == "1":
                pytest.fail(message)
            pytest.skip(message)
    elif backend == "bwrap":
        problem = _bwrap_ready()
        if problem:
            pytest.skip(problem)


def backend_params(backends: tuple[str, ...]) -> list:
    return [
        pytest.param(b, marks=[pytest.mark.docker] if b == "docker" else [], id=b) for b in backends
    ]
