"""The PostgreSQL server the tests use: ``ENVGYM_TEST_POSTGRES_URL``, which
``bash scripts/postgres.sh`` prints (``.ci/run`` exports it). One rule for every
test that needs it: without a URL the test is skipped, or fails where
``ENVGYM_REQUIRE_POSTGRES=1`` (as ``.ci/run`` sets), so CI never passes by
skipping the PostgreSQL cases."""

from __future__ import annotations

import os

import pytest

#: What a parametrized case puts for ``engine=`` to play on the test server;
#: `engine_kwargs` puts the URL in its place when the test runs.
ON_POSTGRES = "the test PostgreSQL server"


def postgres_url() -> str:
    """The server's URL; skips (or fails, see above) the calling test without one."""
    url = os.environ.get("ENVGYM_TEST_POSTGRES_URL")
    if not url:
        why = "ENVGYM_TEST_POSTGRES_URL is not set (start a server with scripts/postgres.sh)"
        if os.environ.get("ENVGYM_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"ENVGYM_REQUIRE_POSTGRES=1 but {why}")
        pytest.skip(why)
    return url


def engine_kwargs(kwargs: dict) -> dict:
    """``kwargs`` with ``engine=ON_POSTGRES`` replaced by the server's URL."""
    if kwargs.get("engine") == ON_POSTGRES:
        return {**kwargs, "engine": postgres_url()}
    return kwargs
