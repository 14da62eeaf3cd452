"""Objects made once per process and shared by every env in it.

Worlds, catalogues, corpora and search indexes are large and slow to make, so
the envs that need them (Search, Shop) keep one per key in a `PerProcess`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["PerProcess"]

T = TypeVar("T")


class PerProcess:
    """One object per key in this process, made by the first `get` that asks.

    The lock is held while an object is made, so two threads asking for the
    same key at once get the same object and it is made once.
    """

    def __init__(self) -> None:
        self._objects: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        """The object for `key`, made by `make()` when there is none yet."""
        with self._lock:
            if key not in self._objects:
                self._objects[key] = make()
            return self._objects[key]
