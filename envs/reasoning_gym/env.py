"""envgym/ReasoningGym-v0: one reasoning-gym generator's questions, its scorer as the reward."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from envgym.core import Preset, TextEnv, Turn, quote_for_feedback, setting
from envgym.envs.reasoning_gym import tasks
from envgym.parsing import parse_answer, strip_think
from envgym.text import CHARSET, OBSERVATION_MAX_LENGTH

FORMAT_PENALTY = 0.1
#: The largest entry index: some generators seed numpy with it (below 2**32).
MAX_INDEX = 2**32 - 1
_HINT = "Give one final answer, as <answer>...</answer> or \\boxed{...}."
_ESCAPED_NOTE = (
    "(Characters outside ASCII are written as Python escapes such as \\u00d7; answer "
    "with the characters themselves or the same escapes.)"
)
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")
_ASCII = frozenset(CHARSET)
#: Scores at least this are full marks (a float scorer's 1.0 may be 0.9999...).
FULL_MARKS = 1.0 - 1e-9


@dataclass(frozen=True)
class ReasoningPreset(Preset):
    max_turns: int = setting(1, 1, 100, "answers allowed; after a wrong one the model may retry")


class ReasoningGymEnv(TextEnv):
    """A question from one of reasoning-gym's procedural generators, scored by its own scorer.

    ## Description
    ``task`` names a generator of reasoning-gym (``pip install
    'envgym[reasoning]'``): arithmetic, algebra, logic, graphs, games, ciphers,
    ARC grids and more (`envgym info envgym/ReasoningGym-v0` lists them by
    category). Each reset draws an entry; the reward is the generator's own
    ``score_answer`` on the model's final answer.

    ## Action Space
    Text: one final answer, ``<answer>...</answer>`` or ``\\boxed{...}``
    (``<think>...</think>`` is ignored). A reply with several answer tags or
    several boxes is refused, as is an answer over 10,000 characters or one
    that holds the whole question.

    ## Observation Space
    Text: the generator's question and how to answer (characters outside ASCII
    written as Python escapes, ``\\xd7``, which an answer may use too); after a wrong answer
    (``max_turns`` > 1), that it was not right and its score, never the answer.

    ## Starting State
    Entry ``i`` of the generator, ``i`` drawn from the reset's seed: the entry
    reasoning-gym's ``create_dataset(task, seed=i, size=1)[0]`` gives.

    ## Rewards
    ``score``: by default 1 when the scorer gives full marks and 0 otherwise;
    with ``partial_credit=True`` the last answer's own score in [0, 1], except
    where the answer holds the gold answer with more besides (the scorers'
    substring partial credit, which pays hedges). Only the episode's last answer
    is paid: a wrong answer with turns left scores 0 and the model retries.
    ``format``: -0.1 for a reply with no answer or a refused one. ``info`` has
    ``state_key``, ``grade`` (``{"score": the scorer's raw score}`` after an
    answer) and ``privileged`` (``answer``: the entry's answer, or an example of a
    right one).

    ## Episode End
    Terminated by full marks or by the last of ``max_turns`` replies (whatever
    it holds); never truncated.

    ## Arguments
    ``task`` (default ``leg_counting``), ``task_config``: the generator's config
    fields (``{"max_animals": 5}``; not ``seed`` or ``size``), ``max_turns`` (1
    to 100, default 1), ``partial_credit`` (default False).
    ``reset(options={"task_id": "leg_counting-42"})`` replays entry 42.

    ## Version History
    * v0: initial version (reasoning-gym 0.1.25).
    """

    presets: ClassVar[dict[str, ReasoningPreset]] = {"standard": ReasoningPreset()}
    snapshot_exclude: ClassVar[tuple[str, ...]] = ()
    system_prompt: ClassVar[str] = (
        "Answer the question. Think first if you like, then give exactly one final answer "
        "in <answer>...</answer> tags (or \\boxed{...}), in the form the question asks for."
    )

    def __init__(
        self,
        *,
        task: str = "leg_counting",
        task_config: dict[str, Any] | None = None,
        partial_credit: bool = False,
        difficulty: str = "standard",
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(difficulty=difficulty, render_mode=render_mode, max_turns=max_turns)
        self.task, self.task_config = tasks.check_task(task, task_config)
        if not isinstance(partial_credit, bool):
            raise TypeError(f"partial_credit must be True or False, got {partial_credit!r}")
        self.partial_credit = partial_credit
        self.index = 0
        self.item: dict[str, Any] | None = None
        self.last_score: float | None = None

    def _new_task(self, options: dict[str, Any]) -> str:
        if "task_id" in options:
            self.index = self._index_from_id(options["task_id"])
        else:
            self.index = int(self.np_random.integers(0, MAX_INDEX + 1))
        self.item = tasks.entry(self.task, self.task_config, self.index)
        self.task_id = f"{self.task}-{self.index}"
        self.last_score = None
        question = str(self.item["question"])
        hint = _HINT
        if not set(question) <= _ASCII:  # an observation is printable ASCII
            question = question.encode("ascii", "backslashreplace").decode("ascii")
            question = "".join(c if c in _ASCII else f"\\x{ord(c):02x}" for c in question)
            hint = f"{_HINT} {_ESCAPED_NOTE}"
        text = f"{question}\n\n{hint}"
        if len(text) > OBSERVATION_MAX_LENGTH:
            raise ValueError(
                f"{self.task} made a question of {len(question):,} characters, over the "
                f"{OBSERVATION_MAX_LENGTH:,} an observation may hold; choose a smaller task_config"
            )
        return text

    def _index_from_id(self, task_id: Any) -> int:
        task, _, index = str(task_id).rpartition("-")
        if task != self.task or not index.isdigit() or int(index) > MAX_INDEX:
            raise ValueError(
                f"this env's task ids look like {self.task}-42 (the entry's index, 0 to "
                f"{MAX_INDEX}), got {quote_for_feedback(str(task_id))}"
            )
        return int(index)

    def _act(self, action: str) -> Turn:
        body = strip_think(action)
        lowered = body.lower()
        if lowered.count("<answer>") > 1 or (
            "<answer>" not in lowered and body.count("\\boxed{") > 1
        ):
            return self._invalid("Your reply holds several answers; give exactly one. " + _HINT)
        parsed = parse_answer(body)
        if not parsed.ok or not parsed.value:
            return self._invalid(f"{parsed.error or 'Your answer is empty.'} {_HINT}")
        answer = _unescape(parsed.value)
        refused = tasks.refusal(self.task, answer)
        question = str(self.item["question"]).strip()
        if refused is None and question and question in answer:
            refused = "the answer holds the whole question"
        if refused is not None:
            return self._invalid(f"Your answer was not scored: {refused}. {_HINT}")
        raw = tasks.score(self.task, self.task_config, answer, self.item)
        self.last_score = raw
        solved = raw >= FULL_MARKS
        last_turn = self.turn + 1 >= self.max_turns
        paid = 1.0 if solved else self._partial(raw, answer) if last_turn else 0.0
        grade = {"grade": {"score": raw}}
        if solved:
            return Turn("Correct.", {"score": 1.0}, terminated=True, success=True, extra_info=grade)
        shown = quote_for_feedback(answer, 60)
        if last_turn:
            reply = f"Your answer {shown} is not right (score {raw:.2f} of 1)."
            return Turn(reply, {"score": paid}, terminated=True, extra_info=grade)
        reply = f"Your answer {shown} is not right (score {raw:.2f} of 1). Try again. {_HINT}"
        return Turn(reply, {"score": 0.0}, extra_info=grade)

    def _partial(self, raw: float, answer: str) -> float:
        """What a score short of full marks pays on the last turn."""
        if not self.partial_credit:
            return 0.0
        gold = tasks.oracle_answer(self.task, self.item)
        if gold and gold in answer and answer != gold:
            return 0.0  # the scorers' substring credit: an answer that lists options
        return raw

    def _invalid(self, text: str) -> Turn:
        # The last reply ends the episode as an answer does (terminated, not truncated:
        # the question has had its answers; Gymnasium's checker expects this of one turn).
        last_turn = self.turn + 1 >= self.max_turns
        components = {"score": 0.0, "format": -FORMAT_PENALTY}
        return Turn(text, components, terminated=last_turn, action_valid=False)

    def _task_info(self) -> dict[str, Any]:
        if self.item is None:
            return {}
        return {
            "state_key": f"{self.task_id}|turn:{self.turn}",
            "privileged": {"answer": tasks.oracle_answer(self.task, self.item)},
        }

    @classmethod
    def manual_appendix(cls) -> str:
        """The installed reasoning-gym's tasks by category (`envgym info` prints it)."""
        lines = [f"## Tasks (reasoning-gym {tasks.version()})"]
        for category, names in tasks.categories().items():
            lines.append(f"* {category} ({len(names)}): {', '.join(names)}")
        lines += [f"* not available: {n} ({why})" for n, why in tasks.UNAVAILABLE.items()]
        return "\n".join(lines)


def _unescape(answer: str) -> str:
    """An answer with the observation's escapes (``\\u00d7``) read as the characters."""
    if "\\" not in answer:
        return answer

    def char(match: re.Match[str]) -> str:
        code = int(match[1][1:], 16)
        return chr(code) if code <= 0x10FFFF else match[0]

    return _ESCAPE.sub(char, answer)
