"""Test-session set-up: every cache goes to a temporary folder, never ~/.cache.

The variables are set when pytest imports this file, before any test module is
collected, and every subprocess a test starts inherits them with os.environ.

- ``ENVGYM_CACHE``: the Search index and world cache (`envs/search/retrieval.py`
  ``default_cache_dir()``, which `world.load_world` shares) and the sandbox
  cache (`envgym/sandbox/images.py` ``cache_dir()``).
- ``XDG_CACHE_HOME``: what third-party code caches (Hugging Face, torch, pip).
- ``ENVGYM_SANDBOX_ROOTFS``: pinned to where the sandbox root filesystem was
  found before ``ENVGYM_CACHE`` moved (as root that is /var/lib/envgym/rootfs,
  which a set ``ENVGYM_CACHE`` would otherwise move into the empty temporary
  cache), so the sandbox tests keep using the one `envgym sandbox build` made.
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
