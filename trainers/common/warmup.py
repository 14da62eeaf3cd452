"""Format warm-up: a few supervised steps on random *valid* replies.

A model that has never seen an env writes replies the env cannot read, so
every episode fails alike and a group-relative update has nothing to
compare. `format_warmup` plays episodes with the random agent (a uniformly
random admissible action in answer tags), tokenizes them exactly as
rollouts are tokenized, and trains on the replies' tokens with
cross-entropy. It teaches the format and no strategy: the moves are random,
so afterwards the policy plays at the random agent's level and RL starts
from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envgym.agents import RandomAgent
from envgym.trainers.common.tokenization import ChatTokenizer, EpisodeTokens

__all__ = ["format_warmup", "random_episode_tokens"]


def random_episode_tokens(
    env: Any,
    chat: ChatTokenizer,
    seed: int,
    *,
    options: dict[str, Any] | None = None,
    system_prompt: bool = True,
    history: bool = True,
) -> list[EpisodeTokens]:
    """One episode of the random agent in ``env``, tokenized like a rollout
    (each reply's ids followed by the first stop token): one sequence, or
    without ``history`` one per move (its prompt is the current observation)."""
    agent = RandomAgent(seed)
    obs, info = env.reset(seed=seed, options=options)
    system = info.get("system_prompt") if system_prompt else None
    messages, tokens = chat.start(obs, system)
    sequences = [tokens]
    while True:
        reply = agent.act(obs, info)
        chat.add_reply(messages, tokens, chat.encode(reply) + [chat.stop_token_ids[0]])
        obs, _, terminated, truncated, info = env.step(reply)
        if terminated or truncated:
            return sequences
        if history:
            chat.add_observation(messages, tokens, obs, stopped=True)
        else:
            messages, tokens = chat.start(obs, system)
            sequences.append(tokens)


def format_warmup(
    model: Any,
    chat: ChatTokenizer,
    make_env: Callable[[], Any],
    *,
    steps: int,
    episodes_per_step: int = 8,
    learning_rate: float = 1e-3,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    system_prompt: bool = True,
    history: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Train ``model`` for ``steps`` steps of cross-entropy on the reply tokens
    of random-agent episodes (seeds from ``seed``); returns each step's loss.
    ``on_step(step, loss)`` is called after each step (for progress)."""
    import torch

    if steps < 0 or episodes_per_step < 1:
        raise ValueError(
            f"steps must be >= 0 and episodes_per_step >= 1, got {steps} and {episodes_per_step}"
        )
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    pad = chat.tokenizer.pad_token_id
    env = make_env()
    losses: list[float] = []
    model.train()
    try:
        for step in range(steps):
            batch = [
                sequence
                for k in range(episodes_per_step)
                for sequence in random_episode_tokens(
                    env,
                    chat,
                    seed + step * episodes_per_step + k,
                    options=options,
                    system_prompt=system_prompt,
                    history=history,
                )
            ]
            width = max(len(t.ids) for t in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            labels = torch.full((len(batch), width), -100, dtype=torch.long)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            for row, t in enumerate(batch):
                ids[row, : len(t.ids)] = torch.tensor(t.ids)
                attention[row, : len(t.ids)] = 1
                mask = torch.tensor(t.loss_mask, dtype=torch.bool)
                labels[row, : len(t.ids)] = torch.where(mask, torch.tensor(t.ids), -100)
            out = model(
                input_ids=ids.to(device),
                attention_mask=attention.to(device),
                labels=labels.to(device),
            )
            optimizer.zero_grad(set_to_none=True)
            out.loss.backward()
            optimizer.step()
            losses.append(float(out.loss.detach()))
            if on_step is not None:
                on_step(step, losses[-1])
    finally:
        env.close()
    return losses
