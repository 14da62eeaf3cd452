"""What Terminal-v0 and RepoFix-v0 share besides the env class: the session
and grader pools of this process, the tool schemas, reading a reply's action
and writing a command's result.

Sessions come from one `SessionPool` per (backend, limits) in this process,
so a reset takes a started sandbox at once; the grader's jobs run in a
`SandboxPool` of the same backend, never in an agent's session.
"""

from __future__ import annotations

import atexit
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from envgym.envs.terminal.grade import run_checks
from envgym.parsing import parse_tag, parse_tool_calls, strip_think
from envgym.sandbox import SandboxPool, SessionLimits, SessionPool, resolve_backend
from envgym.text import to_ascii

#: Warm sessions kept per (backend, limits), and grader sandboxes per backend, by
#: default (an env's ``session_pool_size`` and ``grader_pool_size`` choose others).
SESSION_POOL_SIZE = 2
GRADER_POOL_SIZE = 3
#: The largest pool an env may ask for (each member is a started sandbox).
MAX_POOL_SIZE = 64
#: Characters of a command's output an observation shows (the session cuts it
#: at `SessionLimits.output_bytes` already, with a marker).
OUTPUT_CHARS = 8_000

BASH_TOOL: dict = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": (
            "Run a bash command in your persistent shell (files, working directory and "
            "exported variables carry over; no network). Returns its output and exit status."
        ),
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command."}},
            "required": ["command"],
        },
    },
}
WRITE_FILE_TOOL: dict = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write a text file (folders made as needed), relative to /work.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path under /work."},
                "content": {"type": "string", "description": "The whole new content."},
            },
            "required": ["path", "content"],
        },
    },
}
DONE_TOOL: dict = {
    "type": "function",
    "function": {
        "name": "done",
        "description": "End the episode: your work directory is graded as it is now.",
        "parameters": {"type": "object", "properties": {}},
    },
}
TOOLS = (BASH_TOOL, WRITE_FILE_TOOL, DONE_TOOL)
#: The placeholder of the action examples in observations: a block holding only
#: it is no command (so a reply that echoes an observation runs nothing).
PLACEHOLDER = "..."
HOW_TO_ACT = (
    "Act with one action per reply: <bash>...</bash> (your command in place of ...) "
    "runs a command in your shell "
    "(files, the working directory and exported variables persist between commands); "
    "a write_file tool call writes a file; <done/> ends the episode, and your work "
    "directory is then graded."
)


@dataclass(frozen=True)
class Action:
    """One reply's action: kind "bash", "write", "done", or "invalid" (``error`` says why)."""

    kind: str
    command: str = ""
    path: str = ""
    content: str = ""
    error: str = ""


def parse_action(reply: str) -> Action:
    """The action of one reply: a ``<bash>`` block (the last), else the first
    tool call, else ``<done/>``; anything else is invalid, with a hint."""
    body = strip_think(reply)
    lowered = body.lower()
    if "<bash>" in lowered:
        tagged = parse_tag(body, "bash")
        if not tagged.ok:
            return Action("invalid", error=tagged.error)
        if not (tagged.value or "").strip():
            return Action("invalid", error="Your <bash> block is empty.")
        if tagged.value.strip() == PLACEHOLDER:
            return Action("invalid", error="Put your command in place of the ... in <bash>.")
        return Action("bash", command=tagged.value)
    if "<tool_call>" in lowered:
        calls, error = parse_tool_calls(body)
        if not calls:
            return Action("invalid", error=error or "No tool call found.")
        call = calls[0]
        args = call.arguments
        if call.name == "bash":
            command = args.get("command")
            if not isinstance(command, str) or command.strip() in ("", PLACEHOLDER):
                return Action("invalid", error='The bash call needs a non-empty "command".')
            return Action("bash", command=command)
        if call.name == "write_file":
            path, content = args.get("path"), args.get("content")
            if not isinstance(path, str) or not path or not isinstance(content, str):
                return Action(
                    "invalid", error='The write_file call needs string "path" and "content".'
                )
            return Action("write", path=path, content=content)
        if call.name == "done":
            return Action("done")
        name = to_ascii(str(call.name))[:40]
        return Action(
            "invalid", error=f"Unknown tool {name!r}; the tools are bash, write_file, done."
        )
    if "<done/>" in lowered or "<done>" in lowered or "<done />" in lowered:
        return Action("done")
    return Action("invalid", error="No <bash>, tool call or <done/> found in your reply.")


def format_result(output: str, exit_code: int, timed_out: bool) -> str:
    """What the agent reads after a command: its output (bounded) and exit status."""
    text = to_ascii(output)
    if len(text) > OUTPUT_CHARS:
        half = OUTPUT_CHARS // 2
        text = (
            text[:half]
            + f"\n[envgym: output cut: {len(text)} characters, the first and last {half} shown]\n"
            + text[-half:]
        )
    status = "timed out" if timed_out else str(exit_code)
    return f"<output>\n{text}</output>\n<exit_status>{status}</exit_status>"


# ------------------------------------------------------------------ pools
_lock = threading.Lock()
_session_pools: dict[tuple, SessionPool] = {}
_grader_pools: dict[tuple, SandboxPool] = {}


def session_pool(backend: str, limits: SessionLimits, size: int = SESSION_POOL_SIZE) -> SessionPool:
    """This process's pool of ``size`` warm sessions of ``backend`` with ``limits``
    (envs that ask for the same share it)."""
    key = (os.getpid(), resolve_backend(backend), limits, size)
    with _lock:
        pool = _session_pools.get(key)
        if pool is None or pool._closed:
            pool = _session_pools[key] = SessionPool(key[1], limits, size=size)
        return pool


def grader_pool(backend: str, size: int = GRADER_POOL_SIZE) -> SandboxPool:
    """This process's ``size`` sandboxes for the trusted grader's jobs on ``backend``."""
    key = (os.getpid(), resolve_backend(backend), size)
    with _lock:
        pool = _grader_pools.get(key)
        if pool is None or pool._closed:
            pool = _grader_pools[key] = SandboxPool(size=size, backend=key[1])
        return pool


_closer: tuple[int, ThreadPoolExecutor] | None = None


def close_later(session) -> None:
    """Close an ended episode's session on a background thread: its processes
    are already gone (each command's are killed when it ends) and its tree was
    read; removing a container takes the docker daemon about 0.1 s."""
    global _closer
    with _lock:
        if _closer is None or _closer[0] != os.getpid():
            _closer = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="envgym-close"))
        executor = _closer[1]
    try:
        executor.submit(session.close)
    except RuntimeError:  # the interpreter is shutting down
        session.close()


def grade_tree(backend: str, tree: bytes, checks, pool_size: int = GRADER_POOL_SIZE) -> list:
    """Each check's verdict on ``tree``, every check in a fresh job of its own
    (as `grade.run_checks` runs them), the jobs side by side on the grader pool
    of ``pool_size`` sandboxes."""
    pool = grader_pool(backend, pool_size)

    def one(check):
        with pool.lease() as box:
            return run_checks(box, tree, [check])[0]

    if len(checks) == 1:
        return [one(checks[0])]
    with ThreadPoolExecutor(min(len(checks), pool.size)) as executor:
        return list(executor.map(one, checks))


@atexit.register
def _close_pools() -> None:
    """Close this process's pools (their sandboxes, their docker clients) at exit."""
    with _lock:
        pools = [*_session_pools.values(), *_grader_pools.values()]
        _session_pools.clear()
        _grader_pools.clear()
    for pool in pools:
        try:
            pool.close()
        except Exception:
            pass
