"""Turn-level PPO for envgym envs: a critic on the policy model, GAE over turns.

One file, read top to bottom: the config (the algorithm's options; those of
every run are `envgym.trainers.common.options.RunOptions`), the critic and
the losses, then the loop. A *turn* is the step of the MDP (Turn-PPO): the
state ``s_t`` is the conversation up to turn ``t``'s prompt, the action the
whole reply, the reward the env's reward for it (``Episode.rewards``). A
linear value head on the policy's last hidden state reads ``V(s_t)`` at the
last prompt token before turn ``t``'s reply, so one forward pass gives the
reply tokens' log-probs and every turn's value. Each step plays
``--num-episodes`` episodes, computes per-turn advantages by GAE over the turns
(`envgym.trainers.common.advantages.turn_gae`) and takes clipped PPO steps:
each reply token of turn ``t`` weighted by ``A_t`` (env tokens carry no
loss), the critic regressed to ``A_t + V(s_t)`` with PPO2's clipped value loss::

    python -m envgym.trainers.ppo --env envgym/FrozenLake-v0 --model tiny --steps 50
    torchrun --standalone --nproc_per_node 8 -m envgym.trainers.ppo --env envgym/Sokoban-v0 ...

The critic starts at zero: the first advantages are the returns (centred by
``--normalize-advantages``: a batch-mean baseline), and the value loss reaches
the shared model only once the head has learned something. Its rate defaults
to the policy's: Adam's first steps move every head weight by about the rate,
so a value moves by about rate x sum|h| (0.07 on the tiny model at 1e-3,
0.7 at 1e-2), and at 10x with ``--value-coef 2`` the first update broke the
reply format (success 0.16 to 0, and stuck). The head's gradient is clipped
apart from the policy's: its norm is about |V - R| sqrt(hidden size), and
clipped together it would scale the policy's step by the critic's error. On
the tiny model the critic learns the mean return and little more in a run
of 40 steps (it does tell the map's states apart on a fixed batch after ~20
updates; during RL its targets move), so ``losses/explained_variance`` stays near 0.

Each checkpoint's model folder is the plain causal LM (``envgym eval --agent
hf:DIR/step_N/model`` plays it); the value head is trainer state in
``trainer_state.pt``, restored by ``--resume``. The run folder, ``--eval-every``
and data parallel under torchrun work as in `envgym.trainers.grpo`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from envgym.trainers.common.advantages import turn_gae
from envgym.trainers.common.options import EnvRunOptions, option, override_default
from envgym.trainers.common.policy import (
    logprobs_from_logits,
    pad_tokens,
)
from envgym.trainers.common.rollout import Episode

__all__ = ["PPOConfig", "clipped_value_loss", "main", "train", "turn_advantages"]


@dataclass
class PPOConfig(EnvRunOptions):
    """Turn-level PPO on an envgym env."""

    per_step_option = "num_episodes"

    num_episodes: int = option(32, "episodes per step (split over the torchrun processes)")
    value_learning_rate: float = option(0.0, "AdamW rate of the value head (0: --learning-rate)")
    clip_low: float = option(0.2, "PPO clip below: ratio >= 1 - clip_low")
    clip_high: float = option(0.2, "PPO clip above: ratio <= 1 + clip_high")
    gamma: float = option(1.0, "turn discount (1: the undiscounted return the env scores)")
    gae_lambda: float = option(0.95, "GAE lambda over turns (1: return - value, 0: TD error)")
    value_coef: float = option(0.5, "weight of the value loss")
    value_clip: float = option(0.2, "clip the value's move from its rollout value (0: no clip)")
    entropy_coef: float = option(0.0, "weight of the entropy bonus")
    normalize_advantages: bool = option(True, "scale the step's turn advantages to mean 0, std 1")
    # PPO reuses each batch: two passes of two minibatches.
    update_epochs: int = override_default("update_epochs", 2)
    minibatches: int = override_default("minibatches", 2)

    def problems(self) -> list[str]:
        problems = super().problems()
        if self.num_episodes < 1:
            problems.append("--num-episodes must be >= 1")
        if self.minibatches > self.num_episodes:
            problems.append("--minibatches cannot exceed --num-episodes")
        if not (0.0 <= self.gamma <= 1.0 and 0.0 <= self.gae_lambda <= 1.0):
            problems.append("--gamma and --gae-lambda must be in [0, 1]")
        if self.value_coef <= 0 or self.learning_rate <= 0 or self.value_learning_rate < 0:
            problems.append(
                "--value-coef and --learning-rate must be > 0, --value-learning-rate >= 0"
            )
        if min(self.value_clip, self.clip_low, self.clip_high) < 0:
            problems.append("--value-clip, --clip-low and --clip-high must be >= 0")
        return problems


def forward(
    model: Any,
    head: Any,
    batch: dict[str, Any],
    temperature: float,
    entropy_grad: bool = False,
) -> tuple[Any, ...]:
    """One pass: token log-probs and entropies ``[b, L-1]`` (t scores token t + 1;
    only the reply tokens, the rest 0; the entropy with a gradient only with
    ``entropy_grad``), each turn's ``V(s_t)`` ``[b, T]`` (at ``turn_pos``) and
    every position's ``[b, L]``."""
    out = model(
        input_ids=batch["ids"], attention_mask=batch["attention"], output_hidden_states=True
    )
    logp, entropy = logprobs_from_logits(
        out.logits, batch["ids"], temperature, batch["mask"], entropy_grad=entropy_grad
    )
    values = head(out.hidden_states[-1].float()).squeeze(-1)
    return logp, entropy, values.gather(1, batch["turn_pos"]), values


def clipped_value_loss(values: Any, old_values: Any, returns: Any, clip: float) -> Any:
    """PPO2's value loss per turn: ``0.5 * max((V - R)^2, (V_clip - R)^2)`` with
    ``V_clip = V_old + clamp(V - V_old, -clip, clip)``: the critic gains nothing
    from moving further than ``clip`` from its rollout value in one batch
    (``clip`` 0: the plain squared error)."""
    import torch

    unclipped = (values - returns) ** 2
    if clip <= 0:
        return 0.5 * unclipped
    moved = old_values + torch.clamp(values - old_values, -clip, clip)
    return 0.5 * torch.max(unclipped, (moved - returns) ** 2)


def turn_advantages(
    episodes: Sequence[Episode],
    values: Sequence[Sequence[float]],
    last_values: Sequence[float],
    gamma: float,
    lam: float,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """GAE advantages and value targets per turn of each episode. An episode
    bootstraps from ``last_values[i]`` only when it ended because its next
    prompt would not fit the model (the task went on); terminated and
    turn-limit episodes are worth 0 afterwards (see `turn_gae`)."""
    pairs = [
        turn_gae(e.rewards, v, gamma=gamma, lam=lam, last_value=last if e.context_full else 0.0)
        for e, v, last in zip(episodes, values, last_values, strict=True)
    ]
    return [a for a, _ in pairs], [r for _, r in pairs]


def _batch(episodes: Sequence[Episode], pad_id: int, device: Any) -> dict[str, Any]:
    """Padded tensors of ``episodes`` plus where each turn's value is read
    (``turn_pos`` ``[b, T]``, ``turn_mask``) and each episode's last position."""
    import torch

    batch = pad_tokens([e.tokens for e in episodes], None, pad_id)
    batch["turn_pos"] = _per_turn([[s - 1 for s, _ in e.tokens.spans] for e in episodes]).long()
    batch["turn_mask"] = _per_turn([[1.0] * len(e.turns) for e in episodes])
    batch["last_pos"] = torch.tensor([[len(e.tokens.ids) - 1] for e in episodes])
    return {k: v.to(device) for k, v in batch.items()}


def _per_turn(rows: Sequence[Sequence[float]]) -> Any:
    """``[b, T]`` float tensor of ragged per-turn rows, zero-padded."""
    import torch

    out = torch.zeros((len(rows), max(len(r) for r in rows)))
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.as_tensor(np.asarray(row, dtype=np.float32))
    return out


def ppo_update(
    model: Any,
    head: Any,
    optimizer: Any,
    episodes: Sequence[Episode],
    config: PPOConfig,
    pad_id: int,
    dist: Any,
) -> dict[str, float]:
    """Score the batch once (old log-probs and values), compute GAE per turn,
    then the clipped PPO update; returns the step's losses (over all ranks)."""
    import torch

    device = next(model.parameters()).device
    # Every rank takes --minibatches optimizer steps per pass (the gradient sum
    # is a collective), even over an empty share.
    size = config.micro_batch_size
    minibatches = []
    for share in np.array_split(np.arange(len(episodes)), config.minibatches):
        mine = [episodes[k] for k in share]
        minibatches.append([mine[i : i + size] for i in range(0, len(mine), size)])
    batches, values, returns = [], [], []
    with torch.no_grad():
        for chunk in (chunk for mb in minibatches for chunk in mb):
            b = _batch(chunk, pad_id, device)
            b["old_logp"], _, b["old_values"], every = forward(model, head, b, config.temperature)
            old = [v[: len(e.turns)] for v, e in zip(b["old_values"].tolist(), chunk, strict=True)]
            last = every.gather(1, b["last_pos"])[:, 0].tolist()
            b["adv"], ret = turn_advantages(chunk, old, last, config.gamma, config.gae_lambda)
            b["returns"], b["tokens"] = _per_turn(ret).to(device), [e.tokens for e in chunk]
            batches.append(b)
            values += old
            returns += ret
    flat = np.concatenate([a for b in batches for a in b["adv"]] or [np.zeros(0)])
    turns_total = dist.all_sum(len(flat))
    mean, std = 0.0, 1.0
    if config.normalize_advantages:  # over every turn of the step, every rank's
        mean = dist.all_sum(flat.sum()) / max(turns_total, 1.0)
        std = np.sqrt(dist.all_sum(((flat - mean) ** 2).sum()) / max(turns_total - 1.0, 1.0))
    for b in batches:  # each reply token gets its turn's advantage
        adv = [(a - mean) / (std + 1e-8) for a in b["adv"]]
        b["adv"] = pad_tokens(b.pop("tokens"), adv, pad_id)["adv"].to(device)
    sums = dict.fromkeys(("policy", "value", "entropy", "turns", "clip_fraction", "tokens"), 0.0)
    for _ in range(config.update_epochs):
        first = 0
        for mb in minibatches:
            group = batches[first : first + len(mb)]
            first += len(mb)
            tokens = dist.all_sum(sum(float(b["mask"].sum()) for b in group))
            turns = dist.all_sum(sum(float(b["turn_mask"].sum()) for b in group))
            if turns == 0:
                continue
            optimizer.zero_grad(set_to_none=True)
            for b in group:
                logp, entropy, value, _ = forward(
                    model, head, b, config.temperature, entropy_grad=config.entropy_coef > 0
                )
                mask, turn_mask = b["mask"], b["turn_mask"]
                ratio = torch.exp(logp - b["old_logp"])
                clipped = torch.clamp(ratio, 1 - config.clip_low, 1 + config.clip_high)
                policy_tok = -torch.min(ratio * b["adv"], clipped * b["adv"])
                value_turn = clipped_value_loss(
                    value, b["old_values"], b["returns"], config.value_clip
                )
                policy_loss = ((policy_tok - config.entropy_coef * entropy) * mask).sum()
                value_loss = (value_turn * turn_mask).sum() / turns
                loss = policy_loss / max(tokens, 1.0) + config.value_coef * value_loss
                loss.backward()
                with torch.no_grad():
                    sums["policy"] += float((policy_tok * mask).sum())
                    sums["entropy"] += float((entropy * mask).sum())
                    sums["value"] += float((value_turn * turn_mask).sum())
                    sums["clip_fraction"] += float((((ratio - clipped).abs() > 0) * mask).sum())
                    sums["tokens"] += float(mask.sum())
                    sums["turns"] += float(turn_mask.sum())
            dist.sum_gradients(model)
            dist.sum_gradients(head)
            if config.max_grad_norm > 0:  # apart: the head's gradient grows with |h|
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                torch.nn.utils.clip_grad_norm_(head.parameters(), config.max_grad_norm)
            optimizer.step()
    totals = {k: dist.all_sum(v) for k, v in sums.items()}
    v, r = np.concatenate([np.zeros(0), *values]), np.concatenate([np.zeros(0), *returns])
    spread = dist.all_sum(((r - dist.all_sum(r.sum()) / max(turns_total, 1.0)) ** 2).sum())
    residual = dist.all_sum(((r - v) ** 2).sum())
    tokens, turns = max(totals["tokens"], 1.0), max(totals["turns"], 1.0)
    return {
        "losses/policy": totals["policy"] / tokens,
        "losses/value": totals["value"] / turns,
        "losses/entropy": totals["entropy"] / tokens,
        "losses/clip_fraction": totals["clip_fraction"] / tokens,
        # 1: the critic foresaw the targets; 0: no better than their mean.
        "losses/explained_variance": 1.0 - residual / spread if spread > 0 else 0.0,
        "update/trained_tokens": totals["tokens"] / config.update_epochs,
    }


def train(config: PPOConfig) -> dict[str, Any]:
    """Run ``config``; returns the summary (final success rate, return, paths).
    Under torchrun every rank runs this; rank 0 writes the run folder."""
    import torch

    from envgym.trainers.common.run import rollout_metrics, start_training
    from envgym.vector import TextVectorEnv

    head: Any = None

    def with_critic(model: Any) -> Any:
        """Make the critic ``head``, zero at first (see above; the model folder
        never holds it), right after the model; AdamW over the policy and it."""
        nonlocal head
        head = torch.nn.Linear(model.config.hidden_size, 1).to(next(model.parameters()).device)
        torch.nn.init.zeros_(head.weight), torch.nn.init.zeros_(head.bias)
        value_lr = config.value_learning_rate or config.learning_rate
        groups = [{"params": model.parameters()}, {"params": head.parameters(), "lr": value_lr}]
        return torch.optim.AdamW(groups, lr=config.learning_rate)

    env = config.env_source()  # its id and constructor kwargs
    training = start_training(
        config, "ppo", env, options=config.reset_options(), optimizer=with_critic
    )
    dist, model, optimizer = training.dist, training.model, training.optimizer
    mine = training.mine
    if training.saved is not None:
        head.load_state_dict(training.saved["extra"]["value_head"])
    dist.broadcast_model(head)
    envs = TextVectorEnv(env, num_envs=len(mine), group_size=1, workers=config.workers)
    with envs, training:
        for step in range(training.start, config.steps):
            t_step = time.perf_counter()
            played, times = training.rollouts(envs, step)
            training.backend.sleep()  # a vLLM engine gives its memory back for the update
            # A crashed env's episode says nothing; one cut before its first reply has no turn.
            episodes = [e for e in played if e.error is None and e.turns]
            t_update = time.perf_counter()
            losses = {}
            if dist.all_sum(len(episodes)):
                losses = ppo_update(
                    model, head, optimizer, episodes, config, training.tokenizer.pad_token_id, dist
                )
            training.backend.sync_weights(model)
            update_s = time.perf_counter() - t_update
            metrics = {
                **rollout_metrics(dist, played, times, config.learning_rate),
                **losses,
                "update/update_s": update_s,
                "update/trained_episodes": dist.all_sum(len(episodes)),
                "time/step_s": time.perf_counter() - t_step,
            }
            # The critic is trainer state, not the agent: the checkpoint keeps it apart.
            training.end_step(step + 1, metrics, extra={"value_head": head.state_dict()})
    return training.finish()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m envgym.trainers.ppo``: parse the options, train, print the summary."""
    from envgym.trainers.common.run import run_main

    return run_main("ppo", "PPO", PPOConfig, train, argv)


if __name__ == "__main__":
    sys.exit(main())
