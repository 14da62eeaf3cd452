"""`envgym.extras`: one message for "this needs the X extra", naming extras that exist."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from envgym.extras import MissingExtra, require, require_all

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
)
# `pip install 'envgym[a,b]'` in a message or a docstring.
INSTALL = re.compile(r"envgym\[([a-z0-9_,\- ]+)\]")
HELPERS = {"require", "require_all", "missing_extra", "http_client"}


def _sources() -> list[Path]:
    return sorted(
        path
        for folder in ("envgym", "envs", "trainers", "leaderboard")
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def _extras_named(path: Path) -> set[str]:
    """The extras `path` names: the helpers' ``extra="..."`` arguments and
    ``envgym[...]`` texts."""
    text = path.read_text()
    named = {name.strip() for group in INSTALL.findall(text) for name in group.split(",")}
    for node in ast.walk(ast.parse(text)):
        func = getattr(node, "func", None)
        name = getattr(func, "id", getattr(func, "attr", None))
        if isinstance(node, ast.Call) and name in HELPERS:
            for keyword in node.keywords:
                if keyword.arg == "extra" and isinstance(keyword.value, ast.Constant):
                    named.add(keyword.value.value)
    return named - {""}


def test_every_extra_the_code_names_is_in_pyproject():
    named = {path.relative_to(ROOT).as_posix(): _extras_named(path) for path in _sources()}
    unknown = {where: sorted(names - EXTRAS) for where, names in named.items() if names - EXTRAS}
    assert not unknown, f"extras not in pyproject.toml's optional-dependencies: {unknown}"
    # The scan finds the calls: the helpers are used across the layers.
    assert {"search", "remote", "train", "vllm", "leaderboard"} <= set().union(*named.values())


def test_require_returns_an_installed_module():
    assert require("json", extra="remote", purpose="a test") is sys.modules["json"]


def test_a_missing_package_says_which_extra_to_install():
    with pytest.raises(MissingExtra) as caught:
        require("envgym_no_such_package", extra="remote", purpose="the thing")
    message = str(caught.value)
    assert message == (
        "the thing needs the 'envgym_no_such_package' package, which is not installed; "
        "install the remote extra: pip install 'envgym[remote]'"
    )
    # Code that catches ImportError (or ModuleNotFoundError) still catches it.
    assert isinstance(caught.value, ModuleNotFoundError)
    assert (caught.value.extra, caught.value.module) == ("remote", "envgym_no_such_package")


def test_require_all_names_every_missing_package_without_importing():
    with pytest.raises(MissingExtra, match=r"the 'nope_a' and 'nope_b' packages, which are not"):
        require_all(["json", "nope_a", "nope_b"], extra="train", purpose="training")
    require_all(["json", "csv"], extra="train", purpose="training")  # all there: no error


def test_a_client_without_httpx_says_to_install_the_search_extra():
    # A fresh interpreter where httpx cannot be imported, as on an install without extras.
    code = (
        "import sys; sys.modules['httpx'] = None\n"
        "from envgym.retrieval import RemoteRetriever\n"
        "try:\n"
        "    RemoteRetriever(url='http://127.0.0.1:9').search('q')\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "MissingExtra RemoteRetriever needs the 'httpx' package, which is not installed; "
        "install the search extra: pip install 'envgym[search]'"
    )
