"""TransformersAgent on a tiny model built here (no downloads), and VLLMAgent's
error where vllm is missing.

The model is a 2-layer Llama with hidden size 32 and random weights; the
tokenizer a byte-level BPE trained on a few strings, with a ChatML chat
template. Its replies are noise, which the env answers with format feedback:
the episodes still run their turns, so histories, usage and batching are
checked on real multi-turn play.
"""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import pytest

import envgym  # noqa: F401 - registers the ids
from envgym.agents import is_batch_agent, make_agent

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<pad>", "<|im_start|>", "<|im_end|>"]
TURNS = 3


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A folder with a tiny random Llama and its tokenizer, saved by save_pretrained."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    path = tmp_path_factory.mktemp("tiny-llama")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = [
        "I am thinking of a number from 1 to 100. Guess it.",
        "Higher. Lower. <answer>50</answer> <think>hmm</think>",
        "Guess the secret number. Reply with one number in answer tags.",
    ]
    bpe.train_from_iterator(corpus * 20, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", eos_token="<|im_end|>", bos_token="<|im_start|>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        initializer_range=0.5,  # large weights: replies that depend on the prompt
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(path)
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
