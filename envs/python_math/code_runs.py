"""Running the agent's Python in a sandbox pool, and the feedback it sees.

A run never raises: a timeout, the memory limit, a crashed sandbox or no
sandbox at all come back as a `CodeRun` whose ``error`` names what happened
and whose ``feedback`` says so in the ``<output>`` block the agent reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envgym.text import CHARSET

#: The most characters of stdout (and of stderr) shown back to the agent.
MAX_STREAM_CHARS = 2000
#: The most characters of code one run may have.
MAX_CODE_CHARS = 8192
_CHARSET = frozenset(CHARSET)


@dataclass(frozen=True)
class CodeRun:
    """What one run did, as the agent sees it (``feedback``) and as info reports it."""

    feedback: str
    seconds: float
    #: None for a run that finished by itself (any exit status); else "timeout",
    #: "memory", "sandbox" (the sandbox failed) or "unavailable" (none could start).
    error: str | None


def _printable(text: str, limit: int) -> str:
    """Text cut to `limit` characters (head and tail kept) and made ASCII-printable."""
    if len(text) > limit:
        cut = len(text) - limit
        text = f"{text[: limit // 2]}\n[... {cut} characters cut ...]\n{text[-limit // 2 :]}"
    if all(c in _CHARSET for c in text):
        return text
    text = text.encode("ascii", errors="backslashreplace").decode("ascii")
    return "".join(c if c in _CHARSET else "?" for c in text)


def _out_of_memory(stderr: str) -> bool:
    """Python's own report of the per-job memory cap (an allocation refused)."""
    tail = stderr.strip().splitlines()[-1:] or [""]
    return tail[0].startswith("MemoryError")


def run_code(pool: Any, code: str, timeout_s: float, memory_mb: int) -> CodeRun:
    """Run `code` on a sandbox of `pool` (None: the shared pool); never raises."""
    if len(code) > MAX_CODE_CHARS:
        text = f"Your code is longer than {MAX_CODE_CHARS} characters; it was not run."
        return CodeRun(f"<output>\n{text}\n</output>", 0.0, None)
    try:
        if pool is None:
            from envgym.sandbox import shared_pool

            pool = shared_pool()
    except Exception as exc:  # no backend works here: the agent must answer without code
        why = _printable(str(exc), 300)
        text = f"[no sandbox could be started, so your code did not run: {why}]"
        return CodeRun(f"<output>\n{text}\n</output>", 0.0, "unavailable")
    try:
        with pool.lease() as box:
            limits = getattr(box, "limits", None)
            if limits is not None:  # a job may lower the pool's limits, never raise them
                timeout_s = min(timeout_s, limits.timeout_s)
                memory_mb = min(memory_mb, limits.memory_mb)
            result = box.run(code, language="python", timeout_s=timeout_s, memory_mb=memory_mb)
    except Exception as exc:
        why = _printable(str(exc), 300)
        return CodeRun(f"<output>\n[the sandbox failed: {why}]\n</output>", 0.0, "sandbox")
    lines = []
    error = None
    if result.error:
        error = "sandbox"
        lines.append(f"[the sandbox failed and your code may not have run: {result.error}]")
    elif result.timed_out:
        error = "timeout"
        lines.append(f"[your code was stopped after the time limit of {timeout_s:g} s]")
    elif result.memory_exceeded or (result.exit_code != 0 and _out_of_memory(result.stderr)):
        error = "memory"
        lines.append(f"[your code was killed for using more than {memory_mb} MB of memory]")
    lines.append(f"exit status: {result.exit_code}")
    lines.append("stdout:\n" + (_printable(result.stdout, MAX_STREAM_CHARS) or "(empty)"))
    if result.stderr:
        lines.append("stderr:\n" + _printable(result.stderr, MAX_STREAM_CHARS))
    if result.truncated:
        lines.append("[the output was longer than the sandbox keeps; the rest was dropped]")
    feedback = "<output>\n" + "\n".join(_printable(line, 3 * MAX_STREAM_CHARS) for line in lines)
    return CodeRun(feedback.rstrip() + "\n</output>", float(result.duration_s), error)
