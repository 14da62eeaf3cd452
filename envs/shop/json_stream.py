"""Reading a huge JSON file one top-level item at a time (WebShop's full products
file is several gigabytes): `JsonStream` yields the items of a top-level list or
the members of a top-level object, hashing and counting the bytes as it reads."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["JsonStream"]

_CHUNK = 1 << 20
_MAX_RECORD = 64 << 20  # a single record this long means a damaged file, not a big product


class JsonStream:
    """The items of a top-level JSON list, or the members of a top-level object, read
    one at a time, so a multi-gigabyte file never sits in memory as one document."""

    _decoder = json.JSONDecoder()

    def __init__(
        self,
        path: Path,
        hasher: Any,
        progress: Callable[..., None],
        fail: Callable[[Path, str, str], Exception],
    ) -> None:
        self.path, self.hasher, self.progress, self._fail = path, hasher, progress, fail
        self.file = path.open("rb")
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.buf, self.pos, self.eof = "", 0, False

    def __enter__(self) -> JsonStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def _more(self) -> bool:
        """Append the next chunk to the unread text; False at the end of the file."""
        if self.eof:
            return False
        raw = self.file.read(_CHUNK)
        self.hasher.update(raw)
        self.progress(advance=len(raw))
        try:
            text = self.utf8.decode(raw, final=not raw)
        except UnicodeDecodeError as e:
            raise self._fail(self.path, "encoding", f"not UTF-8 ({e.reason})") from None
        self.eof = not raw
        self.buf, self.pos = self.buf[self.pos :] + text, 0
        return not self.eof

    def _peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos : self.pos + 1]

    def _expect(self, chars: str, where: str) -> str:
        c = self._peek()
        if not c or c not in chars:
            found = repr(c) if c else "the end of the file"
            raise self._fail(self.path, where, f"expected {' or '.join(chars)}, found {found}")
        self.pos += 1
        return c

    def _value(self, where: str) -> Any:
        self._peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if len(self.buf) - self.pos < _MAX_RECORD and self._more():
                    continue  # the value runs past what has been read so far
                raise self._fail(self.path, where, f"not valid JSON ({e.msg})") from None
            # A number may continue in the next chunk; anything else ends in its own closer.
            if end == len(self.buf) and isinstance(value, int | float) and self._more():
                continue
            self.pos = end
            return value

    def entries(self, kind: str) -> Iterator[tuple[Any, Any]]:
        """(position, item) of a top-level list, or (key, value) of an object."""
        opening, closing = "[]" if kind == "list" else "{}"
        if self._peek() != opening:
            raise self._fail(self.path, "start", f"not a JSON {kind}; is this a WebShop file?")
        self.pos += 1
        if self._peek() == closing:
            return
        n = 0
        while True:
            key, where = n, f"record {n}"
            if kind == "object":
                key = self._value(f"key {n}")
                if not isinstance(key, str):
                    raise self._fail(self.path, f"key {n}", f"{key!r} is not a string")
                self._expect(":", f"after key {key!r}")
                where = f"entry {key!r}"
            yield key, self._value(where)
            n += 1
            if self._expect("," + closing, f"after {where}") == closing:
                return
