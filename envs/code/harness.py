"""The Code env's grading job: trusted code that runs the tests in a sandbox
and never runs the submission itself.

The host sends this file as a sandbox job, the submission as the file
``submission.py``, and on stdin a random marker line and the tests (never a
file, so nothing on disk holds them). The job is the harness process. Before
it reads stdin it forks the submission's process, so that process cannot
hold the tests in its memory; the harness is not dumpable, so it cannot read
the harness's memory or file descriptors either. The submission process, on
the harness's first request, points its stdin, stdout and stderr at /dev/null, runs
``submission.py`` in its own namespace and answers calls of the entry point.

The harness runs the problem's prompt (the helpers it defines, as HumanEval's
``encode_cyclic``), the problem's setup (HumanEval's ``check``) and each test
in its own namespace, where the entry point is a proxy: a call sends the
arguments to the submission process and returns the decoded result, or raises
the builtin exception the submission raised (else RuntimeError). Only plain
data crosses, in either direction: None, bool, int, float, str, bytes, list,
tuple, dict, set and frozenset of those, at most `MAX_DEPTH` deep and
`MAX_ITEMS` values, in a message of at most `MAX_MESSAGE` bytes; anything else
fails the test. ``==`` and ``!=`` in the tests and setup compare types as well
as values (`strict_eq`: numbers by value, ``True`` is not ``1``, a tuple is
not a list). A submission process that dies or does not answer by the
deadline fails its test and every later one.

After each test the harness writes one line to its stdout, which no
submission process holds: the marker, then ``{"kind": "load" | "public" |
"hidden", "index": i, "ok": bool, "error": str}``. Standard library only: the
sandbox has no envgym.
"""

from __future__ import annotations

import ast
import base64
import builtins
import ctypes
import json
import os
import select
import signal
import struct
import sys
import time
import traceback

#: Largest message either side reads, in bytes.
MAX_MESSAGE = 4 << 20
#: Deepest nesting and most values in one decoded message.
MAX_DEPTH = 64
MAX_ITEMS = 200_000
#: Submission processes forked before the tests are read. One: a spare, which
#: could take over only after a crash (a hang uses up the job's time), costs a
#: fork per grading; as before, a crash fails the tests after it.
PROCESSES = 1
#: Seconds kept back from the job's time limit to report the last results.
RESERVE_S = 0.3


class NotPlainData(TypeError):
    """A value outside the plain data that may cross between the processes."""


# ---------------------------------------------------------------- plain data
def _count_one(counter: list | None, depth: int) -> list:
    """One more value in the count that `encode` and `decode` share (a new count
    when `counter` is None); `NotPlainData` past `MAX_ITEMS` or `MAX_DEPTH`."""
    counter = [0] if counter is None else counter
    counter[0] += 1
    if counter[0] > MAX_ITEMS or depth > MAX_DEPTH:
        raise NotPlainData(f"more than {MAX_ITEMS} values or {MAX_DEPTH} levels")
    return counter


def encode(value, depth: int = 0, counter: list | None = None):
    """``value`` as JSON-able data: lists stay lists, every other container is
    a one-key tagged object; `NotPlainData` for anything else."""
    counter = _count_one(counter, depth)
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is list:
        return [encode(v, depth + 1, counter) for v in value]
    if kind is tuple:
        return {"t": [encode(v, depth + 1, counter) for v in value]}
    if kind is dict:
        return {"d": [[encode(k, depth + 1, counter), encode(v, depth + 1, counter)]
                      for k, v in value.items()]}  # fmt: skip
    if kind in (set, frozenset):
        tag = "s" if kind is set else "f"
        return {tag: [encode(v, depth + 1, counter) for v in value]}
    if kind is bytes:
        return {"b": base64.b64encode(value).decode("ascii")}
    raise NotPlainData(f"a {kind.__name__} is not plain data")


def decode(data, depth: int = 0, counter: list | None = None):
    """The value `encode` made ``data`` from; `NotPlainData` for anything else."""
    counter = _count_one(counter, depth)
    kind = type(data)
    if data is None or kind in (bool, int, float, str):
        return data
    if kind is list:
        return [decode(v, depth + 1, counter) for v in data]
    if kind is dict and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "b" and type(body) is str:
            try:
                return base64.b64decode(body.encode("ascii"), validate=True)
            except ValueError:
                raise NotPlainData("bad bytes") from None
        if type(body) is not list:
            raise NotPlainData("a tagged value without a list")
        items = [decode(v, depth + 1, counter) for v in body] if tag != "d" else None
        try:
            if tag == "t":
                return tuple(items)
            if tag == "s":
                return set(items)
            if tag == "f":
                return frozenset(items)
            if tag == "d":
                pairs = [p for p in body if type(p) is list and len(p) == 2]
                if len(pairs) != len(body):
                    raise NotPlainData("a dict entry is not a pair")
                return {decode(k, depth + 1, counter): decode(v, depth + 1, counter)
                        for k, v in pairs}  # fmt: skip
        except TypeError as exc:  # an unhashable key or set member
            raise NotPlainData(str(exc)) from None
    raise NotPlainData(f"unknown data: {kind.__name__}")


def strict_eq(a, b) -> bool:
    """``a == b`` with types compared too: numbers (int, float) by value, else
    the same type (bool is not int, tuple is not list), containers item by item."""
    numbers = (int, float)
    ta, tb = type(a), type(b)
    if ta in numbers and tb in numbers:
        return a == b
    if ta is not tb:
        return False
    if ta in (list, tuple):
        return len(a) == len(b) and all(strict_eq(x, y) for x, y in zip(a, b, strict=True))
    if ta is dict:
        return a.keys() == b.keys() and all(strict_eq(a[k], b[k]) for k in a)
    return bool(a == b)


class Strict:
    """A value whose ``==`` and ``!=`` are `strict_eq`: what a test's left-hand
    operand becomes (``Strict(candidate(x)) == expected``)."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def __eq__(self, other) -> bool:
        return strict_eq(self.value, other)

    def __ne__(self, other) -> bool:
        return not strict_eq(self.value, other)

    __hash__ = None


def compile_strict(source: str, name: str):
    """``source`` compiled with `strict_eq` behind every ``==`` and ``!=``: the
    left operand of each such comparison is wrapped in `Strict` (in place, in
    one walk of the tree)."""
    tree = ast.parse(source, name, "exec")
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            left = node.left
            func = ast.copy_location(ast.Name(id="__Strict__", ctx=ast.Load()), left)
            node.left = ast.copy_location(ast.Call(func=func, args=[left], keywords=[]), left)
    return compile(tree, name, "exec")


# ---------------------------------------------------------------- messages
def send(fd: int, message: dict) -> None:
    data = json.dumps(message).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int, deadline: float | None) -> dict | None:
    """One message, or None on end of file or a malformed message;
    `TimeoutError` past ``deadline``."""
    header = _read_exactly(fd, 4, deadline)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if size > MAX_MESSAGE:
        return None
    body = _read_exactly(fd, size, deadline)
    try:
        message = json.loads(body) if body is not None else None
    except (ValueError, RecursionError):
        return None
    return message if type(message) is dict else None


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks, left = [], size
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def describe(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()[-400:]


# ---------------------------------------------------------------- a submission process
def serve_submission(requests: int, replies: int) -> None:
    """Runs in a forked submission process; never returns. The first request
    (``load``) names the entry point; the others call it."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    keep = {0, 1, 2, requests, replies}
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    os.setpgid(0, 0)
    function = None
    while True:
        message = receive(requests, None)
        if message is None:  # the harness is done, or sent nonsense
            os._exit(0)
        if message.get("op") == "load":
            entry_point = str(message.get("entry_point"))
            try:
                with open("submission.py", encoding="utf-8") as f:
                    source = f.read()
                namespace = {"__name__": "solution", "__builtins__": builtins}
                exec(compile(source, "submission.py", "exec"), namespace)
                function = namespace.get(entry_point)
                error = None
                if not callable(function):
                    error = f"the code does not define a function named {entry_point}"
            except BaseException as exc:
                frames = traceback.extract_tb(exc.__traceback__)
                where = [f for f in frames if f.filename == "submission.py"]
                line = f" (submission.py, line {where[-1].lineno})" if where else ""
                error = describe(exc) + line
            send(replies, {"ok": error is None, "error": error})
            continue
        try:
            args, kwargs = decode(message.get("args")), decode(message.get("kwargs"))
            value = encode(function(*args, **dict(kwargs)))
            reply = {"ok": True, "value": value}
        except BaseException as exc:
            kind = type(exc)
            name = kind.__name__ if kind.__module__ == "builtins" else "RuntimeError"
            reply = {"ok": False, "type": name, "error": describe(exc)}
        try:
            send(replies, reply)
        except (ValueError, OverflowError) as exc:  # e.g. an int past JSON's digit limit
            send(replies, {"ok": False, "type": "ValueError", "error": describe(exc)})


# ---------------------------------------------------------------- the harness
class SubmissionGone(Exception):
    """The submission process died or did not answer in time."""


class Submissions:
    """The submission processes, forked before any test is read; one serves at a time."""

    def __init__(self, count: int = PROCESSES) -> None:
        self.pipes = []
        for _ in range(count):
            req_r, req_w = os.pipe()
            rep_r, rep_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                serve_submission(req_r, rep_w)
            os.close(req_r)
            os.close(rep_w)
            self.pipes.append((pid, req_w, rep_r))
        self.current = -1
        self.usable = False
        self.entry_point = ""
        self.deadline = 0.0
        self.load_error: str | None = None
        self.timed_out = False

    def advance(self) -> bool:
        """Kill the serving process (if any) and load the submission in the
        next one; False when it does not load or none is left."""
        if self.current >= 0:
            pid, req_w, rep_r = self.pipes[self.current]
            for fd in (req_w, rep_r):
                os.close(fd)
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        self.current += 1
        self.usable = False
        if self.current >= len(self.pipes):
            return False
        reply = self._ask({"op": "load", "entry_point": self.entry_point})
        if reply is None:
            self.load_error = (
                "the program ran past the time limit before it was graded"
                if self.timed_out
                else "the program ended before it was graded"
            )
        elif reply.get("ok") is not True:
            error = reply.get("error")
            self.load_error = error if type(error) is str else "the code did not load"
        else:
            self.usable = True
        return self.usable

    def close(self) -> None:
        """End every submission process and reap it (wherever the harness runs,
        none is left behind as a zombie)."""
        for pid, *_ in self.pipes:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

    def _ask(self, message: dict) -> dict | None:
        _, req_w, rep_r = self.pipes[self.current]
        try:
            send(req_w, message)
            return receive(rep_r, self.deadline)
        except TimeoutError:  # before OSError, of which it is a subclass
            self.timed_out = True
            return None
        except OSError:
            return None

    def call(self, args: tuple, kwargs: dict):
        if not self.usable:
            raise SubmissionGone("the submission's process died too often; no test runs now")
        reply = self._ask({"op": "call", "args": encode(list(args)), "kwargs": encode(kwargs)})
        if reply is None:
            why = "did not answer in time" if self.timed_out else "died"
            self.advance()
            raise SubmissionGone(f"the submission's process {why}")
        if reply.get("ok") is True:
            return decode(reply.get("value"))
        name, error = reply.get("type"), reply.get("error")
        kind = getattr(builtins, name, None) if type(name) is str else None
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            kind = RuntimeError
        raise kind(error if type(error) is str else "")


def main() -> None:
    out = os.dup(1)
    started = time.monotonic()
    # The submission processes are forked from a harness that has read nothing
    # but its own code; the marker and the tests come only after.
    submissions = Submissions()
    mark = sys.stdin.readline().strip()
    spec = json.loads(sys.stdin.read())
    submissions.deadline = started + float(spec["timeout_s"]) - RESERVE_S
    submissions.entry_point = spec["entry_point"]

    def report(kind: str, index: int, ok: bool, error: str | None) -> None:
        record = {"kind": kind, "index": index, "ok": ok, "error": (error or "")[-400:]}
        os.write(out, f"\n{mark}{json.dumps(record)}\n".encode())

    loaded = submissions.advance()
    report("load", 0, loaded, None if loaded else submissions.load_error)
    if submissions.timed_out:
        report("timeout", 0, False, "the submission ran past the time limit")
    tests = [("public", i, t) for i, t in enumerate(spec["public"])]
    tests += [("hidden", i, t) for i, t in enumerate(spec["hidden"])]
    if not loaded:
        for kind, index, _ in tests:
            report(kind, index, False, "the code did not load")
        submissions.close()
        return

    def candidate(*args, **kwargs):
        return submissions.call(args, kwargs)

    candidate.__name__ = spec["entry_point"]
    base = {"__name__": "__tests__", "__builtins__": builtins, "__Strict__": Strict}
    try:
        exec(compile(spec["prompt"], "<prompt>", "exec"), base)  # the problem's own helpers
    except Exception:
        pass
    base[spec["entry_point"]] = candidate
    setup = compile_strict(spec["setup"], "<setup>") if spec["setup"] else None
    for kind, index, test in tests:
        scope = dict(base)
        try:
            if setup is not None:
                exec(setup, scope)
            exec(compile_strict(test, f"<{kind} test {index + 1}>"), scope)
            ok, error = True, None
        except BaseException as exc:
            ok, error = False, describe(exc)
        report(kind, index, ok, error)
    if submissions.timed_out:
        report("timeout", 0, False, "the submission ran past the time limit")
    submissions.close()


def _not_dumpable() -> None:
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    _not_dumpable()
    main()
