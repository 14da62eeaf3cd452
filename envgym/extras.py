"""The one way envgym says "this needs the X extra".

`import envgym` needs only gymnasium, pettingzoo and numpy; servers, clients,
trainers and some backends import their packages when they are first used, and
a missing one is reported the same way everywhere::

    from envgym.extras import require

    httpx = require("httpx", extra="remote", purpose="RemoteEnv")
    # MissingExtra: RemoteEnv needs the 'httpx' package, which is not installed;
    # install the remote extra: pip install 'envgym[remote]'

Each extra named here is one of pyproject.toml's optional-dependencies (a test
checks every name used in the code).

Imports only the standard library.
"""

from __future__ import annotations

import importlib
from importlib.util import find_spec
from types import ModuleType

__all__ = ["MissingExtra", "install_hint", "missing_extra", "require", "require_all"]


class MissingExtra(ModuleNotFoundError):
    """A package of one of envgym's extras is not installed; the message says which
    extra to install. `extra` is its name, `module` the package that is missing."""

    def __init__(self, message: str, *, module: str, extra: str) -> None:
        super().__init__(message, name=module)
        self.module = module
        self.extra = extra


def install_hint(extra: str) -> str:
    """The command that installs `extra`: ``pip install 'envgym[EXTRA]'``."""
    return f"pip install 'envgym[{extra}]'"


def missing_extra(
    modules: str | list[str],
    *,
    extra: str,
    purpose: str,
    note: str = "",
    error: type[MissingExtra] = MissingExtra,
) -> MissingExtra:
    """The `MissingExtra` to raise when `purpose` cannot import `modules` (one name
    or several); `note` is added after the install command (an alternative, say);
    `error` is a subclass of `MissingExtra` to raise instead."""
    names = [modules] if isinstance(modules, str) else list(modules)
    if len(names) == 1:
        what = f"the {names[0]!r} package, which is not installed"
    else:
        listed = ", ".join(repr(n) for n in names[:-1]) + f" and {names[-1]!r}"
        what = f"the {listed} packages, which are not installed"
    message = f"{purpose} needs {what}; install the {extra} extra: {install_hint(extra)}"
    return error(message + (f" {note}" if note else ""), module=names[0], extra=extra)


def require(
    module: str,
    *,
    extra: str,
    purpose: str,
    note: str = "",
    error: type[MissingExtra] = MissingExtra,
) -> ModuleType:
    """The module `module`, imported; if it (or a package it needs) is missing, a
    `MissingExtra` (or `error`) that says `purpose` needs it and how to install `extra`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(module, extra=extra, purpose=purpose, note=note, error=error) from exc


def require_all(modules: list[str], *, extra: str, purpose: str, note: str = "") -> None:
    """Check, without importing them, that every one of `modules` is installed; a
    `MissingExtra` naming those that are not (for commands that hand the imports to
    another process or import them much later)."""
    absent = [name for name in modules if find_spec(name) is None]
    if absent:
        raise missing_extra(absent, extra=extra, purpose=purpose, note=note)
