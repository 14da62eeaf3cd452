"""trainers/grpo.py on the CPU: GRPO and GiGPO learn a small FrozenLake map,
a resumed run takes the same next update as one that never stopped, and
``envgym train grpo --eval-every`` writes results the leaderboard accepts.

The policy is the tiny random model (`envgym.trainers.common.tiny`), given a
format warm-up on random valid moves first, so RL starts at the random
agent's level. The map is ``SF/HG`` with 3 turns of one move: Right then
Down reaches the goal, Down first falls in the hole, so the policy must act
on where it stands. Torch runs on one thread: a 2-core machine shared with
other work slows two spinning threads far more than it slows one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import envgym  # noqa: F401 - registers the ids

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from frozen_lake_task import LEARNING_SETTINGS, random_success_rate  # noqa: E402

from envgym.trainers.common.run_log import read_metrics  # noqa: E402
from envgym.trainers.grpo import GRPOConfig, train  # noqa: E402


def learning_config(tmp_path, **overrides) -> GRPOConfig:
    settings = dict(
        LEARNING_SETTINGS, num_groups=4, group_size=8, steps=60, out_dir=str(tmp_path / "run")
    )
    settings.update(overrides)
    return GRPOConfig(**settings)


@pytest.fixture(scope="module")
def random_level() -> float:
    return random_success_rate()


def _check_learned(run_dir, random_level: float) -> None:
    rows = read_metrics(run_dir)
    success = [row["charts/success_rate"] for row in rows]
    # The first steps play at the random agent's level (the warm-up taught the format only).
    assert np.mean(success[:5]) < random_level + 0.15
    # The last 5 steps' 160 sampled episodes succeed at least 80% of the time.
    assert np.mean(success[-5:]) >= 0.8, success


@pytest.mark.slow
def test_grpo_learns_a_small_frozen_lake(tmp_path, random_level):
    assert 0.05 < random_level < 0.25
    train(learning_config(tmp_path, estimator="grpo"))
    _check_learned(tmp_path / "run", random_level)


@pytest.mark.slow
def test_gigpo_learns_a_small_frozen_lake(tmp_path, random_level):
    train(learning_config(tmp_path, estimator="gigpo"))
    _check_learned(tmp_path / "run", random_level)


def _weights(run_dir, step: int) -> dict:
    from safetensors.torch import load_file

    return load_file(
        str(run_dir / "checkpoints" / f"step_{step:06d}" / "model" / "model.safetensors")
    )


def test_resuming_from_a_checkpoint_gives_the_same_next_update(tmp_path):
    small = dict(warmup_steps=30, num_groups=4, group_size=4, kl_coef=0.05, save_every=1)
    straight = learning_config(tmp_path / "a", steps=3, **small)
    train(straight)
    first = learning_config(tmp_path / "b", steps=2, **small)
    train(first)
    resumed = learning_config(tmp_path / "b", steps=3, resume=True, **small)
    train(resumed)
    a, b = _weights(tmp_path / "a" / "run", 3), _weights(tmp_path / "b" / "run", 3)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    # Not vacuous: the update changed the weights.
    before = _weights(tmp_path / "a" / "run", 2)
    assert any(not torch.equal(a[k], before[k]) for k in a)
    # The resumed run's log has each step once, and the same numbers.
    rows_a, rows_b = read_metrics(tmp_path / "a" / "run"), read_metrics(tmp_path / "b" / "run")
    assert [r["step"] for r in rows_b] == [1, 2, 3]
    for ra, rb in zip(rows_a, rows_b, strict=True):
        assert ra["charts/episodic_return"] == rb["charts/episodic_return"]
        assert ra["losses/policy"] == rb["losses/policy"]


def test_resume_without_a_checkpoint_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train(learning_config(tmp_path, steps=1, resume=True))


def test_resume_with_other_options_is_refused_before_it_trains(tmp_path):
    quick = dict(warmup_steps=0, num_groups=1, group_size=2)
    train(learning_config(tmp_path, steps=1, **quick))
    with pytest.raises(ValueError, match="--learning-rate differ"):
        train(learning_config(tmp_path, steps=2, resume=True, learning_rate=0.5, **quick))
    assert [r["step"] for r in read_metrics(tmp_path / "run")] == [1]
    # More steps, another display: the same run, continued.
    train(learning_config(tmp_path, steps=2, resume=True, progress=True, **quick))
    assert [r["step"] for r in read_metrics(tmp_path / "run")] == [1, 2]


def test_bad_options_are_refused_with_the_flag_to_change():
    with pytest.raises(ValueError, match="--steps"):
        GRPOConfig(steps=0)
    with pytest.raises(ValueError, match="--eval-seed"):
        GRPOConfig(steps=10, num_groups=8, eval_every=1, eval_seed=20)


def test_the_cli_trains_evaluates_and_writes_a_results_file_the_leaderboard_accepts(tmp_path):
    from envgym.cli import main as cli_main
    from envgym.evaluation.verify import verify_submission

    out = tmp_path / "cli-run"
    code = cli_main(
        [
            "train", "grpo", "--env", "envgym/GuessNumber-v0", "--difficulty", "easy",
            "--model", "tiny", "--steps", "2", "--num-groups", "2", "--group-size", "2",
            "--max-new-tokens", "8", "--eval-every", "1", "--eval-episodes", "3",
            "--torch-threads", "1", "--out-dir", str(out), "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    results_files = sorted((out / "eval").glob("step_*.json"))
    assert [p.name for p in results_files] == ["step_000001.json", "step_000002.json"]
    results = json.loads(results_files[-1].read_text())
    assert results["agent"]["model"].endswith("step_000002/model")
    assert [e["seed"] for e in results["episodes"]] == [1_000_000, 1_000_001, 1_000_002]
    verdict = verify_submission(results)
    assert verdict.accepted, verdict.reason
    rows = read_metrics(out)
    assert [r["step"] for r in rows] == [1, 2]
    assert all("eval/success_rate" in r and "rollout/tokens_per_s" in r for r in rows)
    assert (out / "tensorboard").is_dir()
