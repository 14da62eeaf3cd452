"""The trainers' pieces on a CUDA GPU give what they give on the CPU.

Marked ``gpu`` and skipped without CUDA; `scripts/gpu_check.sh` runs them on
the GPU machine (``pytest -m gpu``), where vLLM is not installed. Episodes are
played once on the CPU by the tiny model (weights started wide, so that its
greedy choices are far from ties), then scored and updated on both devices in
float32 with TF32 off: greedy replies match token for token, and one GRPO and
one PPO update (plain SGD, whose step is the gradient itself) move the
weights the same way.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from envgym.trainers.common.distributed import Distributed  # noqa: E402
from envgym.trainers.common.generation import SamplingParams, TransformersBackend  # noqa: E402
from envgym.trainers.common.rollout import collect_rollouts  # noqa: E402
from envgym.trainers.common.tiny import build_tiny_model  # noqa: E402
from envgym.trainers.common.tokenization import ChatTokenizer  # noqa: E402
from envgym.trainers.grpo import GRPOConfig, policy_update  # noqa: E402
from envgym.trainers.ppo import PPOConfig, ppo_update  # noqa: E402
from envgym.vector import TextVectorEnv  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.fixture(scope="module")
def played():
    """The tiny model, its chat tokenizer, and 4 FrozenLake episodes it played on the CPU."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, tokenizer = build_tiny_model(seed=3, initializer_range=0.5)
    chat = ChatTokenizer(tokenizer)
    backend = TransformersBackend(model, tokenizer.pad_token_id, chat.stop_token_ids)
    with TextVectorEnv(("envgym/FrozenLake-v0", {"max_turns": 2}), 4, group_size=2) as envs:
        episodes, _ = collect_rollouts(
            envs, backend, chat, SamplingParams(max_new_tokens=8), seed=0
        )
    return model, chat, episodes


def _moved(before: torch.nn.Module, after: torch.nn.Module) -> torch.Tensor:
    pairs = zip(before.parameters(), after.parameters(), strict=True)
    return torch.cat([(b.detach().cpu() - a.detach().cpu()).flatten() for a, b in pairs])


def _assert_same_step(cpu_step: torch.Tensor, cuda_step: torch.Tensor) -> None:
    assert float(cpu_step.norm()) > 0, "the update moved nothing"
    relative = float((cuda_step - cpu_step).norm() / cpu_step.norm())
    assert relative < 1e-3, f"the CUDA step differs from the CPU step by {relative:.2e}"


def test_greedy_replies_on_cuda_are_the_cpu_replies(played):
    model, chat, episodes = played
    prompts = [e.tokens.ids[: e.tokens.spans[0][0]] for e in episodes]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=12)
    pad = chat.tokenizer.pad_token_id
    on_cpu = TransformersBackend(model, pad, chat.stop_token_ids).generate(prompts, greedy)
    on_cuda = TransformersBackend(
        copy.deepcopy(model).to("cuda"), pad, chat.stop_token_ids
    ).generate(prompts, greedy)
    assert on_cuda == on_cpu


def test_a_grpo_update_on_cuda_is_the_cpu_update(played):
    model, chat, episodes = played
    advantages = [[1.0 if i % 2 else -1.0] * len(e.turns) for i, e in enumerate(episodes)]
    config = GRPOConfig(micro_batch_size=2, update_epochs=1, minibatches=1)
    steps = []
    for device in ("cpu", "cuda"):
        moved = copy.deepcopy(model).to(device)
        optimizer = torch.optim.SGD(moved.parameters(), lr=1.0)
        losses = policy_update(
            moved, optimizer, episodes, advantages, config, chat.tokenizer.pad_token_id
        )
        steps.append(_moved(model, moved))
        assert all(v == v for v in losses.values())  # no NaN
    _assert_same_step(*steps)


def test_a_ppo_update_on_cuda_is_the_cpu_update(played):
    model, chat, episodes = played
    episodes = copy.deepcopy(episodes)
    for episode, reward in zip(episodes, (1.0, 0.0, 0.5, 0.0), strict=True):
        episode.turns[-1].reward = reward
    config = PPOConfig(micro_batch_size=2, update_epochs=1, minibatches=1)
    steps = []
    for device in ("cpu", "cuda"):
        torch.manual_seed(0)
        head = torch.nn.Linear(model.config.hidden_size, 1)
        moved = copy.deepcopy(model).to(device)
        head = head.to(device)
        optimizer = torch.optim.SGD([*moved.parameters(), *head.parameters()], lr=1.0)
        ppo_update(
            moved, head, optimizer, episodes, config, chat.tokenizer.pad_token_id, Distributed()
        )
        steps.append(_moved(model, moved))
    _assert_same_step(*steps)
