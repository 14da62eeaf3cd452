"""Evaluation: results files, seeds, replay, confidence intervals, input errors.

Most tests use `GuessEnv`, a tiny number-guessing env defined here, so they
do not depend on any shipped env; `test_real_env_*` run the registered ids.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import envgym
from envgym.core import TextEnv, Turn
from envgym.evaluation import (
    EvaluationError,
    ResultsFileError,
    env_hash,
    env_source_files,
    evaluate,
    load_results,
    load_schema,
    mean_ci95,
    replay_episode,
    summarize,
    t_critical_95,
    validate_results,
    verify_results,
    wilson_ci95,
    write_results,
)
from envgym.parsing import parse_answer
from envgym.registry import EnvSpec, list_envs

GUESS_ID = "envgym-test/Guess-v0"


class GuessEnv(TextEnv):
    """Guess the secret number.

    Description: a secret whole number is drawn from 1..N (N = 8, 32, 128 for
    easy, medium, hard). Each turn, guess one; the reply says higher or lower.

    Rewards: +1 for the right number, -0.1 per wrong guess, -0.2 for a reply
    that is not <answer>NUMBER</answer>.

    Episode End: the right guess, or the turn limit (10 by default).
    """

    ranges = {"easy": 8, "medium": 32, "hard": 128}
    default_max_turns = 10
    system_prompt = "Reply with <answer>NUMBER</answer>."

    def __init__(
        self, *, difficulty: str = "easy", max_turns: int | None = None, render_mode=None
    ) -> None:
        super().__init__(difficulty=difficulty, max_turns=max_turns, render_mode=render_mode)
        self.high = self.ranges[self.difficulty]
        self.secret = 0

    def _new_task(self, options: dict[str, Any]) -> str:
        self.high = self.ranges[self.difficulty]
        self.secret = int(self.np_random.integers(1, self.high + 1))
        self.task_id = f"{self.difficulty}-{self.secret}"
        return f"Guess a number from 1 to {self.high}."

    def _act(self, action: str) -> Turn:
        parsed = parse_answer(action, example="5")
        if not parsed.ok or not parsed.value.isdigit():
            error = parsed.error or "Your answer is not a whole number."
            return Turn(f"Invalid reply. {error}", {"invalid": -0.2}, action_valid=False)
        guess = int(parsed.value)
        if guess == self.secret:
            return Turn("Correct!", {"solved": 1.0}, terminated=True, success=True)
        hint = "higher" if guess < self.secret else "lower"
        return Turn(f"{guess} is wrong; the number is {hint}.", {"step": -0.1})

    def _task_info(self) -> dict[str, Any]:
        return {
            "admissible_actions": [str(i) for i in range(1, self.high + 1)],
            "state_key": f"{self.task_id}:{self.turn}",
        }


class GuessOracle:
    """Binary search, from the observations only."""

    name = "oracle"

    def __init__(self, env: GuessEnv) -> None:
        self.lo, self.hi, self.last = 1, 0, 0

    def reset(self) -> None:
        self.lo, self.hi, self.last = 1, 0, 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.hi == 0:
            self.hi = int(re.search(r"from 1 to (\d+)", observation).group(1))
        elif "higher" in observation:
            self.lo = self.last + 1
        elif "lower" in observation:
            self.hi = self.last - 1
        self.last = (self.lo + self.hi) // 2
        return f"<think>between {self.lo} and {self.hi}</think><answer>{self.last}</answer>"


GUESS_SPEC = EnvSpec(
    id=GUESS_ID,
    entry_point=f"{GuessEnv.__module__}:GuessEnv",
    description="Guess a secret number from higher/lower hints",
    tags=("test", "multi-turn"),
    oracle=f"{GuessOracle.__module__}:GuessOracle",
)


@contextlib.contextmanager
def registered(*specs: EnvSpec) -> Iterator[None]:
    """`envgym.register` each of `specs`, and unregister them when the block ends."""
    try:
        for spec in specs:
            envgym.register(spec)
        yield
    finally:
        for spec in specs:
            if spec.id in {s.id for s in list_envs()}:
                envgym.unregister(spec.id)


@pytest.fixture
def guess_env() -> Iterator[str]:
    with registered(GUESS_SPEC):
        yield GUESS_ID


# ------------------------------------------------------------ results files
def test_results_file_has_the_documented_shape_and_validates(guess_env, tmp_path):
    results = evaluate(guess_env, "oracle", episodes=3, seed=0, env_kwargs={"difficulty": "medium"})
    jsonschema.Draft202012Validator(load_schema()).validate(results)
    assert results["schema_version"] == 2
    assert (results["seed"], results["num_episodes"]) == (0, 3)
    assert results["env_id"] == GUESS_ID
    assert results["env_version"] == f"v0+envgym-{envgym.__version__}"
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", results["env_hash"])
    assert results["env_kwargs"] == {"difficulty": "medium"}
    assert results["agent"] == {"name": "oracle"}
    episode = results["episodes"][0]
    assert set(episode) >= {"seed", "actions", "rewards", "return", "success", "turns"}
    assert episode["actions"][0].startswith("<think>")  # the raw reply, not the parsed move
    assert episode["turns"] == len(episode["actions"]) == len(episode["rewards"])
    assert episode["return"] == pytest.approx(sum(episode["rewards"]))
    summary = results["summary"]
    assert summary["episodes"] == 3
    assert summary["success_rate"] == 1.0  # binary search needs at most 5 guesses for 32

    path = write_results(results, tmp_path / "nested" / "results.json")
    assert load_results(path) == json.loads(json.dumps(results))


def test_schema_is_shipped_as_package_data():
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_design_example_is_a_valid_results_file(tmp_path):
    example = {
        "schema_version": 1,
        "env_id": "envgym/Sokoban-v0",
        "env_version": "v0+envgym-0.1.0",
        "env_hash": "sha256:" + "0" * 64,
        "env_kwargs": {},
        "agent": {"name": "oracle"},
        "episodes": [
            {
                "seed": 0,
                "actions": ["<answer>Up</answer>"],
                "rewards": [0.0],
                "return": 0.0,
                "success": True,
                "turns": 1,
            }
        ],
        "summary": {"episodes": 1, "success_rate": 1.0, "mean_return": 0.0, "ci95": [0.0, 0.0]},
    }
    path = tmp_path / "example.json"
    path.write_text(json.dumps(example))
    assert load_results(path) == example


@pytest.mark.parametrize(
    ("break_it", "field"),
    [
        (lambda r: r["episodes"][1].__setitem__("seed", "one"), "episodes[1].seed"),
        (lambda r: r.pop("env_hash"), "env_hash"),
        (lambda r: r["summary"].__setitem__("ci95", [0.0]), "summary.ci95"),
        (lambda r: r["agent"].pop("name"), "agent"),
        (lambda r: r["episodes"][0]["rewards"].append(1.0), "episodes[0]"),
        (lambda r: r["episodes"][2].__setitem__("return", 99.0), "episodes[2].return"),
        (lambda r: r["summary"].__setitem__("episodes", 7), "summary.episodes"),
        (lambda r: r.__setitem__("schema_version", 3), "schema_version"),
    ],
)
def test_load_results_names_the_wrong_field(guess_env, tmp_path, break_it, field):
    results = evaluate(guess_env, "random", episodes=3, seed=0)
    broken = copy.deepcopy(results)
    break_it(broken)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(ResultsFileError) as excinfo:
        load_results(path)
    assert field in str(excinfo.value)
    assert str(path) in str(excinfo.value)


def test_load_results_explains_unreadable_files(tmp_path):
    with pytest.raises(ResultsFileError, match="no such results file"):
        load_results(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1,')
    with pytest.raises(ResultsFileError, match="not valid JSON.*line 1"):
        load_results(bad)


def test_write_results_refuses_an_invalid_file_and_leaves_nothing(guess_env, tmp_path):
    results = evaluate(guess_env, "random", episodes=2, seed=0)
    results["episodes"][0]["success"] = "yes"
    with pytest.raises(ResultsFileError, match=r"episodes\[0\].success"):
        write_results(results, tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ seeds
def test_each_episode_uses_the_next_seed(guess_env):
    results = evaluate(guess_env, "random", episodes=4, seed=5)
    assert [ep["seed"] for ep in results["episodes"]] == [5, 6, 7, 8]
    # Episode i is exactly what a one-episode run from seed 5 + i gives.
    for i, episode in enumerate(results["episodes"]):
        alone = evaluate(guess_env, "random", episodes=1, seed=5 + i)["episodes"][0]
        assert alone == episode


def test_same_arguments_give_the_same_episodes(guess_env):
    first = evaluate(guess_env, "random", episodes=6, seed=3, env_kwargs={"difficulty": "hard"})
    second = evaluate(guess_env, "random", episodes=6, seed=3, env_kwargs={"difficulty": "hard"})
    assert first["episodes"] == second["episodes"]
    other = evaluate(guess_env, "random", episodes=6, seed=4, env_kwargs={"difficulty": "hard"})
    assert other["episodes"] != first["episodes"]


def test_random_agent_does_not_share_the_env_random_stream(guess_env):
    # Seeded with the env's own seed, the random agent's first pick would be the secret.
    results = evaluate(guess_env, "random", episodes=40, seed=0, env_kwargs={"difficulty": "hard"})
    assert results["summary"]["success_rate"] < 0.3  # about 8% by chance: 10 tries out of 128
    assert all(ep["agent_seed"] != ep["seed"] for ep in results["episodes"])


def test_progress_is_reported_per_episode(guess_env):
    calls = []
    evaluate(
        guess_env, "random", episodes=3, progress=lambda done, total: calls.append((done, total))
    )
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_env_kwargs_reach_the_env(guess_env):
    results = evaluate(guess_env, "random", episodes=5, env_kwargs={"max_turns": 2})
    assert all(ep["turns"] <= 2 for ep in results["episodes"])
    assert results["difficulty"] == "easy"


# ----------------------------------------------------------------- replay
def test_replaying_recorded_actions_reproduces_the_rewards(guess_env):
    results = evaluate(
        guess_env, "random", episodes=5, seed=11, env_kwargs={"difficulty": "medium"}
    )
    for i, episode in enumerate(results["episodes"]):
        replay = replay_episode(results, i)
        assert replay.matches, replay.problems
        assert replay.rewards == episode["rewards"]
        assert replay.success == episode["success"]
    assert all(r.matches for r in verify_results(results))


def test_replay_catches_a_doctored_file(guess_env):
    results = evaluate(guess_env, "random", episodes=5, seed=0, env_kwargs={"difficulty": "hard"})
    failed = next(i for i, ep in enumerate(results["episodes"]) if not ep["success"])
    forged = copy.deepcopy(results)
    forged["episodes"][failed]["rewards"][-1] = 1.0  # claim the last guess was right
    forged["episodes"][failed]["success"] = True
    replay = replay_episode(forged, failed)
    assert not replay.matches
    assert any("reward" in p for p in replay.problems)
    assert any("success" in p for p in replay.problems)

    extra = copy.deepcopy(results)
    extra["episodes"][0]["actions"].append("<answer>1</answer>")
    assert any("ended after" in p for p in replay_episode(extra, 0).problems)


def test_replay_catches_a_changed_seed(guess_env):
    results = evaluate(guess_env, "oracle", episodes=1, seed=0, env_kwargs={"difficulty": "hard"})
    other = evaluate(guess_env, "oracle", episodes=1, seed=1, env_kwargs={"difficulty": "hard"})
    assert other["episodes"][0]["task_id"] != results["episodes"][0]["task_id"]
    moved = copy.deepcopy(results)
    moved["episodes"][0]["seed"] = 1  # the same guesses now aim at another secret number
    assert not replay_episode(moved, 0).matches


def test_replay_reproduces_the_oracle_after_a_json_round_trip(guess_env, tmp_path):
    results = evaluate(guess_env, "oracle", episodes=4, seed=0, env_kwargs={"difficulty": "hard"})
    path = write_results(results, tmp_path / "oracle.json")
    loaded = load_results(path)
    assert [replay_episode(loaded, i).matches for i in range(4)] == [True] * 4


# ------------------------------------------------------------- statistics
def test_t_critical_values_match_tables():
    assert t_critical_95(1) == pytest.approx(12.706, abs=1e-3)
    assert t_critical_95(4) == pytest.approx(2.776, abs=1e-3)
    assert t_critical_95(30) == pytest.approx(2.042, abs=1e-3)
    assert t_critical_95(10_000) == pytest.approx(1.960, abs=1e-3)


def test_mean_ci95_known_values():
    mean, low, high = mean_ci95([1.0, 2.0, 3.0, 4.0])
    half = 3.182446 * 1.2909944 / 2
    assert (mean, low, high) == pytest.approx((2.5, 2.5 - half, 2.5 + half), abs=1e-4)
    assert mean_ci95([3.0]) == (3.0, 3.0, 3.0)
    assert mean_ci95([2.0, 2.0, 2.0]) == (2.0, 2.0, 2.0)


def test_wilson_interval_known_values():
    assert wilson_ci95(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    low, high = wilson_ci95(0, 20)
    assert low == 0.0 and 0.0 < high < 0.2
    low, high = wilson_ci95(20, 20)
    assert high == 1.0 and 0.8 < low < 1.0


def test_confidence_intervals_shrink_with_more_episodes_and_contain_the_mean(guess_env):
    kwargs = {"difficulty": "medium"}
    widths, success_widths = [], []
    for n in (5, 20, 80):
        summary = evaluate(guess_env, "random", episodes=n, seed=0, env_kwargs=kwargs)["summary"]
        low, high = summary["ci95"]
        assert low < summary["mean_return"] < high
        s_low, s_high = summary["success_ci95"]
        assert s_low <= summary["success_rate"] <= s_high
        widths.append(high - low)
        success_widths.append(s_high - s_low)
    assert widths[0] > widths[1] > widths[2]
    assert success_widths[0] > success_widths[1] > success_widths[2]


def test_single_episode_and_zero_variance_give_a_point_interval(guess_env):
    one = evaluate(guess_env, "random", episodes=1)["summary"]
    assert one["ci95"] == [one["mean_return"], one["mean_return"]]
    # Every return the same: no spread, so the interval is the mean itself.
    episodes = [{"return": 1.0, "success": True, "turns": 1}] * 4
    assert summarize(episodes)["ci95"] == [1.0, 1.0]


# ------------------------------------------------------------- bad input
def test_unknown_env_id_names_close_matches(guess_env):
    with pytest.raises(KeyError) as excinfo:
        evaluate("envgym/Sokobn-v0")
    message = excinfo.value.args[0]
    assert "envgym/Sokoban-v0" in message and "envgym list" in message


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"agent_name": "gpt-9"}, "unknown agent 'gpt-9'; choose one of random, oracle"),
        ({"episodes": 0}, "episodes must be a whole number >= 1"),
        ({"seed": -1}, "seed must be a whole number >= 0"),
        ({"env_kwargs": {"difficulty": "nightmare"}}, "choose one of.*easy"),
        ({"env_kwargs": {"colour": "red"}}, "envgym info"),
        ({"env_kwargs": {"f": object()}}, "JSON values"),
    ],
)
def test_bad_input_fails_before_any_episode(guess_env, kwargs, match):
    calls = []
    with pytest.raises(EvaluationError, match=match):
        evaluate(guess_env, progress=lambda d, t: calls.append(d), **kwargs)
    assert calls == []


def test_unwritable_out_path_fails_before_any_episode(guess_env, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    calls = []
    with pytest.raises(EvaluationError, match="cannot create the folder"):
        evaluate(guess_env, out=blocker / "results.json", progress=lambda d, t: calls.append(d))
    with pytest.raises(EvaluationError, match="is a folder"):
        evaluate(guess_env, out=tmp_path, progress=lambda d, t: calls.append(d))
    assert calls == []


def test_oracle_on_an_env_without_one_says_to_use_random():
    with registered(dataclasses.replace(GUESS_SPEC, oracle=None)):
        with pytest.raises(EvaluationError, match="no oracle agent; use --agent random"):
            evaluate(GUESS_ID, "oracle")


# ------------------------------------------------------------------ hashing
HASHED_SPEC = EnvSpec(
    id="envgym-test/Hashed-v0", entry_point="hashed_env_pkg:Env", description="", tags=()
)


@pytest.fixture
def hashed_env_id() -> Iterator[str]:
    """The id of ``hashed_env_pkg:Env``, registered for one test (`make_hashed_env` writes it)."""
    with registered(HASHED_SPEC):
        yield HASHED_SPEC.id


def make_hashed_env(
    monkeypatch: pytest.MonkeyPatch, folder: Path, files: dict[str, str] | None = None
) -> str:
    """Write the package ``hashed_env_pkg`` into `folder` and put it on the path, for
    the id `hashed_env_id` registers.

    The env module imports a sibling inside a function, through a relative import.
    """
    package = folder / "hashed_env_pkg"
    package.mkdir(parents=True)
    sources = {
        "__init__.py": "from hashed_env_pkg.env import Env\n",
        "env.py": """\
            class Env:
                def step(self, action):
                    from .rules import reward

                    return reward(action)
            """,
        "rules.py": "def reward(action):\n    return 1.0\n",
        "unused.py": "VALUE = 1\n",
        **(files or {}),
    }
    for name, text in sources.items():
        (package / name).write_text(textwrap.dedent(text))
    for name in [m for m in sys.modules if m.partition(".")[0] == "hashed_env_pkg"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(folder))
    return HASHED_SPEC.id


def test_env_hash_changes_with_the_code_the_env_runs_only(tmp_path, monkeypatch, hashed_env_id):
    env_id = make_hashed_env(monkeypatch, tmp_path)
    package = tmp_path / "hashed_env_pkg"
    before = env_hash(env_id)
    assert env_hash(env_id) == before
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "env.cpython-311.pyc").write_bytes(b"\0compiled")
    (package / ".notes.txt").write_text("hidden")
    (package / "unused.py").write_text("VALUE = 2\n")
    assert env_hash(env_id) == before  # caches, hidden files and code it never imports
    (package / "rules.py").write_text("def reward(action):\n    return 2.0\n")
    assert env_hash(env_id) != before  # imported inside a function, relatively
    (package / "rules.py").write_text("def reward(action):\n    return 1.0\n")
    assert env_hash(env_id) == before
    (package / "levels.txt").write_text("#####\n")
    assert env_hash(env_id) != before  # data files shape the env too


def test_env_hash_covers_the_envgym_modules_an_env_imports(tmp_path, monkeypatch, hashed_env_id):
    plain = make_hashed_env(monkeypatch, tmp_path / "plain")
    assert not any(name.startswith("envgym/") for name in env_source_files(plain))
    parsed = make_hashed_env(
        monkeypatch,
        tmp_path / "parsed",
        {"rules.py": "from envgym.parsing import parse_answer\n\nreward = parse_answer\n"},
    )
    files = env_source_files(parsed)
    # parsing.py imports text.py: the envgym code is followed through its own imports.
    assert {"envgym/parsing.py", "envgym/text.py", "hashed_env_pkg/rules.py"} <= set(files)
    assert files["envgym/parsing.py"].read_bytes() == Path(envgym.parsing.__file__).read_bytes()


def test_env_hash_is_the_same_wherever_the_code_lives(tmp_path, monkeypatch, hashed_env_id):
    first = env_hash(make_hashed_env(monkeypatch, tmp_path / "one"))
    second = env_hash(make_hashed_env(monkeypatch, tmp_path / "elsewhere" / "two"))
    assert first == second


def test_real_env_source_files_follow_imports_not_folders():
    sokoban = env_source_files("envgym/Sokoban-v0")
    assert {
        "envgym/core.py",
        "envgym/parsing.py",
        "envgym/envs/sokoban/sokoban.py",
        "envgym/envs/sokoban/level.py",
    } <= set(sokoban)
    assert "envgym/envs/games/versus.py" not in sokoban  # only games play an opponent
    tictactoe = env_source_files("envgym/TicTacToe-v0")
    assert {"envgym/envs/games/board.py", "envgym/envs/games/versus.py"} <= set(tictactoe)
    assert "envgym/selfplay.py" not in tictactoe  # the trainers' helpers, not the env's
    assert "envgym/envs/games/kuhn_poker.py" not in tictactoe
    assert "envgym/envs/games/connect_four.py" not in tictactoe
    assert all(path.is_file() for path in tictactoe.values())
    assert env_hash("envgym/TicTacToe-v0") != env_hash("envgym/ConnectFour-v0")


def test_real_env_hash_is_stable_across_processes():
    ids = ["envgym/Sokoban-v0", "envgym/TicTacToe-v0"]
    code = f"from envgym.evaluation import env_hash; print([env_hash(i) for i in {ids!r}])"
    hashes = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    ]
    assert hashes[0] == hashes[1] == str([env_hash(i) for i in ids])


# -------------------------------------------------------------- real envs
@pytest.mark.parametrize("spec", list_envs(), ids=lambda s: s.id)
def test_real_env_oracle_and_random_results_replay(spec, tmp_path):
    for difficulty in spec.difficulties:
        for agent in ("random", "oracle") if spec.oracle else ("random",):
            results = evaluate(
                spec.id, agent, episodes=3, seed=0, env_kwargs={"difficulty": difficulty}
            )
            path = write_results(results, tmp_path / f"{difficulty}-{agent}.json")
            loaded = load_results(path)
            for replay in verify_results(loaded):
                assert replay.matches, (difficulty, agent, replay.problems)
    assert env_hash(spec.id) == results["env_hash"]


def test_real_env_hashes_differ_between_envs():
    specs = list_envs()
    assert len({env_hash(s.id) for s in specs}) == len(specs)


def test_results_path_is_relative_to_cwd(guess_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    evaluate(guess_env, "random", episodes=1, out="plain.json")
    assert load_results(Path("plain.json"))["episodes"][0]["seed"] == 0


def test_validation_messages_say_what_is_wrong(guess_env):
    results = evaluate(guess_env, "random", episodes=2, seed=0)
    validate_results(results)
    missing = copy.deepcopy(results)
    del missing["summary"]
    with pytest.raises(ResultsFileError, match="field summary is missing"):
        validate_results(missing)
    with pytest.raises(ResultsFileError, match="holds a JSON object, not an array"):
        validate_results([results])
    negative = copy.deepcopy(results)
    negative["episodes"][1]["seed"] = -3
    with pytest.raises(ResultsFileError, match=r"field episodes\[1\].seed: -3 is less than"):
        validate_results(negative)
    future = {**copy.deepcopy(results), "schema_version": 3, "episodes": "elsewhere"}
    expected = "schema_version is 3; this envgym .* reads schema_version 2"
    with pytest.raises(ResultsFileError, match=expected):
        validate_results(future)
