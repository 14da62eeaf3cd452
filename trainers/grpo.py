"""Multi-turn GRPO for envgym envs: GRPO, RLOO, GiGPO and turn-level advantages.

One file, read top to bottom: the config, the policy's token log-probs, then
the loop. Each step collects ``num_groups x group_size`` episodes through
`TextVectorEnv` (a group's members play the same task), turns their rewards
into per-turn advantages (``--estimator``), drops groups with nothing to
compare, and takes a clipped policy-gradient step on the policy's tokens
only (env tokens are masked out of the loss)::

    python -m envgym.trainers.grpo --env envgym/FrozenLake-v0 --model tiny --steps 50
    envgym train grpo --env envgym/Sokoban-v0 --model PATH --estimator gigpo --eval-every 10

``--model tiny`` builds a small random model and tokenizer here (no
download; `envgym.trainers.common.tiny`); any other value is a folder saved
by ``save_pretrained`` with a chat template. The run folder (``--out-dir``)
gets ``metrics.jsonl``, TensorBoard events, checkpoints (``--resume``
continues the last one exactly) and, with ``--eval-every``, results files
of held-out seeds that ``envgym submit`` and the leaderboard accept.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from envgym.trainers.common.advantages import ESTIMATORS, compute_advantages, zero_variance_groups
from envgym.trainers.common.config import option
from envgym.trainers.common.distributed import Distributed
from envgym.trainers.common.policy import BACKENDS, pad_tokens, token_logprobs
from envgym.trainers.common.rollout import Episode

__all__ = ["GRPOConfig", "main", "policy_update", "train"]


@dataclass
class GRPOConfig:
    """Multi-turn GRPO on an envgym env."""

    env: str = option("envgym/FrozenLake-v0", "env id to train on")
    difficulty: str = option("", "difficulty level ('' for the env's default)")
    env_kwargs: dict = option({}, "more constructor kwargs as JSON, e.g. '{\"max_turns\": 6}'")
    task_id: str = option(
        "", "reset every episode to this task (e.g. a FrozenLake map 'SFF/FHF/FFG')"
    )
    model: str = option(
        "tiny", "a folder saved by save_pretrained, or 'tiny' (a small random model)"
    )
    estimator: str = option("grpo", "advantage estimator", ESTIMATORS)
    steps: int = option(100, "policy updates to run")
    num_groups: int = option(8, "tasks per step")
    group_size: int = option(8, "episodes per task (the group the advantages compare within)")
    learning_rate: float = option(1e-4, "AdamW learning rate")
    max_grad_norm: float = option(1.0, "clip the gradient's norm to this (0: no clipping)")
    clip_low: float = option(0.2, "PPO clip below: ratio >= 1 - clip_low")
    clip_high: float = option(0.2, "PPO clip above: ratio <= 1 + clip_high (DAPO raises it)")
    kl_coef: float = option(0.0, "weight of the KL to the starting model (0: no reference model)")
    gamma: float = option(0.95, "turn discount for gigpo and turn (GiGPO uses 0.95)")
    step_weight: float = option(1.0, "gigpo: weight of the step-level advantage")
    scale_by_std: bool = option(True, "divide group-relative advantages by the group's std")
    drop_zero_variance: bool = option(True, "drop groups whose advantages are all zero")
    loss_agg: str = option("token-mean", "loss aggregation", ("token-mean", "sequence-mean"))
    update_epochs: int = option(1, "passes over each batch")
    minibatches: int = option(1, "optimizer steps per pass")
    micro_batch_size: int = option(16, "episodes per forward pass (memory, not maths)")
    temperature: float = option(1.0, "sampling temperature (log-probs use the same)")
    top_p: float = option(1.0, "nucleus sampling's mass")
    max_new_tokens: int = option(64, "longest reply, in tokens")
    max_context: int = option(
        0, "end an episode whose prompt would pass this many tokens (0: the model's limit)"
    )
    system_prompt: bool = option(True, "start each chat with the env's system prompt")
    warmup_steps: int = option(0, "format warm-up: supervised steps on random valid replies first")
    warmup_learning_rate: float = option(1e-3, "learning rate of the format warm-up")
    seed: int = option(0, "seed of torch, the tasks (step s plays seeds seed + s*num_groups + g)")
    workers: str = option("sync", "vector env workers", ("sync", "subprocess"))
    backend: str = option(
        "transformers",
        "generation engine ('vllm': a colocated engine on the GPU, pip install 'envgym[vllm]')",
        BACKENDS,
    )
    vllm_gpu_memory_utilization: float = option(
        0.3, "vllm: share of the GPU's memory the engine may take"
    )
    device: str = option("", "torch device ('' takes cuda when there is one)")
    torch_threads: int = option(0, "CPU threads torch may use (0: torch's default)")
    out_dir: str = option("", "run folder ('' makes runs/grpo-<env>-<time>)")
    save_every: int = option(0, "checkpoint every N steps (0: only at the end)")
    resume: bool = option(False, "continue the run in --out-dir from its last checkpoint")
    eval_every: int = option(0, "evaluate on held-out seeds every N steps (0: never)")
    eval_episodes: int = option(32, "episodes per evaluation")
    eval_seed: int = option(1_000_000, "first seed of the held-out evaluation episodes")
    tensorboard: bool = option(True, "write TensorBoard event files too")
    progress: bool = option(True, "show a live progress display")

    def __post_init__(self) -> None:
        problems = []
        if self.steps < 1 or self.num_groups < 1 or self.group_size < 1:
            problems.append("--steps, --num-groups and --group-size must be >= 1")
        if self.update_epochs < 1 or self.minibatches < 1 or self.micro_batch_size < 1:
            problems.append("--update-epochs, --minibatches and --micro-batch-size must be >= 1")
        if self.minibatches > self.num_groups * self.group_size:
            problems.append("--minibatches cannot exceed the episodes per step")
        if self.seed + self.steps * self.num_groups > self.eval_seed and self.eval_every:
            problems.append("training seeds would reach --eval-seed; raise --eval-seed")
        if problems:
            raise ValueError("; ".join(problems))

    def env_source(self) -> tuple[str, dict[str, Any]]:
        kwargs = dict(self.env_kwargs)
        if self.difficulty:
            kwargs["difficulty"] = self.difficulty
        return self.env, kwargs


#: Options a resumed run may change without changing what it computes.
RESUMABLE_CHANGES = frozenset(
    {
        "steps",
        "resume",
        "progress",
        "tensorboard",
        "save_every",
        "eval_every",
        "eval_episodes",
        "device",
        "torch_threads",
        "workers",
        "out_dir",
        "vllm_gpu_memory_utilization",
    }
)


def policy_update(
    model: Any,
    optimizer: Any,
    episodes: Sequence[Episode],
    advantages: Sequence[np.ndarray],
    config: GRPOConfig,
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


def train(config: GRPOConfig) -> dict[str, Any]:
    """Run ``config``; returns the summary (final success rate, return, paths).
    Under torchrun every rank runs this; rank 0 writes the run folder."""
    import gymnasium as gym
    import torch

    from envgym.evaluation.inputs import make_evaluation_env
    from envgym.trainers.common.checkpoint import load_weights
    from envgym.trainers.common.distributed import init_distributed
    from envgym.trainers.common.evaluation import evaluate_step
    from envgym.trainers.common.generation import SamplingParams
    from envgym.trainers.common.policy import load_policy, make_backend
    from envgym.trainers.common.progress import TrainProgress
    from envgym.trainers.common.rollout import collect_rollouts
    from envgym.trainers.common.run import (
        open_log,
        open_run,
        resume_or_warm_up,
        rollout_metrics,
        run_summary,
        save_and_evaluate,
        seed_everything,
    )
    from envgym.trainers.common.tokenization import ChatTokenizer
    from envgym.vector import TextVectorEnv

    env_id, env_kwargs = config.env_source()
    make_evaluation_env(env_id, env_kwargs).close()  # an unknown id or bad kwargs fail here
    dist = init_distributed(config.device)
    my_groups = dist.shard(config.num_groups)
    run = open_run(config, "grpo")
    seed_everything(config.seed, config.torch_threads)
    model, tokenizer = load_policy(config.model, config.seed, dist.device)
    chat = ChatTokenizer(tokenizer)
    params = SamplingParams(config.temperature, config.top_p, 0, config.max_new_tokens)
    options = {"task_id": config.task_id} if config.task_id else None
    max_context = config.max_context or getattr(model.config, "max_position_embeddings", None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    saved = resume_or_warm_up(
        config,
        run,
        dist,
        model=model,
        optimizer=optimizer,
        resumable=RESUMABLE_CHANGES,
        chat=chat,
        make_env=lambda: gym.make(env_id, **env_kwargs),
        options=options,
    )
    start = saved["step"] if saved else 0
    ref_model = None
    if config.kl_coef > 0:  # the policy RL starts from, warm-up included, kept beside the run
        reference = run.checkpoints / "reference"
        if saved is None and dist.is_main:
            model.save_pretrained(reference)
        dist.barrier()
        ref_model = copy.deepcopy(model).eval()
        load_weights(reference, ref_model)
    backend = make_backend(
        config.backend,
        model,
        tokenizer,
        chat.stop_token_ids,
        gpu_memory_utilization=config.vllm_gpu_memory_utilization,
        seed=config.seed + dist.rank,
    )
    envs = TextVectorEnv(
        (env_id, env_kwargs),
        num_envs=len(my_groups) * config.group_size,
        group_size=config.group_size,
        workers=config.workers,
    )
    history: list[dict[str, float]] = []
    evals: list[Path] = []
    show = config.progress and dist.is_main
    with (
        envs,
        open_log(run, config, dist, start) as run_log,
        TrainProgress(config.steps, start, enabled=show) as progress,
    ):
        for step in range(start, config.steps):
            t_step = time.perf_counter()
            played, times = collect_rollouts(
                envs,
                backend,
                chat,
                params,
                seed=config.seed + step * config.num_groups + my_groups.start,
                options=options,
                system_prompt=config.system_prompt,
                max_tokens=max_context,
            )
            backend.sleep()  # a vLLM engine gives its memory back for the update
            episodes = [e for e in played if e.error is None]  # a crashed env's says nothing
            advantages = compute_advantages(
                [e.group for e in episodes],
                [e.rewards for e in episodes],
                [e.state_keys for e in episodes],
                estimator=config.estimator,
                gamma=config.gamma,
                step_weight=config.step_weight,
                scale_by_std=config.scale_by_std,
            )
            dropped: set[int] = set()
            if config.drop_zero_variance:
                dropped = zero_variance_groups([e.group for e in episodes], advantages)
            kept = [k for k, e in enumerate(episodes) if e.group not in dropped]
            t_update = time.perf_counter()
            losses = {}
            if dist.all_sum(len(kept)):
                losses = policy_update(
                    model,
                    optimizer,
                    [episodes[k] for k in kept],
                    [advantages[k] for k in kept],
                    config,
                    tokenizer.pad_token_id,
                    ref_model,
                    dist,
                )
            backend.sync_weights(model)
            metrics = {
                **rollout_metrics(dist, played, times, config.learning_rate),
                **losses,
                "update/update_s": time.perf_counter() - t_update,
                "update/dropped_groups": dist.all_sum(len(dropped)),
                "update/trained_episodes": dist.all_sum(len(kept)),
                "update/trained_tokens": dist.all_sum(
                    sum(sum(episodes[k].tokens.loss_mask) for k in kept)
                ),
                "time/step_s": time.perf_counter() - t_step,
            }
            done = step + 1
            scores, files = save_and_evaluate(
                run,
                config,
                dist,
                done,
                model=model,
                tokenizer=tokenizer,
                optimizer=optimizer,
                evaluate=partial(
                    evaluate_step, config=config, out_dir=run.out_dir, device=dist.device
                ),
            )
            metrics.update(scores)
            evals += files
            if dist.is_main:
                run_log.log(done, metrics)
            history.append(metrics)
            progress.update(done, metrics)
    backend.close()
    dist.close()
    return run_summary(run, config, history, evals)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m envgym.trainers.grpo``: parse the options, train, print the summary."""
    from envgym.trainers.common.run import run_main

    return run_main("grpo", "GRPO", GRPOConfig, train, argv)


if __name__ == "__main__":
    sys.exit(main())
