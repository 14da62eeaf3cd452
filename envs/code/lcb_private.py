"""LiveCodeBench's private test cases, read without unpickling.

The release writes ``private_test_cases`` as base64 of zlib of a pickle of a
JSON string (``lcb_runner/benchmarks/code_generation.py`` decodes it with
``pickle.loads``). Unpickling data from a file runs whatever the pickle says,
so this module never does: it walks the pickle's opcodes with `pickletools`
(which only parses) and accepts exactly one string and the framing around
it; any other opcode is refused with what it was.
"""

from __future__ import annotations

import base64
import binascii
import json
import pickletools
import zlib
from typing import Any

__all__ = ["MAX_DECOMPRESSED", "decode_private_cases", "pickled_string"]

#: Largest decompressed pickle read (LiveCodeBench's largest is tens of MB).
MAX_DECOMPRESSED = 1 << 30
#: Opcodes that only frame, memoize or end a pickle.
_FRAMING = frozenset({"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP"})
#: Opcodes that push one str.
_STRINGS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"})


def pickled_string(data: bytes) -> str:
    """The one str a pickle holds; ValueError for any pickle that holds
    anything else (objects, calls, imports, several values)."""
    found: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name in _STRINGS:
                found.append(arg)
            elif opcode.name not in _FRAMING:
                raise ValueError(
                    f"the pickle holds a {opcode.name} opcode, not a single string; envgym "
                    "never unpickles data, so it reads only a pickled JSON string"
                )
    except ValueError:
        raise
    except Exception as exc:  # pickletools raises assorted errors on broken input
        raise ValueError(f"not a readable pickle: {exc}") from None
    if len(found) != 1:
        raise ValueError(f"the pickle holds {len(found)} strings, not one")
    return found[0]


def decode_private_cases(text: str) -> Any:
    """The cases of a ``private_test_cases`` field: plain JSON text, or
    LiveCodeBench's base64(zlib(pickle(JSON text)))."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc}") from None
    try:
        compressed = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("neither a JSON list nor base64 text") from None
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(compressed, MAX_DECOMPRESSED)
    except zlib.error as exc:
        raise ValueError(f"base64 text that is not zlib data: {exc}") from None
    if inflater.unconsumed_tail:
        raise ValueError(f"decompresses to more than {MAX_DECOMPRESSED >> 20} MiB")
    try:
        return json.loads(pickled_string(data))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the pickled string is not JSON: {exc}") from None
