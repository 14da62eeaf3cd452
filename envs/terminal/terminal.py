"""envgym/Terminal-v0 and envgym/RepoFix-v0: work in a persistent sandboxed
shell, then a trusted grader checks the work directory.

One base class, `ShellTaskEnv`, plays a `TerminalTask` in a `Session` taken
from this process's pool (`runtime.session_pool`); the two ids differ only in
where their tasks come from. The grader (`grade.run_checks`) runs on the
session's final tree in separate one-shot sandbox jobs, never in the session.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any, ClassVar

from envgym.arguments import check_int
from envgym.core import MAX_TASK_SEED, Preset, TextEnv, Turn, check_number, short_repr
from envgym.envs.terminal import runtime
from envgym.envs.terminal.families import FAMILIES, make_task
from envgym.envs.terminal.grade import starting_tree
from envgym.envs.terminal.repofix import make_repo_task
from envgym.envs.terminal.task import LEVELS, TerminalTask
from envgym.envs.terminal.taskdirs import load_tasks
from envgym.sandbox import SessionError, SessionExhausted, SessionLimits
from envgym.text import to_ascii

__all__ = ["RepoFixEnv", "ShellTaskEnv", "TerminalEnv"]

#: Seconds one command may run (the session's per-command limit).
COMMAND_TIMEOUT_S = 20.0
_SETUP_EOF = "ENVGYM_TASK_SETUP_EOF"


@dataclass(frozen=True)
class ShellPreset(Preset):
    pass


_MANUAL_COMMON = """
    ## Action Space
    Text, one action per reply:

    * ``<bash>command</bash>`` (the last block), or the tool call
      ``<tool_call>{"name": "bash", "arguments": {"command": "..."}}</tool_call>``:
      run the command with bash in the work directory ``/work`` as an
      unprivileged user, no network. Files, the working directory and exported
      variables persist from one command to the next; processes do not (every
      process a command leaves is killed when it ends).
    * ``<tool_call>{"name": "write_file", "arguments": {"path": "...",
      "content": "..."}}</tool_call>``: write a file under ``/work``.
    * ``<done/>`` (or a ``done`` tool call): end the episode.

    With several tool calls, the first is run. ``<think>...</think>`` is ignored.
    Tool schemas are in ``info["tools"]``.

    ## Observation Space
    Text: the task's instruction and how to act at reset. After a command, its
    output (stdout and stderr together, at most 8,000 characters: the first
    and last 4,000 with a marker when longer) in ``<output>`` and its exit
    status in ``<exit_status>`` (``timed out`` past the command's limit). After
    ``<done/>`` or the last turn, the grade: which checks passed.

    ## Rewards
    Only the end pays: the fraction of the task's checks that pass, one
    ``reward_components`` entry per check (``check:NAME``, ``1/n`` when it
    passes). The checks run after the episode, in fresh sandbox jobs on a copy
    of the final work directory (`envgym.envs.terminal.grade`), never in the
    agent's shell, so nothing the agent left there (aliases, ``PATH``, a
    rewritten ``python3``, ``sitecustomize``, processes, printed text) changes
    a verdict. An episode whose work directory is unchanged at the end
    (nothing written, or nothing run) is not graded and earns 0: a check that
    holds for the untouched task (that nothing was lost, say) pays only once
    the agent has changed something. A reply with no action costs ``format_penalty`` (component
    ``format``). ``info`` has ``tools``, ``cost`` (``commands``: commands
    and writes run), ``sandbox_error`` (the last command timed out or ran
    out of memory), ``grade`` (at the end: each check's name, verdict and
    reason) and ``privileged`` (``solution``, the reference solution, and
    ``checks``, the checks' names; never their code).

    ## Episode End
    Terminated by ``<done/>``; ``success`` when every check passes. Truncated
    after ``max_turns`` (graded the same way).
"""


class ShellTaskEnv(TextEnv):
    """The shared base of Terminal-v0 and RepoFix-v0 (see their manuals)."""

    presets: ClassVar[dict[str, Preset]] = {
        "easy": ShellPreset(max_turns=20),
        "medium": ShellPreset(max_turns=30),
        "hard": ShellPreset(max_turns=40),
    }
    system_prompt: ClassVar[str] = (
        "You work in a Linux shell to complete a task. " + runtime.HOW_TO_ACT
    )
    snapshot_exclude: ClassVar[tuple[str, ...]] = (
        "_session",
        "_backend",
        "_limits",
        "session_pool_size",
        "grader_pool_size",
    )

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        max_turns: int | None = None,
        sandbox: str = "auto",
        format_penalty: float = 0.1,
        session_pool_size: int = runtime.SESSION_POOL_SIZE,
        grader_pool_size: int = runtime.GRADER_POOL_SIZE,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(difficulty=difficulty, render_mode=render_mode, max_turns=max_turns)
        if sandbox not in ("auto", "docker", "bwrap"):
            raise ValueError(
                f"unknown sandbox {short_repr(sandbox)}; choose 'auto', 'docker' or 'bwrap' "
                "(sessions need an isolating sandbox)"
            )
        self.format_penalty = check_number(format_penalty, "format_penalty", 0.0, 1.0)
        meaning = "started sandboxes this process keeps for such envs"
        self.session_pool_size = check_int(
            session_pool_size, "session_pool_size", 1, runtime.MAX_POOL_SIZE, meaning
        )
        self.grader_pool_size = check_int(
            grader_pool_size, "grader_pool_size", 1, runtime.MAX_POOL_SIZE, meaning
        )
        self._backend = sandbox
        self._limits = SessionLimits(timeout_s=COMMAND_TIMEOUT_S, output_bytes=16 * 1024)
        self._session = None
        self.task: TerminalTask | None = None
        self._start_digest: str | None = None
        self._commands = 0
        self._sandbox_error = False
        self._grade: dict[str, Any] | None = None

    # --------------------------------------------------------------- tasks
    def _draw_task(self, options: dict[str, Any]) -> TerminalTask:
        raise NotImplementedError

    def _new_task(self, options: dict[str, Any]) -> str:
        self._close_session()
        self.task = self._draw_task(options)
        self.task_id = self.task.task_id
        self._start_digest = None
        self._commands = 0
        self._sandbox_error = False
        self._grade = None
        return to_ascii(
            f"{self.task.instruction.rstrip()}\n\nYour work directory is /work. You have "
            f"{self.max_turns} turns. {runtime.HOW_TO_ACT}"
        )

    # ------------------------------------------------------------- session
    def _ensure_session(self):
        """The episode's session, started on its first command: the task's
        starting tree loaded and its ``setup`` run."""
        if self._session is None:
            pool = runtime.session_pool(self._backend, self._limits, self.session_pool_size)
            session = pool.take(files=starting_tree(self.task))
            try:
                if self.task.setup.strip():
                    script = f"bash -e <<'{_SETUP_EOF}'\n{self.task.setup}\n{_SETUP_EOF}"
                    done = session.exec(script)
                    if not done.ok:
                        raise RuntimeError(
                            f"the set-up of task {self.task_id} failed (exit {done.exit_code}): "
                            f"{done.output[-500:]}"
                        )
                self._start_digest = _digest(session.snapshot().tree)
            except BaseException:
                session.close()
                raise
            self._session = session
        return self._session

    def _close_session(self, wait: bool = False) -> None:
        session, self._session = self._session, None
        if session is not None:
            if wait:
                session.close()
            else:
                runtime.close_later(session)

    def close(self) -> None:
        self._close_session(wait=True)
        super().close()

    # ------------------------------------------------------------- actions
    def _act(self, action: str) -> Turn:
        self._sandbox_error = False
        parsed = runtime.parse_action(action)
        if parsed.kind == "done":
            return self._finish("You ended the episode.", {}, terminated=True)
        if parsed.kind == "invalid":
            text = (
                f"{parsed.error} {runtime.HOW_TO_ACT} Reply <done/> (not an <answer>) when "
                "the task is complete."
            )
            components = {"format": -self.format_penalty}
            return self._maybe_last(Turn(text, components, action_valid=False))
        try:
            text = self._run(parsed)
        except SessionExhausted:
            self._sandbox_error = True
            text = "Your shell has used its CPU time; this episode ends and is graded now."
            return self._finish(text, {}, terminated=True)
        except SessionError as exc:
            self._sandbox_error = True
            self._close_session()
            text = f"Your shell was lost ({to_ascii(str(exc))[:300]}); this episode ends ungraded."
            return self._finish(text, {}, terminated=True)
        return self._maybe_last(Turn(text, {}))

    def _run(self, parsed: runtime.Action) -> str:
        session = self._ensure_session()
        self._commands += 1
        if parsed.kind == "write":
            try:
                session.write_file(parsed.path, parsed.content)
            except ValueError as exc:
                return f"write_file failed: {to_ascii(str(exc))[:300]}"
            return f"Wrote {len(parsed.content.encode())} bytes to {to_ascii(parsed.path)[:200]}."
        done = session.exec(parsed.command)
        self._sandbox_error = done.timed_out or done.memory_exceeded
        return runtime.format_result(done.output, done.exit_code, done.timed_out)

    def _maybe_last(self, turn: Turn) -> Turn:
        """On the last turn the episode ends: grade it (the base class truncates)."""
        if self.turn + 1 < self.max_turns:
            return turn
        return self._finish(turn.observation, turn.reward_components, terminated=False, turn=turn)

    # ------------------------------------------------------------- grading
    def _finish(
        self, text: str, components: dict[str, float], terminated: bool, turn: Turn | None = None
    ) -> Turn:
        checks = self.task.checks
        tree = None
        if self._session is not None:
            try:
                tree = self._session.snapshot().tree
            except SessionError:
                tree = None
            self._close_session()
        if tree is None or _digest(tree) == self._start_digest:
            why = "the work directory is unchanged" if tree is not None else "nothing was done"
            results = [(c.name, False, f"not graded: {why}") for c in checks]
        else:
            verdicts = runtime.grade_tree(self._backend, tree, checks, self.grader_pool_size)
            results = [(r.name, r.passed, r.reason) for r in verdicts]
        passed = sum(ok for _, ok, _ in results)
        components = dict(components)
        for name, ok, _ in results:
            components[f"check:{name}"] = (1.0 / len(results)) if ok else 0.0
        self._grade = {
            "passed": passed,
            "total": len(results),
            "checks": [{"name": n, "passed": ok, "reason": why} for n, ok, why in results],
        }
        lines = [text, f"Checks passed: {passed}/{len(results)}."]
        lines += [f"- {n}: {'passed' if ok else 'failed'}" for n, ok, _ in results]
        return Turn(
            "\n".join(lines),
            components,
            terminated=terminated,
            success=passed == len(results),
            action_valid=turn.action_valid if turn is not None else True,
        )

    # ---------------------------------------------------------------- forking
    def snapshot(self) -> Any:
        state = super().snapshot()
        state["session"] = self._session.snapshot() if self._session is not None else None
        return state

    def restore(self, snapshot: Any) -> None:
        super().restore(snapshot)
        self._close_session()
        saved = snapshot.get("session") if isinstance(snapshot, dict) else None
        if saved is not None:
            pool = runtime.session_pool(self._backend, self._limits, self.session_pool_size)
            session = pool.take()
            try:
                session.restore(saved)
            except BaseException:
                session.close()
                raise
            self._session = session

    # ---------------------------------------------------------------- info
    def _task_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "state_key": f"{self.task_id}:{self.turn}",
            "tools": [dict(t) for t in runtime.TOOLS],
            "cost": {"commands": self._commands},
            "sandbox_error": self._sandbox_error,
        }
        if self._grade is not None:
            info["grade"] = {**self._grade, "checks": [dict(c) for c in self._grade["checks"]]}
        if self.task is not None:
            info["privileged"] = {
                "solution": self.task.solution,
                "checks": [c.name for c in self.task.checks],
            }
        return info


def _digest(tree: bytes) -> str:
    return hashlib.sha256(tree).hexdigest()


def _task_seed(env: TextEnv) -> int:
    return int(env.np_random.integers(0, 2**31 - 1))


def _parse_task_id(task_id: Any, difficulty: str, families: tuple[str, ...]) -> tuple[str, int]:
    example = f"{families[0]}-{difficulty}-7"
    parts = task_id.rsplit("-", 2) if isinstance(task_id, str) else []
    if len(parts) != 3 or parts[0] not in families or not parts[2].isdigit():
        raise ValueError(
            f"unknown task_id {short_repr(task_id)}: a task id is FAMILY-LEVEL-SEED, e.g. "
            f"{example!r} (FAMILY one of {', '.join(families)})"
        )
    if parts[1] != difficulty:
        raise ValueError(
            f"task_id {short_repr(task_id)} is a {parts[1]!r} task but the env is at "
            f"{difficulty!r}; pass options={{'difficulty': {parts[1]!r}, 'task_id': ...}}"
        )
    seed = int(parts[2])
    if seed > MAX_TASK_SEED:
        raise ValueError(f"task_id {short_repr(task_id)}: the seed is too large")
    return parts[0], seed


_TERMINAL_DOC = (
    """Terminal: complete a shell task in a persistent sandboxed shell.

    ## Description
    Each episode is a task of one of thirteen generated families (organise
    files by rules; extract data from logs, CSV and JSON; fix permissions;
    archives; bisect a regression over releases; resolve merge conflicts; fix
    a Python script's bug; repair a build; correct a configuration file against
    a spec; merge, revert or bisect in a real git repository; repair a
    Makefile), see docs/terminal-tasks.md. ``tasks=`` plays terminal-bench or
    Harbor task folders instead. The agent works in a bash shell in a
    sandbox that keeps its files, working directory and exported variables for
    the whole episode, then says it is done; a trusted grader checks the work
    directory.
"""
    + _MANUAL_COMMON
    + """
    ## Starting State
    The family drawn uniformly with the reset's seed (unless ``family`` pins
    one), then the task of that family, level and a seed drawn from it: its
    files in ``/work`` and its set-up run.

    ## Arguments
    ``difficulty``: ``easy`` (20 turns), ``medium`` (30) or ``hard`` (40).
    ``family``: one family's tasks only (names in
    ``envgym.envs.terminal.families.FAMILIES``). ``max_turns`` (1 to
    100,000). ``sandbox``: the sandbox backend of the shell and the grader, ``auto``
    (default), ``docker`` or ``bwrap``.
    ``format_penalty`` (0 to 1, default 0.1).
    ``session_pool_size`` (default 2) and ``grader_pool_size`` (default 3), 1
    to 64: the warm shells and the grader's sandboxes this process keeps for
    the backend (envs asking for the same sizes share them; set both to the
    number of episodes run at once, as `benchmarks/terminal_envs.py` does).
    ``reset(options={"task_id": "logs-easy-7"})`` plays that task.
    ``tasks``: instead of the generated families, terminal-bench or Harbor
    task folders (a task folder, a folder of them, or a glob; see
    docs/terminal-tasks.md), drawn uniformly with the reset's seed, the
    difficulty setting only the turn budget;
    ``reset(options={"task_id": FOLDER_NAME})`` plays that one.

    ## Version History
    * v0: initial version.
    """
)


class TerminalEnv(ShellTaskEnv):
    __doc__ = _TERMINAL_DOC

    snapshot_exclude: ClassVar[tuple[str, ...]] = (*ShellTaskEnv.snapshot_exclude, "loaded")

    def __init__(self, *, family: str | None = None, tasks: Any = None, **kwargs: Any) -> None:
        if family is not None and family not in FAMILIES:
            raise ValueError(
                f"unknown family {short_repr(family)}; choose one of {', '.join(FAMILIES)}"
            )
        if family is not None and tasks is not None:
            raise ValueError("pass family= (generated tasks) or tasks= (task folders), not both")
        #: Tasks loaded from terminal-bench/Harbor folders (`taskdirs`), or None.
        self.loaded = load_tasks(tasks) if tasks is not None else None
        super().__init__(**kwargs)
        self.family = family

    def _draw_task(self, options: dict[str, Any]) -> TerminalTask:
        if self.loaded is not None:
            return _draw_loaded(self, self.loaded, options)
        families = tuple(FAMILIES) if self.family is None else (self.family,)
        if "task_id" in options:
            family, seed = _parse_task_id(options["task_id"], self.difficulty, families)
        else:
            family = families[int(self.np_random.integers(len(families)))]
            seed = _task_seed(self)
        return make_task(family, seed, self.difficulty)


def _draw_loaded(
    env: TextEnv, tasks: tuple[TerminalTask, ...], options: dict[str, Any]
) -> TerminalTask:
    """The loaded task ``options["task_id"]`` names, else one drawn with the reset's seed."""
    if "task_id" not in options:
        return tasks[int(env.np_random.integers(len(tasks)))]
    for task in tasks:
        if task.task_id == options["task_id"]:
            return task
    names = ", ".join(t.task_id for t in tasks[:10]) + (", ..." if len(tasks) > 10 else "")
    raise ValueError(
        f"unknown task_id {short_repr(options['task_id'])}: the loaded task folders are {names} "
        "(a task's id is its folder's name)"
    )


_REPOFIX_DOC = (
    """RepoFix: fix the bug an issue describes in a generated Python package.

    ## Description
    Each episode is a small generated Python package (several modules and a
    ``unittest`` suite) with one planted bug and an issue that describes the
    symptom as a user saw it (see docs/repofix.md). The agent explores, runs
    the tests and edits with the shell (and ``write_file``), then says it is
    done; hidden tests of the issue's behaviour and of the rest of the package
    grade the final package.
"""
    + _MANUAL_COMMON
    + """
    ## Starting State
    The task of the level for a seed drawn with the reset's seed: its domain,
    bug, names and tests; the package in ``/work``.

    ## Arguments
    ``difficulty``: ``easy`` (20 turns; the bug is in the module the issue
    calls), ``medium`` (30; in a helper module) or ``hard`` (40; two places or
    a missing edge case, no visible test fails). ``max_turns`` (1 to
    100,000). ``sandbox``: the sandbox backend of the shell and the grader, ``auto``
    (default), ``docker`` or ``bwrap``.
    ``format_penalty`` (0 to 1, default 0.1).
    ``session_pool_size`` (default 2) and ``grader_pool_size`` (default 3), 1
    to 64: the warm shells and the grader's sandboxes this process keeps for
    the backend (envs asking for the same sizes share them; set both to the
    number of episodes run at once, as `benchmarks/terminal_envs.py` does).
    ``reset(options={"task_id": "repofix-easy-7"})`` plays that task.

    ## Version History
    * v0: initial version.
    """
)


#: RepoFix tasks recently built in this process: building one (its package,
#: bug and hidden tests, checked by running them) takes about 20 ms, and
#: evaluation and the test suites replay the same seeds. Tasks are immutable.
_repo_task = functools.lru_cache(maxsize=64)(make_repo_task)


class RepoFixEnv(ShellTaskEnv):
    __doc__ = _REPOFIX_DOC

    def _draw_task(self, options: dict[str, Any]) -> TerminalTask:
        if "task_id" in options:
            _, seed = _parse_task_id(options["task_id"], self.difficulty, ("repofix",))
        else:
            seed = _task_seed(self)
        return _repo_task(seed, self.difficulty)


assert set(LEVELS) == set(ShellTaskEnv.presets)
