"""Test-session set-up: every cache goes to a temporary folder, never ~/.cache.

The variables are set when pytest imports this file, before any test module is
collected, and every subprocess a test starts inherits them with os.environ.

- ``ENVGYM_CACHE``: the Search index and world cache (`envgym/retrieval/base.py`
  ``default_cache_dir()``, which `world.load_world` shares) and the sandbox
  cache (`envgym/sandbox/images.py` ``cache_dir()``).
- ``XDG_CACHE_HOME``: what third-party code caches (Hugging Face, torch, pip).
- ``ENVGYM_SANDBOX_ROOTFS``: pinned to where the sandbox root filesystem was
  found before ``ENVGYM_CACHE`` moved (as root that is /var/lib/envgym/rootfs,
  which a set ``ENVGYM_CACHE`` would otherwise move into the empty temporary
  cache), so the sandbox tests keep using the one `envgym sandbox build` made.
The browser tests' `driver` fixture is here too: headless Chromium (Debian's
``chromium`` and ``chromium-driver``) driven by selenium, with the driver's path
given so selenium-manager never looks for (or downloads) one. It skips with the
reason when the browser, its driver or selenium is missing, unless
``ENVGYM_REQUIRE_BROWSER=1`` (as ``.ci/run`` sets), which makes that a failure.

- ``ENVGYM_WEBSHOP_DATA``: small files in WebShop's format (`webshop_files.py`),
  so ``envgym/WebShop-v0`` plays in every test that goes over all ids, and never
  reads a real download in the user's home.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from envgym.sandbox.images import rootfs_path

os.environ.setdefault("ENVGYM_SANDBOX_ROOTFS", str(rootfs_path()))

_CACHE = tempfile.mkdtemp(prefix="envgym-test-cache-")
os.environ["ENVGYM_CACHE"] = _CACHE
os.environ["XDG_CACHE_HOME"] = os.path.join(_CACHE, "xdg")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

from webshop_files import write_webshop_files  # noqa: E402 - after the cache moved

os.environ["ENVGYM_WEBSHOP_DATA"] = str(
    write_webshop_files(Path(_CACHE) / "webshop-data", num_products=400)
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def browser_missing() -> str | None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install 'envgym[dev]')")
    if not missing:
        return None
    return (
        f"no headless browser here: {', '.join(missing)} missing; install Debian's chromium "
        "and chromium-driver (apt-get install chromium chromium-driver) and selenium"
    )


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory):
    why = browser_missing()
    if why is not None:
        if os.environ.get("ENVGYM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"ENVGYM_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tmp_path_factory.mktemp("chromium-profile")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    # The driver's path is given, so selenium-manager never looks for (or downloads) one.
    browser = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    browser.set_page_load_timeout(60)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``sweep`` (a sweep over many seeds, minutes each) run only
    with ``ENVGYM_SWEEPS=1``: CI and ``scripts/test.sh`` skip them, with the reason."""
    if os.environ.get("ENVGYM_SWEEPS") == "1":
        return
    skip = pytest.mark.skip(reason="a sweep over many seeds (minutes): run with ENVGYM_SWEEPS=1")
    for item in items:
        if "sweep" in item.keywords:
            item.add_marker(skip)
