"""examples/trl_grpo.py: TRL's GRPOTrainer trains the tiny model on an envgym env
through TRL's `environment_factory`, and the env's returns are the rewards TRL
learns from."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("datasets")
torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trl_grpo.py"


def load_example():
    spec = importlib.util.spec_from_file_location("trl_grpo_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    example = load_example()
    out = tmp_path_factory.mktemp("trl_grpo")
    # high=2: a guess solves half the time, so the rewards of a group of 4 differ and GRPO updates.
    argv = ["--model", "tiny", "--max-steps", "2", "--kwarg", "high=2", "--output-dir", str(out)]
    # One torch thread: on a small machine shared with other work, two spinning
    # threads are many times slower than one for a model this size.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return example.main(argv)
    finally:
        torch.set_num_threads(threads)


def test_training_runs_the_requested_updates_and_changes_the_weights(result):
    assert result.trainer.state.global_step == 2
    after = result.trainer.model.state_dict()
    changed = [k for k, v in result.initial_state.items() if not torch.equal(v, after[k])]
    assert changed, "GRPO left every weight as it was"


def test_trl_logs_the_returns_of_the_envgym_episodes(result):
    steps = [entry for entry in result.trainer.state.log_history if "reward" in entry]
    assert len(steps) == 2
    per_step = len(result.episodes) // len(steps)
    assert per_step * len(steps) == len(result.episodes) == 8  # 4 rollouts per update, 2 updates
    for i, entry in enumerate(steps):
        returns = [e.episode_return for e in result.episodes[i * per_step : (i + 1) * per_step]]
        assert entry["rewards/EnvgymEnvironment/mean"] == pytest.approx(sum(returns) / len(returns))
        assert entry["reward"] == pytest.approx(sum(returns) / len(returns))


def test_the_env_is_stepped_with_the_models_tool_calls(result):
    assert any(e.replies for e in result.episodes), "the model never reached the env"
    # TRL keeps the parsed completions of the last generation batch (trl 1.16: `_logs`); the
    # replies the env saw are the `reply` arguments of the model's tool calls, in order.
    completions = list(result.trainer._logs["completion"])
    last = result.episodes[-len(completions) :]
    for episode, messages in zip(last, completions, strict=True):
        sent = [
            call["function"]["arguments"]["reply"]
            for message in messages
            if message["role"] == "assistant"
            for call in message.get("tool_calls") or []
            if isinstance(call["function"]["arguments"], dict)
            and "reply" in call["function"]["arguments"]
        ]
        assert episode.replies == sent[: len(episode.replies)]
        assert len(sent) == len(episode.replies) or episode.done
