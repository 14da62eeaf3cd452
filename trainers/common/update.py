"""The clipped policy-gradient update that GRPO and self-play share.

`policy_update` takes one batch of episodes (or, for self-play, seats or
single moves) with a per-turn advantage each and takes PPO-clipped steps on
the policy's reply tokens only (env tokens are masked out of the loss), with
an optional k3 KL term to a reference model. Its options come from the
trainer's config (`UpdateOptions`: GRPO passes its `GRPOConfig`, self-play
maps its symmetric ``clip`` onto ``clip_low`` and ``clip_high``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from envgym.trainers.common.distributed import Distributed
from envgym.trainers.common.policy import pad_tokens, token_logprobs
from envgym.trainers.common.rollout import Episode

__all__ = ["UpdateOptions", "policy_update"]


class UpdateOptions(Protocol):
    """The options `policy_update` reads."""

    micro_batch_size: int  # episodes per forward pass (memory, not maths)
    update_epochs: int  # passes over the batch
    minibatches: int  # optimizer steps per pass
    temperature: float  # the sampling temperature (log-probs use the same)
    clip_low: float  # ratio >= 1 - clip_low
    clip_high: float  # ratio <= 1 + clip_high
    kl_coef: float  # weight of the KL to the reference model
    loss_agg: str  # "token-mean" or "sequence-mean"
    max_grad_norm: float  # clip the gradient's norm to this (0: no clipping)


def policy_update(
    model: Any,
    optimizer: Any,
    episodes: Sequence[Episode],
    advantages: Sequence[np.ndarray],
    config: UpdateOptions,
    pad_id: int,
    ref_model: Any = None,
    dist: Distributed | None = None,
) -> dict[str, float]:
    """The clipped policy-gradient update on one batch; returns its losses.

    Under torchrun (``dist``) each rank passes its own episodes (possibly
    none); losses are divided by counts summed over the ranks and the
    gradients summed, so every rank takes the step one process would take
    on the whole batch."""
    import torch

    dist = dist or Distributed()
    device = next(model.parameters()).device
    micro = [
        range(i, min(i + config.micro_batch_size, len(episodes)))
        for i in range(0, len(episodes), config.micro_batch_size)
    ]
    batches = [
        pad_tokens([episodes[k].tokens for k in m], [advantages[k] for k in m], pad_id)
        for m in micro
    ]
    batches = [{k: v.to(device) for k, v in b.items()} for b in batches]
    # Log-probs of the sampling policy (and the reference) before any change. One
    # optimizer step per batch needs no extra pass: the ratio is 1 (old = current).
    single_pass = config.update_epochs == 1 and config.minibatches == 1
    with torch.no_grad():
        for b in batches:
            if not single_pass:
                b["old"] = token_logprobs(
                    model, b["ids"], b["attention"], config.temperature, b["mask"]
                )[0]
            if ref_model is not None:
                b["ref"] = token_logprobs(
                    ref_model, b["ids"], b["attention"], config.temperature, b["mask"]
                )[0]
    sums = dict.fromkeys(("policy", "kl", "entropy", "clip_fraction"), 0.0)
    # The same number of optimizer steps on every rank: minibatch k is slice k of each rank's.
    slices = np.array_split(np.arange(len(batches)), config.minibatches)
    for _ in range(config.update_epochs):
        for part in slices:
            group = [batches[i] for i in part]
            tokens = dist.all_sum(sum(float(b["mask"].sum()) for b in group))
            sequences = dist.all_sum(sum(b["ids"].shape[0] for b in group))
            if sequences == 0:
                continue
            optimizer.zero_grad(set_to_none=True)
            for b in group:
                logp, entropy = token_logprobs(
                    model, b["ids"], b["attention"], config.temperature, b["mask"]
                )
                ratio = torch.exp(logp - (logp.detach() if single_pass else b["old"]))
                clipped = torch.clamp(ratio, 1 - config.clip_low, 1 + config.clip_high)
                loss_tok = -torch.min(ratio * b["adv"], clipped * b["adv"])
                kl_tok = torch.zeros_like(logp)
                if ref_model is not None:  # k3: an unbiased, always positive KL estimate
                    delta = b["ref"] - logp
                    kl_tok = torch.exp(delta) - delta - 1
                    loss_tok = loss_tok + config.kl_coef * kl_tok
                mask = b["mask"]
                if config.loss_agg == "token-mean":  # every token of the minibatch weighs the same
                    loss = (loss_tok * mask).sum() / max(tokens, 1.0)
                else:  # each episode weighs the same, its tokens averaged first
                    per_seq = (loss_tok * mask).sum(-1) / mask.sum(-1).clamp(min=1)
                    loss = per_seq.sum() / sequences
                loss.backward()
                with torch.no_grad():
                    outside = ((ratio - clipped).abs() > 0).float()
                    for name, value in (
                        ("policy", loss_tok),
                        ("kl", kl_tok),
                        ("entropy", entropy),
                        ("clip_fraction", outside),
                    ):
                        sums[name] += float((value * mask).sum())
            dist.sum_gradients(model)
            if config.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
    # Token means over the whole batch and every epoch, every rank's tokens counted.
    tokens_total = dist.all_sum(sum(float(b["mask"].sum()) for b in batches))
    scale = max(tokens_total * config.update_epochs, 1.0)
    return {f"losses/{name}": dist.all_sum(value) / scale for name, value in sums.items()}
