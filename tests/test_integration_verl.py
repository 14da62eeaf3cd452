"""envgym's verl agent loop, run by the installed verl's own AgentLoopWorker.

What runs here, on the CPU: verl's ``AgentLoopWorker`` (built from verl's own
generated PPO trainer config, with a model folder holding a tiny tokenizer
built here and a Qwen2 config, no weights) reads a ``DataProto`` batch of
dataset rows, instantiates `EnvgymAgentLoop` from verl's agent-loop registry
with hydra as it does in training, awaits ``run`` for every row, and pads and
collates the outputs (``response_mask``, ``rm_scores``, ``rollout_log_probs``,
the logged reward extras). What does not: the inference server. verl's
``LLMServerClient`` routes ``generate`` through a Ray load balancer to vLLM or
SGLang servers on GPUs; here a subclass of it answers ``generate`` with
scripted replies, the replies of an episode of envgym's own evaluation
(`envgym.evaluation.evaluate`), tokenized with the worker's tokenizer. Nor
does the PPO/GRPO update (FSDP or Megatron workers on GPUs).

The contract (envgym's rewards turn by turn, the same ending and success,
the seed's task, nothing privileged in the tokens, truncation kept apart
from termination) is checked for every adapter in
tests/test_integration_contract.py (tests/integration_drivers.py's
``play_verl``, this worker). Here: the tokens are exactly the chat
template's rendering of the env's conversation, with ``response_mask`` 1 on
the replies' tokens and 0 on every env token; the agent-loop config entry,
the response budget, the example's GRPO config and the example itself.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys

import gymnasium as gym
import pytest

pytest.importorskip("verl.experimental.agent_loop")

# verl's worker with a scripted LLM client, shared with the contract suite.
from integration_drivers import VERL_LOGPROB as LOGPROB  # noqa: E402
from integration_drivers import build_tiny_qwen2  # noqa: E402
from integration_drivers import verl_batch as batch_of  # noqa: E402
from integration_drivers import verl_trainer_config as trainer_config  # noqa: E402
from integration_drivers import verl_unpadded as unpadded  # noqa: E402
from integration_drivers import verl_worker as make_worker  # noqa: E402

import envgym.integrations.verl as adapter  # noqa: E402
from envgym.evaluation import evaluate  # noqa: E402
from envgym.extras import MissingExtra  # noqa: E402

#: A puzzle played to its turn limit (the last observation is not sent) and a
#: multi-turn tool world: the masks (the contract, every adapter's:
#: tests/test_integration_contract.py).
CASES = [
    ("envgym/Sokoban-v0", "random", {"max_turns": 4}),
    ("envgym/Retail-v0", "oracle", {}),
]
SEED = 21


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A model folder verl's HFModelConfig reads: the tiny ChatML tokenizer and a
    Qwen2 config; no weights."""
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny-qwen2"))


@pytest.mark.parametrize(("env_id", "agent", "env_kwargs"), CASES)
def test_the_tokens_are_the_conversation_and_the_mask_marks_the_replies(
    model_dir, env_id, agent, env_kwargs
):
    results = evaluate(env_id, agent, episodes=2, seed=SEED, env_kwargs=env_kwargs)
    episodes = results["episodes"]
    seeds = [e["seed"] for e in episodes]
    conversations, scripts = [], {}
    for episode in episodes:
        env = gym.make(env_id, **env_kwargs)
        obs, info = env.reset(seed=episode["seed"])
        chat = [{"role": "system", "content": info["system_prompt"]}] * bool(
            info.get("system_prompt")
        ) + [{"role": "user", "content": obs}]
        observations = []
        for action in episode["actions"]:
            chat.append({"role": "assistant", "content": action})
            obs, *_ = env.step(action)
            observations.append(obs)
            chat.append({"role": "user", "content": obs})
        chat.pop()  # the last observation ends the episode and is not sent
        conversations.append(chat)
        scripts[chat[1 if info.get("system_prompt") else 0]["content"]] = episode["actions"]

    cfg = trainer_config(model_dir)
    worker = make_worker(cfg, scripts)
    tokenizer = worker.tokenizer
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    out = asyncio.run(
        worker.generate_sequences(batch_of(adapter.dataset_rows(env_id, seeds, env_kwargs)))
    )

    for i, episode in enumerate(episodes):
        prompt, response, mask, logprobs = unpadded(out, i)
        # Seeds and text: prompt + response is the chat template's rendering of
        # the env's conversation for this seed, the reset's task first.
        rendered = tokenizer.apply_chat_template(conversations[i], tokenize=False)
        assert tokenizer.decode(prompt + response) == rendered.removesuffix("\n")
        first = tokenizer.apply_chat_template(
            conversations[i][: 2 if conversations[i][0]["role"] == "system" else 1],
            tokenize=False,
            add_generation_prompt=True,
        )
        assert tokenizer.decode(prompt) == first

        # Masks: 1 on exactly the replies' tokens (each ended by <|im_end|>), 0 on env text.
        replies = [
            tokenizer.encode(a, add_special_tokens=False) + [end] for a in episode["actions"]
        ]
        assert [t for t, m in zip(response, mask, strict=True) if m] == sum(replies, [])
        env_text = tokenizer.decode([t for t, m in zip(response, mask, strict=True) if not m])
        for message in conversations[i][2:]:
            if message["role"] == "user":
                assert message["content"] in env_text
        assert all(lp == (LOGPROB if m else 0.0) for lp, m in zip(logprobs, mask, strict=True))
        ends = out.non_tensor_batch["turn_token_ends"][i]
        assert [mask[e - 1] for e in ends] == [1] * len(ends)  # each turn ends on a reply token

        # The return on the reply's last token (per-turn rewards, the ending,
        # success and the seed: the contract suite).
        scores = out.batch["rm_scores"][i]
        assert scores.sum().item() == pytest.approx(episode["return"], abs=1e-5)
        assert scores[len(response) - 1].item() == pytest.approx(episode["return"], abs=1e-5)
        assert not out.non_tensor_batch["length_cut"][i]


def test_an_agent_loop_config_entry_names_the_env_and_the_response_budget_cuts(model_dir, tmp_path):
    """The example's way: an agent-loop config file entry (verl's
    ``agent_loop_config_path``) sets the env, rows carry only seeds; a small
    ``max_response_length`` ends the episode early, marked ``length_cut``."""
    entry = tmp_path / "agent_loops.yaml"
    entry.write_text(
        "- name: envgym_sokoban\n"
        "  _target_: envgym.integrations.verl.EnvgymAgentLoop\n"
        "  env_id: envgym/Sokoban-v0\n"
        "  env_kwargs: {difficulty: easy, max_turns: 20}\n"
    )
    env = gym.make("envgym/Sokoban-v0", difficulty="easy")
    obs, _ = env.reset(seed=3)
    cfg = trainer_config(model_dir, max_response_length=96, agent_loop_config=str(entry))
    worker = make_worker(cfg, {obs: ["<answer>Left</answer>"] * 20})
    rows = [
        {
            "prompt": [{"role": "user", "content": "x"}],
            "agent_name": "envgym_sokoban",
            "extra_info": {"seed": 3},
        }
    ]
    out = asyncio.run(worker.generate_sequences(batch_of(rows)))
    _, response, mask, _ = unpadded(out, 0)
    assert len(response) <= 96 and out.non_tensor_batch["length_cut"][0]
    assert not out.non_tensor_batch["terminated"][0] and not out.non_tensor_batch["truncated"][0]
    turns = out.non_tensor_batch["env_turns"][0]
    assert 1 <= turns < 20 and len(out.non_tensor_batch["turn_scores"][0]) == turns
    assert out.batch["rm_scores"][0].sum().item() == pytest.approx(
        sum(out.non_tensor_batch["turn_scores"][0]), abs=1e-5
    )


def test_without_verl_the_error_names_the_extra(monkeypatch):
    for name in ("verl", "verl.experimental.agent_loop.agent_loop"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "envgym.integrations.verl")
    with pytest.raises(MissingExtra) as caught:
        importlib.import_module("envgym.integrations.verl")
    assert caught.value.extra == "verl"
    assert "pip install 'envgym[verl]'" in str(caught.value)


def test_the_grpo_example_config_composes_with_verls_and_drives_its_worker(model_dir):
    """examples/verl_grpo_sokoban.yaml, composed by hydra over verl's own
    ppo_trainer config as ``verl.trainer.main_ppo`` composes it, is GRPO with
    envgym's loop as the default agent loop, and verl's worker built from it
    plays a row of `dataset_rows` (the model swapped for the tiny one)."""
    from pathlib import Path

    import hydra

    examples = Path(__file__).resolve().parent.parent / "examples"
    with hydra.initialize_config_dir(config_dir=str(examples), version_base=None):
        cfg = hydra.compose(
            config_name="verl_grpo_sokoban",
            overrides=[
                f"actor_rollout_ref.model.path={model_dir}",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={examples}/verl_agent_loops.yaml",
            ],
        )
    assert cfg.algorithm.adv_estimator == "grpo"
    assert cfg.actor_rollout_ref.rollout.n > 1 and cfg.actor_rollout_ref.rollout.multi_turn.enable
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == adapter.AGENT_NAME
    assert cfg.trainer.device == "cuda"  # verl's default; training needs the GPU

    obs, _ = gym.make("envgym/Sokoban-v0", difficulty="easy").reset(seed=4)
    worker = make_worker(cfg, {obs: ["<answer>Up</answer>"] * 20})
    rows = adapter.dataset_rows("envgym/Sokoban-v0", [4], {"difficulty": "easy"})
    del rows[0]["agent_name"]  # the config's default agent loop applies
    out = asyncio.run(worker.generate_sequences(batch_of(rows)))
    assert out.non_tensor_batch["env_turns"][0] >= 1
    assert out.batch["rm_scores"][0].sum().item() == pytest.approx(
        sum(out.non_tensor_batch["turn_scores"][0]), abs=1e-5
    )


def test_the_example_writes_the_rows_and_runs_the_cpu_check(model_dir, tmp_path, capsys):
    """examples/verl_sokoban.py: the parquet rows the GRPO config reads, and its
    CPU part (verl's worker with scripted moves) on two of them."""
    from pathlib import Path

    import pandas as pd

    path = Path(__file__).resolve().parents[1] / "examples" / "verl_sokoban.py"
    spec = importlib.util.spec_from_file_location("verl_sokoban_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.write_data(tmp_path, range(6), range(6, 8), {"difficulty": "easy"})
    train = pd.read_parquet(tmp_path / "train.parquet")
    assert list(train["extra_info"].map(lambda e: e["seed"])) == list(range(6))
    assert set(train["agent_name"]) == {adapter.AGENT_NAME}
    example.cpu_check(tmp_path, model_dir, rows=2)
    printed = capsys.readouterr().out
    assert printed.count("model (mask 1)") == 2 and "return on the last token" in printed
