"""Multi-turn GRPO for envgym envs: GRPO, RLOO, GiGPO and turn-level advantages.

One file, read top to bottom: the config (the algorithm's options; those of
every run are `envgym.trainers.common.options.RunOptions`), then the loop.
Each step collects ``num_groups x group_size`` episodes through
`TextVectorEnv` (a group's members play the same task), turns their rewards
into per-turn advantages (``--estimator``), drops groups with nothing to
compare, and takes a clipped policy-gradient step on the policy's tokens
only (env tokens are masked out of the loss; `envgym.trainers.common.update`,
which self-play shares)::

    python -m envgym.trainers.grpo --env envgym/FrozenLake-v0 --model tiny --steps 50
    envgym train grpo --env envgym/Sokoban-v0 --model PATH --estimator gigpo --eval-every 10

``--model tiny`` builds a small random model and tokenizer here (no
download; `envgym.trainers.common.tiny`); any other value is a folder saved
by ``save_pretrained`` with a chat template. The run folder (``--out-dir``)
gets ``metrics.jsonl``, TensorBoard events, checkpoints (``--resume``
continues the last one exactly) and, with ``--eval-every``, results files
of held-out seeds that ``envgym submit`` and the leaderboard accept.

Tree rollouts (ARPO, TreeRL): ``--tree-branch-turns 1,3 --tree-width 2``
forks every episode after its 1st and 3rd replies into 2 continuations each
(`TextVectorEnv.branch`), so a group of ``--group-size 8`` holds 2 trees of 4
leaves. Each node's turns are scored against its siblings' subtree returns
(the mean return of the leaves under each): with ``grpo``,
``A(n) = (V(n) - mean_sib V) / (std_sib V + eps)``; a root's siblings are the
other roots of its group. A shared prefix is trained once, in the episode
that played it. Layout and formulas: `envgym.trainers.common.tree`. The run
log counts ``tree/nodes`` and ``tree/leaves`` per step.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envgym.trainers.common.advantages import ESTIMATORS, compute_advantages, zero_variance_groups
from envgym.trainers.common.options import EnvRunOptions, option
from envgym.trainers.common.tree import (
    TREE_ESTIMATORS,
    TreeShape,
    parse_branch_turns,
    tree_advantages,
    tree_counts,
)
from envgym.trainers.common.update import policy_update

__all__ = ["GRPOConfig", "main", "train"]


@dataclass
class GRPOConfig(EnvRunOptions):
    """Multi-turn GRPO on an envgym env."""

    per_step_option = "num_groups"

    estimator: str = option("grpo", "advantage estimator", ESTIMATORS)
    num_groups: int = option(8, "tasks per step")
    group_size: int = option(8, "episodes per task (the group the advantages compare within)")
    clip_low: float = option(0.2, "PPO clip below: ratio >= 1 - clip_low")
    clip_high: float = option(0.2, "PPO clip above: ratio <= 1 + clip_high (DAPO raises it)")
    kl_coef: float = option(0.0, "weight of the KL to the starting model (0: no reference model)")
    gamma: float = option(0.95, "turn discount for gigpo and turn (GiGPO uses 0.95)")
    step_weight: float = option(1.0, "gigpo: weight of the step-level advantage")
    scale_by_std: bool = option(True, "divide group-relative advantages by the group's std")
    drop_zero_variance: bool = option(True, "drop groups whose advantages are all zero")
    loss_agg: str = option("token-mean", "loss aggregation", ("token-mean", "sequence-mean"))
    tree_branch_turns: str = option(
        "", "tree rollouts: fork each episode after these reply counts, e.g. '1,3' ('': none)"
    )
    tree_width: int = option(2, "tree rollouts: continuations per fork")

    def tree(self) -> TreeShape | None:
        """The tree rollouts' shape, or None without ``--tree-branch-turns``."""
        turns = parse_branch_turns(self.tree_branch_turns)
        return TreeShape(turns, self.tree_width) if turns else None

    def problems(self) -> list[str]:
        problems = super().problems()
        if self.num_groups < 1 or self.group_size < 1:
            problems.append("--num-groups and --group-size must be >= 1")
        if self.minibatches > self.num_groups * self.group_size:
            problems.append("--minibatches cannot exceed the episodes per step")
        try:
            tree = self.tree()
        except ValueError as exc:
            return [*problems, str(exc)]
        if tree is not None:
            problem = tree.problem(self.group_size)
            if problem:
                problems.append(problem)
            if self.estimator not in TREE_ESTIMATORS:
                problems.append(
                    f"tree rollouts score each node against its siblings: use --estimator "
                    f"{' or '.join(TREE_ESTIMATORS)} (got {self.estimator})"
                )
        return problems


def train(config: GRPOConfig) -> dict[str, Any]:
    """Run ``config``; returns the summary (final success rate, return, paths).
    Under torchrun every rank runs this; rank 0 writes the run folder."""
    from envgym.trainers.common.checkpoint import load_weights
    from envgym.trainers.common.run import rollout_metrics, start_training
    from envgym.vector import TextVectorEnv

    env = config.env_source()  # its id and constructor kwargs
    training = start_training(config, "grpo", env, options=config.reset_options())
    dist, model, optimizer = training.dist, training.model, training.optimizer
    my_groups = training.mine
    ref_model = None
    if config.kl_coef > 0:  # the policy RL starts from, warm-up included, kept beside the run
        reference = training.run.checkpoints / "reference"
        if training.saved is None and dist.is_main:
            model.save_pretrained(reference)
        dist.barrier()
        ref_model = copy.deepcopy(model).eval()
        load_weights(reference, ref_model)
    envs = TextVectorEnv(
        env,
        num_envs=len(my_groups) * config.group_size,
        group_size=config.group_size,
        workers=config.workers,
    )
    tree = config.tree()
    with envs, training:
        for step in range(training.start, config.steps):
            t_step = time.perf_counter()
            played, times = training.rollouts(envs, step, tree)
            training.backend.sleep()  # a vLLM engine gives its memory back for the update
            episodes = [e for e in played if e.error is None]  # a crashed env's says nothing
            if tree is not None:
                advantages = tree_advantages(
                    tree,
                    [e.tree_node for e in episodes],
                    [e.rewards for e in episodes],
                    estimator=config.estimator,
                    scale_by_std=config.scale_by_std,
                )
            else:
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
                    training.tokenizer.pad_token_id,
                    ref_model,
                    dist,
                )
            training.backend.sync_weights(model)
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
            if tree is not None:
                nodes, leaves = tree_counts([e.tree_node for e in played])
                metrics["tree/nodes"] = dist.all_sum(nodes)
                metrics["tree/leaves"] = dist.all_sum(leaves)
            training.end_step(step + 1, metrics)
    return training.finish()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m envgym.trainers.grpo``: parse the options, train, print the summary."""
    from envgym.trainers.common.run import run_main

    return run_main("grpo", "GRPO", GRPOConfig, train, argv)


if __name__ == "__main__":
    sys.exit(main())
