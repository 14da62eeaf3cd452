"""`ToolWorldEnv`: a customer-service world of stateful tools, a written policy
and a simulated user who holds the goal.

A domain (`Domain`: Retail, Airline) supplies the store, the tools, the policy
and a task generator; this base class runs the conversation and grades it,
the same way for every domain:

- Each reply is one action: one or more ``<tool_call>`` blocks (run in order,
  results in ``<tool_response>`` tags), a ``transfer_to_human`` call (ends the
  episode), or plain text, which goes to the user, whose answer is the next
  observation.
- The policy's two general rules are enforced by the env, not the tools: a
  call that touches an account before that user was authenticated, and a write
  without a fresh "yes" from the user, are violations; nothing stops the call,
  but the task fails. Domain rules (what may be cancelled, where refunds go)
  are in the policy the agent reads, and breaking them shows in the store.
- Grading, as tau-bench defines it, at the episode's end: success when the
  final store equals the goal store (the gold writes applied to the task's
  initial store, compared row by row), every value the task requires was told
  to the user, no policy rule was broken, and a transfer happened exactly when
  the task needs one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from envgym.arguments import match_task_id, setting
from envgym.core import Preset, TextEnv, Turn
from envgym.envs.toolworld.llm_user import LLMUser, parse_user_spec
from envgym.envs.toolworld.store import Store
from envgym.envs.toolworld.task import Task, canonical_call, normalize
from envgym.envs.toolworld.tools import Tool, call_tool, tool_schemas
from envgym.envs.toolworld.user import SimulatedUser
from envgym.extras import require
from envgym.parsing import parse_tool_calls, strip_think
from envgym.text import OBSERVATION_MAX_LENGTH, quote_for_feedback

__all__ = ["Domain", "ToolWorldEnv", "ToolWorldPreset", "MESSAGE_LIMIT", "CALLS_PER_TURN"]

#: The longest message to the user, in characters; a longer one is not sent.
MESSAGE_LIMIT = 2_000
#: The most tool calls one reply may make.
CALLS_PER_TURN = 5
#: A message that names more distinct amounts than this is a hedge: no value
#: it states counts as told.
AMOUNTS_PER_MESSAGE = 3
#: Messages that together name more distinct amounts than this are a hedge
#: spread over the conversation: no value counts as told. (The gold dialogues
#: name at most 4; listing a few options with prices stays under it.)
AMOUNTS_PER_EPISODE = 10
_AMOUNT = re.compile(r"\d+\.\d\d\b")

TRANSFER_TOOL = Tool(
    name="transfer_to_human",
    description=(
        "Transfer the user to a human agent, with a summary of their issue. Only when the "
        "policy says so; this ends the conversation."
    ),
    parameters={"summary": {"type": "string", "description": "the user's issue in brief"}},
    func=lambda store, summary: "Transferred.",
)


@dataclass(frozen=True)
class Domain:
    """What a tool world supplies.

    Args:
        name: the domain's name (``"retail"``).
        policy: the policy document (markdown), the core of the system prompt.
        tools: the domain's tools (`transfer_to_human` is added to them).
        askable: fact name -> the words in a message that ask the user for it.
        build_world: ``build_world(world_seed) -> Store``: the world every task
            of that seed starts from (built once per process and copied).
        make_task: ``make_task(store, rng, difficulty, task_id) -> Task``: picks
            a task and may change `store` (its own copy) to set it up.
    """

    name: str
    policy: str
    tools: tuple[Tool, ...]
    askable: Mapping[str, tuple[str, ...]]
    build_world: Callable[[int], Store]
    make_task: Callable[[Store, np.random.Generator, str, str], Task]

    @property
    def all_tools(self) -> tuple[Tool, ...]:
        return (*self.tools, TRANSFER_TOOL)

    def tool(self, name: str) -> Tool | None:
        for tool in self.all_tools:
            if tool.name == name:
                return tool
        return None

    def system_prompt(self) -> str:
        lines = [self.policy.strip(), "", "## How to act", "", HOW_TO_ACT, "", "Tools:"]
        for tool in self.all_tools:
            args = ", ".join(
                f"{name}: {spec.get('type', 'any')}" for name, spec in tool.parameters.items()
            )
            lines.append(f"- {tool.name}({args}): {tool.description}")
        return "\n".join(lines)


HOW_TO_ACT = (
    "Each reply is one action. To use a tool, reply with "
    '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> (at most '
    f"{CALLS_PER_TURN} per reply); results come back in <tool_response> tags. Anything "
    "else you write is sent to the user as a message (at most "
    f"{MESSAGE_LIMIT} characters), and the user's answer comes back."
)


@dataclass(frozen=True)
class ToolWorldPreset(Preset):
    world_seed: int = setting(0, 0, 2**31 - 1, "the seed of the world (its users, orders, ...)")


PRESETS = {
    "easy": ToolWorldPreset(max_turns=20),
    "medium": ToolWorldPreset(max_turns=30),
    "hard": ToolWorldPreset(max_turns=40),
}


@lru_cache(maxsize=8)
def _world_bytes(build_world: Callable[[int], Store], world_seed: int) -> bytes:
    store = build_world(world_seed)
    try:
        return store.to_bytes()
    finally:
        store.close()


class ToolWorldEnv(TextEnv):
    """The base of the tool worlds; a domain's env sets `domain` and its manual.

    ``user`` picks who plays the user: ``"scripted"`` (the default: the
    deterministic `SimulatedUser`) or ``"openai:URL#MODEL"`` (a model behind an
    OpenAI-compatible server, `LLMUser`; needs the ``agents`` extra).
    """

    domain: ClassVar[Domain]
    presets = PRESETS
    tools: ClassVar[list[dict[str, Any]]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "domain" in cls.__dict__:
            cls.system_prompt = cls.domain.system_prompt()
            cls.tools = tool_schemas(cls.domain.all_tools)
            name = cls.domain.name
            cls._task_id_pattern = re.compile(rf"^{name}-(easy|medium|hard)-(\d{{1,10}})$")

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        world_seed: int | None = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        user: str = "scripted",
    ) -> None:
        super().__init__(
            difficulty=difficulty,
            render_mode=render_mode,
            world_seed=world_seed,
            max_turns=max_turns,
        )
        #: Who plays the user: "scripted" (the default, deterministic) or
        #: "openai:URL#MODEL" (an LLM, `llm_user.py`).
        self.user_spec = user
        self._llm_user = parse_user_spec(user)
        if self._llm_user is not None:
            require("httpx", extra="agents", purpose="the LLM user (user='openai:URL#MODEL')")
        self.store: Store | None = None
        self.task: Task | None = None
        self.user: SimulatedUser | LLMUser | None = None

    # ------------------------------------------------------------------ reset
    def _new_task(self, options: dict[str, Any]) -> str:
        if "task_id" in options:
            match = match_task_id(
                options["task_id"],
                self._task_id_pattern,
                f"a {type(self).__name__} task id",
                f"e.g. {self.domain.name}-easy-12345",
            )
            level, task_seed = match[1], int(match[2])
            if level != self.difficulty:
                self._set_difficulty(level)
        else:
            task_seed = int(self.np_random.integers(2**31))
        self.task_id = f"{self.domain.name}-{self.difficulty}-{task_seed}"
        base = _world_bytes(self.domain.build_world, self.config.world_seed)
        self.store = Store(data=base)
        rng = np.random.default_rng([task_seed, 7])
        self.task = self.domain.make_task(self.store, rng, self.difficulty, self.task_id)
        # From here `written` names the tables the agent's calls may change, all
        # that grading compares; the task's initial rows are copied at the
        # first write (`_keep_initial`), not at every reset.
        self.store.forget_writes()
        self._initial: bytes | None = None
        if self.user is not None and hasattr(self.user, "close"):
            self.user.close()
        if self._llm_user is None:
            self.user = SimulatedUser(self.task, self.domain.askable, seed=task_seed)
        else:
            self.user = LLMUser(self.task, task_seed, *self._llm_user)
        self._done = [False] * len(self.task.actions)
        self._authenticated: str | None = None
        self._confirmations = 0
        self._violations: list[str] = []
        self._messages: list[str] = []
        self._writes: list[str] = []
        self._tool_calls = 0
        self._transferred = False
        self._grade: dict[str, Any] | None = None
        self._goal: _Shared | None = None
        return self.user.opening()

    # ------------------------------------------------------------------ step
    def _act(self, action: str) -> Turn:
        text = strip_think(action).strip()
        last_turn = self.turn + 1 >= self.max_turns
        if "<tool_call>" in text.lower():
            calls, error = parse_tool_calls(text)
            if error is not None or not calls:
                return self._invalid(f"{error} Nothing was run.", last_turn)
            if len(calls) > CALLS_PER_TURN:
                return self._invalid(
                    f"This reply makes {len(calls)} tool calls; make at most "
                    f"{CALLS_PER_TURN} per reply. Nothing was run.",
                    last_turn,
                )
            if calls[0].name == "respond" and len(calls) == 1:
                message = calls[0].arguments.get("message")
                if not isinstance(message, str):
                    return self._invalid('respond takes {"message": "..."}.', last_turn)
                return self._say(message, last_turn)
            return self._run_calls(calls, last_turn)
        return self._say(text, last_turn)

    def _run_calls(self, calls: Sequence[Any], last_turn: bool) -> Turn:
        results = []
        valid = True
        for call in calls:
            tool = self.domain.tool(call.name)
            self._tool_calls += 1
            if tool is None and call.name == "respond":
                results.append("Error: respond must be the only call in a reply; it was not sent.")
                valid = False
                continue
            if tool is None:
                names = ", ".join(t.name for t in self.domain.all_tools)
                results.append(
                    f"Error: there is no tool {quote_for_feedback(call.name)}; "
                    f"the tools are {names}."
                )
                valid = False
                continue
            if tool is TRANSFER_TOOL:
                self._transferred = True
                results.append("You have transferred the user to a human agent.")
                return self._end(_wrap_all(results), valid=valid)
            results.append(self._call(tool, call.arguments))
        observation = _wrap_all(results)
        if last_turn:
            return self._end(observation, valid=valid, terminated=False)
        return Turn(observation, {}, action_valid=valid)

    def _call(self, tool: Tool, arguments: Mapping[str, Any]) -> str:
        problem = tool.check(arguments)
        if problem is not None:
            return f"Error: {tool.name}: {problem}"
        if tool.account is not None:
            owner = tool.account(self.store, arguments)
            if owner is not None and owner != self._authenticated:
                self._violations.append(
                    f"{tool.name} touched the account of {owner} before that user was authenticated"
                )
        if tool.writes and self._confirmations <= 0:
            self._violations.append(
                f"{tool.name} changed the store without the user's confirmation"
            )
        if tool.writes:
            self._keep_initial()
        ok, data, text = call_tool(tool, self.store, arguments)
        if self._initial is None and self.store.written:  # a domain's bug, not the agent's
            raise RuntimeError(
                f"{tool.name} changed {sorted(self.store.written)} but is not marked writes=True"
            )
        if not ok:
            return text
        if tool.authenticates and isinstance(data, str):
            self._authenticated = data
        if tool.writes:
            self._confirmations = max(0, self._confirmations - 1)
            call = canonical_call(tool.name, arguments)
            self._writes.append(call)
            for i, gold in enumerate(self.task.actions):
                if not self._done[i] and canonical_call(gold.tool, gold.arguments) == call:
                    self._done[i] = True
                    break
        return text

    def _say(self, message: str, last_turn: bool) -> Turn:
        if not message:
            feedback = "Your reply is empty: write to the user or call a tool."
            return self._invalid(feedback, last_turn)
        if len(message) > MESSAGE_LIMIT:
            return self._invalid(
                f"Your message is {len(message):,} characters long; the user reads at most "
                f"{MESSAGE_LIMIT:,}. It was not sent.",
                last_turn,
            )
        self._messages.append(message)
        reply = self.user.reply(message, self._done)
        self._confirmations = reply.confirmed
        if reply.ended:
            return self._end(reply.text + "\n(The user has left the conversation.)", valid=True)
        if last_turn:
            return self._end(reply.text, valid=True, terminated=False)
        return Turn(reply.text, {}, action_valid=True)

    def _invalid(self, feedback: str, last_turn: bool) -> Turn:
        if last_turn:
            return self._end(feedback, valid=False, terminated=False)
        return Turn(feedback, {}, action_valid=False)

    # ------------------------------------------------------------------ grading
    def _end(self, observation: str, valid: bool, terminated: bool = True) -> Turn:
        """Grade the conversation. It ended (the user left, or a transfer), or the
        turn limit cut it (``terminated=False``: the base class reports it truncated,
        graded the same way)."""
        grade = self.grade()
        s = 1.0 if grade["store_match"] else 0.0
        outputs = 0.0 if grade["outputs_told"] else -s
        policy = 0.0 if grade["policy_ok"] and grade["transfer_ok"] else -(s + outputs)
        components = {"store": s, "outputs": outputs, "policy": policy}
        return Turn(
            observation,
            components,
            terminated=terminated,
            success=grade["success"],
            action_valid=valid,
            extra_info={"grade": grade},
        )

    def _keep_initial(self) -> bytes:
        """The task's initial store, copied before the first write changes it."""
        if self._initial is None:
            self._initial = self.store.to_bytes()
        return self._initial

    def goal_store(self) -> Store:
        """The task's initial store with its gold writes applied."""
        goal = Store(data=self._keep_initial())
        for action in self.task.actions:
            ok, _, text = call_tool(self.domain.tool(action.tool), goal, action.arguments)
            if not ok:
                raise RuntimeError(f"task {self.task_id}: gold call {action.tool} fails: {text}")
        return goal

    def grade(self) -> dict[str, Any]:
        """The episode's verdict so far: store, outputs, policy and transfer."""
        if self._goal is None:  # the same for the whole episode
            self._goal = _Shared(self.goal_store())
        goal = self._goal.value
        store_match = goal.same_rows(self.store, goal.written | self.store.written)
        said = [normalize(m) for m in self._messages]
        told = [m for m in said if len(set(_AMOUNT.findall(m))) <= AMOUNTS_PER_MESSAGE]
        if len({a for m in said for a in _AMOUNT.findall(m)}) > AMOUNTS_PER_EPISODE:
            told = []
        missing = [o for o in self.task.outputs if not any(_says(m, o) for m in told)]
        transfer_ok = self._transferred == self.task.transfer
        grade = {
            "store_match": store_match,
            "outputs_told": not missing,
            "missing_outputs": missing,
            "policy_ok": not self._violations,
            "violations": list(self._violations),
            "transfer_ok": transfer_ok,
        }
        grade["success"] = bool(
            store_match and not missing and not self._violations and transfer_ok
        )
        self._grade = grade
        return grade

    # ------------------------------------------------------------------ info
    def _task_info(self) -> dict[str, Any]:
        if self.task is None:
            return {}
        user = self.user
        state = repr(
            (
                self._writes,
                sorted(user.revealed),
                user.changed,
                user.stuck,
                self._authenticated,
                self._confirmations,
                self._violations,
            )
        )
        return {
            "tools": self.tools,
            "cost": {"tool_calls": self._tool_calls, "user_messages": len(self._messages)},
            "state_key": f"{self.task_id}|{hashlib.sha1(state.encode()).hexdigest()[:16]}",
            "privileged": self.task.privileged(),
        }

    def _render_text(self) -> str:
        return self._last_obs

    def close(self) -> None:
        if self.user is not None and hasattr(self.user, "close"):
            self.user.close()
        super().close()


def _says(message: str, output: str) -> bool:
    """A normalized message states `output` as a whole value: "0.00" is not
    told by "$10.00", nor "50.00" by "$150.00"."""
    value = re.escape(normalize(output))
    return re.search(rf"(?<![\w.]){value}(?![\w]|\.\d)", message) is not None


class _Shared:
    """A value that never changes, shared by a snapshot instead of copied (the
    goal store, built once per episode and only read)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __deepcopy__(self, memo: dict[int, Any]) -> _Shared:
        return self

    def __getstate__(self) -> Any:
        return self.value

    def __setstate__(self, value: Any) -> None:
        self.value = value


def _wrap(result: str) -> str:
    return f"<tool_response>\n{result}\n</tool_response>"


def _wrap_all(results: Sequence[str]) -> str:
    """The results of one reply's calls, each in its tags; when together they would
    pass `OBSERVATION_MAX_LENGTH`, each is cut to an equal share, with a note."""
    text = "\n".join(_wrap(r) for r in results)
    if len(text) <= OBSERVATION_MAX_LENGTH:
        return text
    note = " ... [cut: {} results share one observation]"
    share = OBSERVATION_MAX_LENGTH // len(results) - len(_wrap("")) - len(note) - 8
    return "\n".join(
        _wrap(r if len(r) <= share else r[:share] + note.format(len(results))) for r in results
    )
