"""envgym/GuessNumber-v0: the env of docs/writing-an-env.md, whole."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from envgym.core import Preset, TextEnv, Turn, check_int, setting, short_repr
from envgym.parsing import parse_answer

MAX_HIGH = 10**9
_TASK_ID = re.compile(r"^(\d{1,10})-(\d{1,10})$")


@dataclass(frozen=True)
class GuessPreset(Preset):
    high: int = setting(100, 2, MAX_HIGH, "the secret is from 1 to high")


class GuessNumberEnv(TextEnv):
    """Guess a secret number; each wrong guess is answered "higher" or "lower".

    ## Description
    Halving the range each turn finds the secret in ceil(log2(high + 1)) guesses.

    ## Action Space
    Text: one integer in answer tags, ``<answer>50</answer>`` (``\\boxed{50}``
    also works; ``<think>...</think>`` is ignored).

    ## Observation Space
    Text: the task at reset, then "Higher.", "Lower." or what was wrong.

    ## Starting State
    A secret drawn uniformly from 1 to ``high`` with the reset's seed.

    ## Rewards
    ``solved`` +1 for the secret; ``format`` -0.1 for a reply with no integer.
    ``info`` has ``state_key`` (task and the range the hints leave) and
    ``privileged`` (``secret``).

    ## Episode End
    Terminated when the secret is guessed; truncated after ``max_turns``.

    ## Arguments
    ``difficulty``: ``easy`` (1-100, 10 turns), ``medium`` (1-10,000, 20) or
    ``hard`` (1-1,000,000, 25). ``high`` (2 to 10**9) and ``max_turns`` (1 to
    100,000) override it. ``reset(options={"task_id": "100-42"})`` replays a
    task (``HIGH-SECRET``).

    ## Version History
    * v0: initial version.
    """

    presets: ClassVar[dict[str, GuessPreset]] = {
        "easy": GuessPreset(high=100, max_turns=10),
        "medium": GuessPreset(high=10_000, max_turns=20),
        "hard": GuessPreset(high=1_000_000, max_turns=25),
    }
    system_prompt: ClassVar[str] = (
        "Guess the secret number. After each wrong guess you are told to go higher or "
        "lower. Reply with one number in answer tags, e.g. <answer>50</answer>."
    )
    fast_calls: ClassVar[bool] = True

    def _new_task(self, options: dict[str, Any]) -> str:
        if "task_id" in options:
            match = _TASK_ID.match(str(options["task_id"]))
            if match is None:
                raise ValueError(f"task ids look like 100-42, got {short_repr(options['task_id'])}")
            high = check_int(int(match[1]), "high", 2, MAX_HIGH)
            self.secret = check_int(int(match[2]), "secret", 1, high)
        else:
            high = self.config.high
            self.secret = int(self.np_random.integers(1, high + 1))
        self.task_id = f"{high}-{self.secret}"
        self.low, self.high = 1, high  # what the hints have ruled out so far
        return f"I am thinking of a number from 1 to {high}. Guess it."

    def _act(self, action: str) -> Turn:
        parsed = parse_answer(action, example="50")
        text = (parsed.value or "").strip()
        if not parsed.ok or not text.isdigit() or len(text) > 10:
            error = parsed.error or "Your answer must be one whole number, like 50."
            return Turn(error, {"format": -0.1}, action_valid=False)
        guess = int(text)
        if guess == self.secret:
            return Turn(f"Yes, it is {guess}!", {"solved": 1.0}, terminated=True, success=True)
        if guess < self.secret:
            self.low = max(self.low, guess + 1)
            return Turn("Higher.", {"solved": 0.0})
        self.high = min(self.high, guess - 1)
        return Turn("Lower.", {"solved": 0.0})

    def _task_info(self) -> dict[str, Any]:
        return {
            "state_key": f"{self.task_id}:{self.low}-{self.high}",
            "privileged": {"secret": self.secret},
        }
