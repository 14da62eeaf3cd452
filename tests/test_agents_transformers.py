"""TransformersAgent on a tiny model built here (no downloads), and VLLMAgent's
error where vllm is missing.

The model is a 2-layer Llama with hidden size 32 and random weights; the
tokenizer a byte-level BPE trained on a few strings, with a ChatML chat
template (`envgym.trainers.common.tiny`). Its replies are noise, which the
env answers with format feedback: the episodes still run their turns, so
histories, usage and batching are checked on real multi-turn play.
"""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import pytest

import envgym  # noqa: F401 - registers the ids
from envgym.agents import is_batch_agent, make_agent

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

CORPUS = [
    "I am thinking of a number from 1 to 100. Guess it.",
    "Higher. Lower. <answer>50</answer> <think>hmm</think>",
    "Guess the secret number. Reply with one number in answer tags.",
] * 5
TURNS = 3


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A folder with a tiny random Llama and its tokenizer, saved by save_pretrained."""
    from envgym.trainers.common.tiny import build_tiny_model, build_tiny_tokenizer

    path = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = build_tiny_tokenizer(CORPUS, vocab_size=400)
    # Large weights: replies that depend on the prompt.
    build_tiny_model(path, tokenizer=tokenizer, hidden_size=32, initializer_range=0.5)
    return path


#: Ranges of different lengths, so the prompts of a batch differ and are padded.
HIGHS = [100, 7, 123_456, 99_999_999]


def _play(agent, slots: list[int], highs: list[int]) -> list[dict]:
    """One GuessNumber episode per slot (from 1 to its high), every turn one act_batch
    over the slots still playing; per episode its replies, rewards and usage after
    each turn."""
    envs = {
        s: gym.make("envgym/GuessNumber-v0", high=high, max_turns=TURNS)
        for s, high in zip(slots, highs, strict=True)
    }
    state = {}
    for slot in slots:
        obs, info = envs[slot].reset(seed=slot)
        agent.reset_slot(slot)
        state[slot] = {"obs": obs, "info": info, "replies": [], "rewards": [], "usage": []}
    live = list(slots)
    while live:
        replies = agent.act_batch(
            live, [state[s]["obs"] for s in live], [state[s]["info"] for s in live]
        )
        for slot, reply in zip(list(live), replies, strict=True):
            obs, reward, terminated, truncated, info = envs[slot].step(reply)
            record = state[slot]
            record.update(obs=obs, info=info)
            record["replies"].append(reply)
            record["rewards"].append(reward)
            record["usage"].append(agent.usage(slot))
            if terminated or truncated:
                record["history"] = agent.history(slot)
                live.remove(slot)
    return [state[s] for s in slots]


def test_a_batch_plays_multi_turn_episodes_and_equals_single_calls(tiny_model):
    agent = make_agent(f"hf:{tiny_model}", None, max_new_tokens=8, device="cpu")
    assert is_batch_agent(agent)
    batched = _play(agent, [0, 1, 2, 3], HIGHS)
    tokenizer = agent.tokenizer
    for episode in batched:
        replies, history = episode["replies"], episode["history"]
        assert len(replies) == TURNS and all(isinstance(r, str) for r in replies)
        # The conversation grew turn by turn: system, then user/assistant pairs.
        assert [m["role"] for m in history] == ["system"] + ["user", "assistant"] * TURNS
        assert history[0]["content"].startswith("Guess the secret number")
        assert [m["content"] for m in history[2::2]] == replies
        # Usage: each turn's prompt is the whole conversation so far, re-tokenized.
        prompt_tokens = 0
        for turn in range(TURNS):
            text = tokenizer.apply_chat_template(
                history[: 2 + 2 * turn], tokenize=False, add_generation_prompt=True
            )
            prompt_tokens += len(tokenizer(text, add_special_tokens=False)["input_ids"])
            usage = episode["usage"][turn]
            assert usage["prompt_tokens"] == prompt_tokens
        assert 0 < usage["completion_tokens"] <= 8 * TURNS
    # Greedy decoding: the four slots in one batch say what four lone games say.
    assert len({tuple(e["replies"]) for e in batched}) == 4  # the prompt decides the reply
    prompts = {e["history"][1]["content"] for e in batched}
    assert len(prompts) == 4  # four prompt lengths: the batch was padded
    for slot, high in enumerate(HIGHS):
        alone = _play(agent, [slot], [high])[0]
        assert alone["replies"] == batched[slot]["replies"]
        assert alone["usage"] == batched[slot]["usage"]
    # A batch larger than batch_size is split, with the same replies.
    split = make_agent(f"hf:{tiny_model}", None, max_new_tokens=8, device="cpu", batch_size=3)
    assert [e["replies"] for e in _play(split, [0, 1, 2, 3], HIGHS)] == [
        e["replies"] for e in batched
    ]
    # The random model never writes a guess: every turn is the format penalty.
    assert all(r == -0.1 for e in batched for r in e["rewards"])


def test_without_history_each_prompt_is_the_system_message_and_the_observation(tiny_model):
    agent = make_agent(f"hf:{tiny_model}", None, max_new_tokens=8, device="cpu", history=False)
    tokenizer = agent.tokenizer
    env = gym.make("envgym/GuessNumber-v0", high=100, max_turns=TURNS)
    obs, info = env.reset(seed=0)
    agent.reset()
    system = info["system_prompt"]
    prompt_tokens = 0
    for _ in range(TURNS):
        reply = agent.act(obs, info)
        prompt = [{"role": "system", "content": system}, {"role": "user", "content": obs}]
        # What the model saw: the system message and this turn's observation, nothing older.
        assert agent.history(0) == [*prompt, {"role": "assistant", "content": reply}]
        text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        prompt_tokens += len(tokenizer(text, add_special_tokens=False)["input_ids"])
        assert agent.usage(0)["prompt_tokens"] == prompt_tokens
        obs, _, terminated, truncated, info = env.step(reply)  # later infos lack the prompt
    assert terminated or truncated


def test_the_plain_agent_protocol_is_slot_zero(tiny_model):
    agent = make_agent(f"hf:{tiny_model}", None, max_new_tokens=4, device="cpu")
    env = gym.make("envgym/GuessNumber-v0")
    obs, info = env.reset(seed=0)
    agent.reset()
    reply = agent.act(obs, info)
    assert agent.history(0)[-1] == {"role": "assistant", "content": reply}
    agent.reset()
    assert agent.history(0) == [] and agent.usage(0) == {"prompt_tokens": 0, "completion_tokens": 0}


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_the_vllm_agent_without_vllm_names_the_extra():
    from envgym.agents.vllm_agent import VLLMUnavailable

    with pytest.raises(VLLMUnavailable, match=r"pip install 'envgym\[vllm\]'"):
        make_agent("vllm:/models/tiny", None)
