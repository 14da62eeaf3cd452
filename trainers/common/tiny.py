"""A tiny causal LM and its tokenizer, built locally: no download, no weights.

`build_tiny_model` makes a byte-level BPE tokenizer trained on a few hundred
env texts (so the words envs use are whole tokens), with a ChatML chat
template whose end-of-turn token is ``<|im_end|>``, and a randomly
initialised Llama of a few hundred thousand parameters. Tests, the CPU
benchmark and ``envgym train grpo --model tiny`` use it; it learns small
tasks in minutes on a CPU and knows nothing before training.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CHATML_TEMPLATE",
    "DEFAULT_CORPUS_IDS",
    "SPECIAL_TOKENS",
    "build_tiny_model",
    "build_tiny_tokenizer",
    "save_tiny_qwen2_config",
    "env_corpus",
]

#: ChatML: every message is ``<|im_start|>role\ncontent<|im_end|>\n``; a reply
#: ends with ``<|im_end|>``, the token generation stops on. Rendering a longer
#: conversation only appends text, which multi-turn tokenization relies on.
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ("<pad>", "<|im_start|>", "<|im_end|>")
#: Envs whose texts train the tokenizer by default (a few random episodes each).
DEFAULT_CORPUS_IDS = (
    "envgym/FrozenLake-v0",
    "envgym/Sokoban-v0",
    "envgym/GuessNumber-v0",
    "envgym/TicTacToe-v0",
)


def env_corpus(env_ids: Sequence[str] = DEFAULT_CORPUS_IDS, episodes: int = 3) -> list[str]:
    """System prompts, observations and answer-tagged moves from a few random
    episodes of each env in ``env_ids``: the text a tiny tokenizer should know."""
    import gymnasium as gym

    import envgym  # noqa: F401 - registers the ids

    rng = random.Random(0)
    texts: list[str] = []
    for env_id in env_ids:
        env = gym.make(env_id)
        for seed in range(episodes):
            obs, info = env.reset(seed=seed)
            texts += [info.get("system_prompt", ""), obs]
            for _ in range(8):
                moves = info.get("admissible_actions") or ["1"]
                reply = f"<answer>{rng.choice(list(moves))}</answer>"
                obs, _, terminated, truncated, info = env.step(reply)
                texts += [reply, obs]
                if terminated or truncated:
                    break
        env.close()
    return [t for t in texts if t]


def build_tiny_tokenizer(
    corpus: Iterable[str] | None = None,
    vocab_size: int = 1024,
    chat_template: str = CHATML_TEMPLATE,
) -> Any:
    """A `PreTrainedTokenizerFast`: byte-level BPE trained on ``corpus`` (default
    `env_corpus()`), pad ``<pad>``, eos ``<|im_end|>``, ChatML chat template.
    Byte-level, so decoding any token ids gives back exactly the text they encode."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = list(env_corpus() if corpus is None else corpus)
    if not texts:
        raise ValueError("corpus is empty; give the tokenizer some text to learn its merges from")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        pad_token="<pad>",
        eos_token="<|im_end|>",
        bos_token="<|im_start|>",
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def build_tiny_model(
    path: str | Path | None = None,
    *,
    tokenizer: Any = None,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    max_positions: int = 4096,
    initializer_range: float = 0.02,
    seed: int = 0,
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: a random Llama sized by the arguments over
    ``tokenizer`` (default `build_tiny_tokenizer()`), the same weights for the
    same ``seed``; a large ``initializer_range`` makes an untrained model's
    replies depend strongly on the prompt. With ``path``, both are saved there
    by ``save_pretrained``, so ``--model PATH`` and ``--agent hf:PATH`` load them."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tiny_tokenizer() if tokenizer is None else tokenizer
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=max(1, num_heads // 2),
        max_position_embeddings=max_positions,
        initializer_range=initializer_range,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        tie_word_embeddings=True,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    if path is not None:
        Path(path).mkdir(parents=True, exist_ok=True)
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    return model, tokenizer


def save_tiny_qwen2_config(path: str | Path) -> str:
    """A model folder with the tiny ChatML tokenizer and a one-layer Qwen2 config,
    no weights: what frameworks that read a model's folder but never run it here
    (verl's HFModelConfig, which picks its token builder from the architecture) need."""
    from transformers import Qwen2Config

    tokenizer = build_tiny_tokenizer()
    tokenizer.save_pretrained(path)
    Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        architectures=["Qwen2ForCausalLM"],
    ).save_pretrained(path)
    return str(path)
