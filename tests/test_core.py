"""TextEnv's own machinery: replay-based forking, action coercion, feedback quoting."""

from __future__ import annotations

import pickle
from typing import Any, ClassVar

import pytest

from envgym.core import CHARSET, TextEnv, Turn, coerce_action, quote_for_feedback

# Stands in for state that lives outside the env object (a sandbox's files):
# snapshot() cannot copy it, so the env forks by replaying its actions.
EXTERNAL_STORE: dict[int, list[int]] = {}


class CounterEnv(TextEnv):
    """Adds numbers to a running total kept outside the env; reach the target to win.

    ## Description / Action Space / Observation Space / Starting State / Rewards /
    Episode End / Arguments / Version History: a test double, see the test file.
    """

    fork_by_replay: ClassVar[bool] = True
    default_max_turns: ClassVar[int] = 20

    def _new_task(self, options: dict[str, Any]) -> str:
        EXTERNAL_STORE[id(self)] = []
        self.target = int(self.np_random.integers(20, 40))
        self.task_id = f"target-{self.target}"
        return f"Reach {self.target}."

    def _act(self, action: str) -> Turn:
        total = EXTERNAL_STORE[id(self)]
        try:
            value = int(action)
        except ValueError:
            return Turn(f"Not a number. Total {sum(total)}.", {"format": -1.0}, action_valid=False)
        # Randomness mid-episode, so replay must also restore the RNG.
        noise = int(self.np_random.integers(0, 3))
        total.append(value + noise)
        done = sum(total) >= self.target
        return Turn(f"Total {sum(total)}.", {"progress": float(value + noise)}, done, done)

    def _task_info(self) -> dict[str, Any]:
        return {"state_key": f"{self.task_id}:{sum(EXTERNAL_STORE.get(id(self), []))}"}


def test_fork_by_replay_restores_external_state_and_rng():
    env = CounterEnv()
    env.reset(seed=4)
    for action in ("3", "oops", "1", "2", "1"):  # several draws: a wrong RNG would show
        env.step(action)
    snap = env.snapshot()
    later = [env.step(a) for a in ("2", "5", "1")]
    env.step("9")  # wander off
    env.restore(snap)
    assert [env.step(a) for a in ("2", "5", "1")] == later
    # The snapshot is plain data: it restores into another instance too.
    other = CounterEnv()
    other.reset(seed=999)
    other.restore(pickle.loads(pickle.dumps(snap)))
    assert other.turn == 5
    assert [other.step(a) for a in ("2", "5", "1")] == later


def test_fork_by_replay_after_an_unseeded_reset():
    env = CounterEnv()
    env.reset(seed=1)
    env.reset()  # the next task comes from the running RNG, not a seed
    env.step("4")
    snap = env.snapshot()
    first = env.step("6")
    env.restore(snap)
    assert env.step("6") == first


def test_restore_rejects_foreign_objects():
    env = CounterEnv()
    env.reset(seed=0)
    with pytest.raises(TypeError, match="snapshot"):
        env.restore({"turn": 3})


def test_bad_constructor_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="max_turns must be an integer from 1 to 100000"):
        CounterEnv(max_turns=0)
    with pytest.raises(ValueError, match="render_mode"):
        CounterEnv(render_mode="rgb_array")


@pytest.mark.parametrize("max_turns", [10**12, 2.5, True, "30"])
def test_max_turns_is_a_bounded_whole_number(max_turns):
    with pytest.raises(ValueError, match=r"max_turns must be an integer from 1 to 100000 \(turns"):
        CounterEnv(max_turns=max_turns)


def test_hostile_reset_options_are_refused_without_echoing_them_whole():
    env = CounterEnv()
    with pytest.raises(ValueError, match="unknown reset option") as error:
        env.reset(options={f"option{i}": i for i in range(100_000)})
    assert len(str(error.value)) < 300
    with pytest.raises(ValueError, match="unknown difficulty") as error:
        env.reset(options={"difficulty": "x" * 1_000_000})
    assert len(str(error.value)) < 300


@pytest.mark.parametrize(
    "action,expected",
    [("Up", "Up"), (b"Up", "Up"), (b"\xff", "\ufffd"), (None, ""), (7, "7"), (["a"], "['a']")],
)
def test_coerce_action(action, expected):
    assert coerce_action(action) == expected


def test_coerce_action_survives_a_broken_str():
    class Broken:
        def __str__(self):
            raise RuntimeError("boom")

    assert coerce_action(Broken()) == "<unprintable Broken>"


@pytest.mark.parametrize("text", ["plain", "a'b\"c", "🙂 naïve\n\t\x00", "x" * 500, "\ud800"])
def test_quoted_feedback_stays_in_the_charset_and_short(text):
    quoted = quote_for_feedback(text, limit=40)
    assert all(c in CHARSET for c in quoted)
    assert "\n" not in quoted
    assert len(quoted) < 40 * 6
