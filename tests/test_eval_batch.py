"""Batched evaluation (`evaluate_many`, `envgym eval` on many ids): the same
results as one `evaluate` per env, the seeds asked for, and the CLI's files and
table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import envgym.evaluation.play as play_module
from envgym.cli import main
from envgym.envs.guess_number.oracle import GuessNumberOracle
from envgym.evaluation import EvaluationError, evaluate, load_results, validate_results
from envgym.evaluation.batch import evaluate_many
from envgym.evaluation.play import play
from envgym.vector import TextVectorEnv

GUESS = "envgym/GuessNumber-v0"
LAKE = "envgym/FrozenLake-v0"
MATH = "envgym/PythonMath-v0"  # its oracle reads the env's current problem
SOKOBAN = "envgym/Sokoban-v0"


def _without_date(results: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in results.items() if k != "created_at"}


def _reference(jobs, agent: str, episodes: int, seed: int) -> list[dict[str, Any]]:
    return [evaluate(env_id, agent, episodes, seed, env_kwargs=kw) for env_id, kw in jobs]


@pytest.mark.parametrize("agent", ["random", "oracle"])
def test_batched_results_equal_one_evaluate_per_env(agent):
    jobs = [
        (GUESS, {"difficulty": "hard"}),
        (LAKE, {"difficulty": "easy"}),
        (LAKE, {"difficulty": "hard"}),
        (MATH, {}),
    ]
    got = evaluate_many(jobs, agent, episodes=5, seed=7, num_envs=3)
    want = _reference(jobs, agent, 5, 7)
    assert [_without_date(r) for r in got] == [_without_date(r) for r in want]
    for results in got:
        validate_results(results)


def test_seeds_are_exactly_the_run_asked_for_in_order():
    jobs = [(GUESS, {"difficulty": d}) for d in ("easy", "medium", "hard")]
    for results in evaluate_many(jobs, "random", episodes=9, seed=100, num_envs=4):
        assert [ep["seed"] for ep in results["episodes"]] == list(range(100, 109))
        assert results["seed"] == 100 and results["num_episodes"] == 9
    assert [r["difficulty"] for r in evaluate_many(jobs, "random", 1, 0)] == [
        "easy",
        "medium",
        "hard",
    ]


def test_more_envs_than_episodes():
    jobs = [(LAKE, {"difficulty": "medium"})]
    got = evaluate_many(jobs, "oracle", episodes=3, seed=2, num_envs=50)
    assert [_without_date(r) for r in got] == [
        _without_date(r) for r in _reference(jobs, "oracle", 3, 2)
    ]


def test_progress_counts_every_episode_of_every_job():
    calls: list[tuple[int, int]] = []
    evaluate_many(
        [(GUESS, {}), (LAKE, {})],
        "random",
        4,
        0,
        num_envs=3,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert calls == [(d, 8) for d in range(9)]


def test_subprocess_workers_give_the_same_results():
    jobs = [(GUESS, {"difficulty": "medium"}), (SOKOBAN, {"difficulty": "easy"})]
    in_process = evaluate_many(jobs, "oracle", episodes=4, seed=3, num_envs=3)
    in_workers = evaluate_many(jobs, "oracle", episodes=4, seed=3, num_envs=3, workers="subprocess")
    assert [_without_date(r) for r in in_workers] == [_without_date(r) for r in in_process]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"jobs": [("envgym/GuesNumber-v0", {})]}, KeyError, "GuessNumber"),
        ({"episodes": 0}, EvaluationError, "episodes must be"),
        (
            {"jobs": [(GUESS, {}), (LAKE, {"difficulty": "nightmare"})]},
            EvaluationError,
            "nightmare",
        ),
        ({"agent_spec": "gpt-9"}, EvaluationError, "unknown agent 'gpt-9'"),
        ({"num_envs": 0}, EvaluationError, "num_envs"),
        ({"workers": "threads"}, EvaluationError, "choose one of sync, subprocess"),
    ],
)
def test_bad_input_fails_before_the_first_episode(kwargs, error, message):
    calls: list[tuple[int, int]] = []
    args: dict[str, Any] = {"jobs": [(GUESS, {})], "agent_spec": "random", "episodes": 2, "seed": 0}
    args.update(kwargs)
    with pytest.raises(error) as raised:
        evaluate_many(**args, progress=lambda d, t: calls.append((d, t)))
    assert message in str(raised.value)
    assert calls == []


class ScriptedBatchAgent:
    """A batch agent that plays GuessNumber's binary search in every slot and
    counts one completion token per reply (an LLM agent without the model)."""

    name = "openai"

    def __init__(self) -> None:
        self.slots: dict[int, GuessNumberOracle] = {}
        self.tokens: dict[int, int] = {}
        self.batch_sizes: list[int] = []

    def reset_slot(self, slot: int) -> None:
        self.slots[slot] = GuessNumberOracle(None)
        self.tokens[slot] = 0

    def act_batch(self, slots, observations, infos):
        self.batch_sizes.append(len(slots))
        for slot in slots:
            self.tokens[slot] += 1
        return [self.slots[s].act(o, i) for s, o, i in zip(slots, observations, infos, strict=True)]

    def usage(self, slot: int) -> dict[str, int]:
        return {"prompt_tokens": 10 * self.tokens[slot], "completion_tokens": self.tokens[slot]}


def test_a_batch_agent_answers_many_slots_at_once_and_its_tokens_are_recorded(monkeypatch):
    agent = ScriptedBatchAgent()
    monkeypatch.setattr(play_module, "make_agent", lambda *a, **k: agent)
    jobs = [(GUESS, {"difficulty": "medium"}), (GUESS, {"difficulty": "hard"})]
    got = evaluate_many(jobs, "openai:http://127.0.0.1:9/v1#scripted", 6, seed=0, num_envs=4)
    assert max(agent.batch_sizes) == 4
    for results in got:
        validate_results(results)
        assert results["agent"] == {"name": "openai", "model": "scripted"}
        assert results["summary"]["success_rate"] == 1.0
        for episode in results["episodes"]:
            turns = episode["turns"]
            assert episode["usage"] == {"prompt_tokens": 10 * turns, "completion_tokens": turns}


# ----------------------------------------------------------------------- CLI
def test_eval_on_many_ids_writes_one_file_per_pair_and_prints_the_table(tmp_path, capsys):
    out_dir = tmp_path / "runs"
    argv = [
        "eval",
        "GuessNumber-v0",
        LAKE,
        "--all-difficulties",
        "--agent",
        "oracle",
        "--episodes",
        "3",
        "--seed",
        "4",
        "--num-envs",
        "5",
        "--out-dir",
        str(out_dir),
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    files = sorted(p.name for p in out_dir.iterdir())
    assert files == sorted(
        f"{name}_{level}_oracle.json"
        for name in ("GuessNumber-v0", "FrozenLake-v0")
        for level in ("easy", "medium", "hard")
    )
    for path in out_dir.iterdir():
        results = load_results(path)
        assert [ep["seed"] for ep in results["episodes"]] == [4, 5, 6]
        assert results["env_kwargs"] == {"difficulty": results["difficulty"]}
    rows = [line.split() for line in captured.out.splitlines()[2:8]]
    assert [row[:4] for row in rows] == [
        [env_id, level, "oracle", "3"]
        for env_id in (GUESS, LAKE)
        for level in ("easy", "medium", "hard")
    ]
    assert f"wrote 6 results files to {out_dir}" in captured.out
    assert "18/18 episodes" in captured.err


def test_eval_with_listed_difficulties_and_one_out_file(tmp_path, capsys):
    out = tmp_path / "one.json"
    argv = ["eval", GUESS, "--difficulty", "hard", "--episodes", "2", "--out", str(out)]
    assert main(argv) == 0
    assert load_results(out)["difficulty"] == "hard"
    assert f"wrote {out}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([GUESS, "envgym/Sokobn-v0"], "Did you mean envgym/Sokoban-v0"),
        ([GUESS, LAKE, "--difficulty", "easy", "nightmare"], "has no difficulty 'nightmare'"),
        ([GUESS, "--episodes", "0"], "must be at least 1"),
        ([GUESS, LAKE, "--out", "x.json"], "use --out-dir"),
    ],
)
def test_eval_refuses_bad_input_before_any_episode(argv, message, tmp_path, capsys):
    assert main(["eval", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert "episodes" not in captured.err.replace("--episodes", "")
    assert captured.out == ""
    assert not Path("x.json").exists()


# ---------------------------------------------------------------------- play
def test_play_plays_each_seed_once_in_the_order_given_on_any_vector_env():
    with TextVectorEnv([(GUESS, {"difficulty": "hard"})], 3, workers="subprocess") as vec:
        [records] = play(vec, "oracle", [5, 9, 6, 5])
    assert [r["seed"] for r in records] == [5, 9, 6, 5]
    assert records[0] == records[3]  # the same seed is the same episode, wherever it ran
    want = evaluate(GUESS, "oracle", 2, 5, env_kwargs={"difficulty": "hard"})["episodes"]
    assert [records[0], records[2]] == want


class _BreaksOnStep(gym.Env):
    """An env whose every step raises, as a broken env would."""

    observation_space = action_space = gym.spaces.Text(10)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "start", {}

    def step(self, action):
        raise OSError("the disk is gone")


def test_an_env_that_fails_mid_episode_names_itself_and_the_seed():
    with TextVectorEnv(env_fns=[_BreaksOnStep]) as vec:
        with pytest.raises(RuntimeError, match="env 0 failed in the episode with seed 3: .*disk"):
            play(vec, "random", [3])
