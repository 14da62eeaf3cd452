"""SPIRAL-style self-play on envgym's games: one policy plays every seat.

SPIRAL (Liu et al. 2025, arXiv 2506.24119) trains an LLM on zero-sum games
against itself. Each step plays ``--games-per-step`` games through the
PettingZoo AEC API, all at once, the replies of each policy generated in one
batch per round (`envgym.trainers.common.selfplay_rollout`). One seat of each
game is the learner's; every other seat is the learner too or, with
``--pool-prob``, a past snapshot from the opponent pool (one every
``--pool-every`` steps, the last ``--pool-size`` kept). Only the learner's
seats are trained on, with GRPO's clipped policy gradient on their reply
tokens (`envgym.trainers.common.update.policy_update`, shared with GRPO).

Role-conditioned advantages (SPIRAL's RAE): the seats are not equally strong
(X moves first), so each role keeps a moving average of its returns,
`envgym.selfplay.RoleBaseline` (``b <- decay * b + (1 - decay) * G``). A
seat's advantage is ``G - b[role]`` (the baseline before this step) on every
turn of its game; then every learner seat's return updates its role's
baseline, every rank's under torchrun, so the ranks keep the same baselines. ::

    python -m envgym.trainers.selfplay --game tictactoe --model tiny --steps 200
    envgym train selfplay --game kuhn_poker --model PATH --pool-every 20 --eval-every 50

``--eval-every`` plays the checkpoint against the game's built-in opponents
(``envgym/TicTacToe-v0`` and so on) at each ``--eval-levels`` difficulty
(easy: random moves, medium: optimal half the time, hard: optimal), in every
seat, and writes results files that ``envgym submit`` accepts.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from envgym.registry import ENV_SPECS
from envgym.selfplay import RoleBaseline, draw_seats
from envgym.trainers.common.distributed import Distributed
from envgym.trainers.common.options import (
    JsonObject,
    Resumable,
    RunOptions,
    option,
    override_default,
)
from envgym.trainers.common.selfplay_rollout import SeatEpisode

__all__ = ["GAMES", "SelfPlayConfig", "learner_seats", "main", "role_advantages", "train"]

#: The games: name (the game's module) -> its single-agent id against built-in opponents.
GAMES = {
    spec.entry_point.split(":")[0].rsplit(".", 1)[-1]: spec.id
    for spec in ENV_SPECS
    if "self-play" in spec.tags
}
LEVELS = ("easy", "medium", "hard")


@dataclass
class SelfPlayConfig(RunOptions):
    """SPIRAL-style self-play on a game, against itself and past checkpoints."""

    per_step_option = "games_per_step"

    game: str = option("tictactoe", "the game to play", tuple(GAMES))
    game_kwargs: JsonObject = option(
        {}, "the game's constructor kwargs as JSON, e.g. '{\"num_players\": 3}'"
    )
    games_per_step: int = option(32, "games played per step (over all processes)")
    clip: float = option(0.2, "PPO clip: the ratio stays within [1 - clip, 1 + clip]")
    loss_agg: str = option("token-mean", "loss aggregation", ("token-mean", "sequence-mean"))
    baseline_decay: float = option(0.95, "each role's baseline: b <- decay * b + (1 - decay) * G")
    pool_every: int = option(0, "add a snapshot of the policy to the opponent pool every N steps")
    pool_size: int = option(4, "snapshots kept in the pool (the oldest leaves first)")
    pool_prob: float = option(0.25, "chance that a non-learner seat is a pool snapshot")
    history: bool = option(
        True,
        "prompt each move with the seat's game so far (--no-history: the current "
        "observation only, each move its own sample; evaluation prompts the same way)",
    )
    eval_episodes: Resumable[int] = override_default("eval_episodes", 16)
    eval_levels: Resumable[str] = option(
        "easy,medium,hard", "built-in opponent levels to evaluate against"
    )
    eval_temperature: Resumable[float] = option(
        0.0, "sampling temperature of the evaluation (0: greedy)"
    )

    def problems(self) -> list[str]:
        problems = super().problems()
        if self.game not in GAMES:
            problems.append(f"--game {self.game!r} is not one of {', '.join(GAMES)}")
        if self.games_per_step < 1:
            problems.append("--games-per-step must be >= 1")
        if self.minibatches > self.games_per_step:
            problems.append("--minibatches cannot exceed --games-per-step")
        if not 0.0 < self.clip < 1.0:
            problems.append("--clip must be between 0 and 1, e.g. 0.2")
        if not 0.0 <= self.baseline_decay < 1.0:
            problems.append("--baseline-decay must be in [0, 1), e.g. 0.95")
        if self.pool_every < 0 or self.pool_size < 1:
            problems.append("--pool-every must be >= 0 (0: no pool) and --pool-size >= 1")
        if not 0.0 <= self.pool_prob <= 1.0:
            problems.append("--pool-prob must be between 0 and 1")
        if self.temperature <= 0:
            problems.append("--temperature must be > 0: self-play learns from sampled replies")
        unknown = [level for level in self.levels if level not in LEVELS]
        if unknown or not self.levels:
            problems.append(f"--eval-levels takes a comma list of {', '.join(LEVELS)}")
        if self.eval_every and self.eval_episodes < 1:
            problems.append("--eval-episodes must be >= 1")
        return problems

    @property
    def env(self) -> str:
        """The game's single-agent id (the built-in opponents; the run folder's name)."""
        return GAMES[self.game]

    @property
    def levels(self) -> list[str]:
        return [level.strip() for level in self.eval_levels.split(",") if level.strip()]


def role_advantages(
    seats: Sequence[SeatEpisode], baseline: RoleBaseline, dist: Distributed | None = None
) -> list[np.ndarray]:
    """SPIRAL's role-conditioned advantages of this rank's learner ``seats``:
    ``return - baseline[role]`` on each of a seat's turns (the baseline as it
    was before this step), then every rank's returns, in rank and game order,
    update their roles' baselines (so every rank keeps the same baseline)."""
    dist = dist or Distributed()
    advantages = [np.full(s.turns, baseline.advantage(s.player, s.episode_return)) for s in seats]
    for part in dist.gather([(s.player, s.episode_return) for s in seats]):
        for role, episode_return in part:
            baseline.update(role, episode_return)
    return advantages


def learner_seats(games: Sequence[dict[str, SeatEpisode]]) -> tuple[list, list[bool]]:
    """The seats to train on: the learner's (not a pool snapshot's) that made a
    move in a game that ran to its end; and whether each one's game had a pool seat."""
    seats, vs_pool = [], []
    for game in games:
        pooled = any(s.policy != "self" for s in game.values())
        for s in game.values():
            if s.policy == "self" and s.turns and not s.context_full:
                seats.append(s)
                vs_pool.append(pooled)
    return seats, vs_pool


def training_samples(
    seats: Sequence[SeatEpisode], advantages: Sequence[np.ndarray], history: bool
) -> tuple[list[Any], list[np.ndarray]]:
    """What the update trains on: each seat's whole game (``history``) or
    each of its moves alone, every move with its seat's advantage."""
    if history:
        return list(seats), list(advantages)
    samples, values = [], []
    for seat, advantage in zip(seats, advantages, strict=True):
        for move, value in zip(seat.moves, advantage, strict=True):
            samples.append(SimpleNamespace(tokens=move))
            values.append(np.array([value]))
    return samples, values


def seat_map(
    config: SelfPlayConfig, agents: Sequence[str], pool: int, step: int, game: int
) -> dict:
    """Who plays each seat of game ``game`` of ``step``: the learner (``"self"``)
    in a random seat, every other seat the learner or, with ``pool_prob``, a
    random pool snapshot (`envgym.selfplay.draw_seats`). Drawn from the key
    ``[seed, step, game]`` alone, so a resumed run repeats it."""
    return draw_seats(agents, pool, config.pool_prob, [config.seed, step, game])


def evaluate_against_builtins(
    checkpoint: Path, config: SelfPlayConfig, out_dir: Path, num_players: int, device: str
) -> tuple[dict[str, float], list[Path]]:
    """Play ``checkpoint`` (at ``eval_temperature``; 0 is greedy) against the
    built-in opponents at each level, in every seat; returns the ``eval/``
    metrics (per level, and per level and seat) and the results files."""
    from envgym.evaluation.batch import evaluate_many
    from envgym.evaluation.results_file import write_results
    from envgym.trainers.common.checkpoint import MODEL_DIR

    jobs = [
        (config.env, {**config.game_kwargs, "difficulty": level, "seat": seat})
        for level in config.levels
        for seat in range(num_players)
    ]
    results = evaluate_many(
        jobs,
        f"hf:{checkpoint / MODEL_DIR}",
        config.eval_episodes,
        config.eval_seed,
        num_envs=min(len(jobs) * config.eval_episodes, 64),
        agent_options={
            "max_new_tokens": config.max_new_tokens,
            "temperature": config.eval_temperature,
            "device": device,
            "history": config.history,
            **({} if config.system_prompt else {"system_prompt": ""}),
        },
    )
    metrics: dict[str, float] = {}
    paths, by_level = [], {}
    for (_, kwargs), result in zip(jobs, results, strict=True):
        level, seat = kwargs["difficulty"], kwargs["seat"]
        paths.append(write_results(result, out_dir / f"{level}-seat{seat}.json"))
        returns = [e["return"] for e in result["episodes"]]
        metrics |= outcome_rates(f"eval/{level}_player_{seat}_", returns)
        by_level.setdefault(level, []).extend(returns)
    for level, returns in by_level.items():
        metrics |= outcome_rates(f"eval/{level}_", returns)
    return metrics, paths


def outcome_rates(prefix: str, returns: Sequence[float]) -> dict[str, float]:
    """Mean return and the shares of wins (return > 0), draws (0) and losses."""
    r = np.asarray(returns, dtype=float)
    return {
        f"{prefix}return": float(r.mean()),
        f"{prefix}win_rate": float(np.mean(r > 0)),
        f"{prefix}draw_rate": float(np.mean(r == 0)),
        f"{prefix}loss_rate": float(np.mean(r < 0)),
        f"{prefix}win_or_draw_rate": float(np.mean(r >= 0)),
    }


def role_metrics(summaries: Sequence[tuple], baseline: RoleBaseline) -> dict[str, float]:
    """Per role: return, baseline, win/draw/loss and forfeit rates of the
    learner's seats (``summaries`` from `_summaries`, every rank's)."""
    metrics: dict[str, float] = {}
    for role in sorted({s[0] for s in summaries}):
        mine = [s for s in summaries if s[0] == role]
        metrics |= outcome_rates(f"roles/{role}_", [s[2] for s in mine])
        metrics[f"roles/{role}_baseline"] = baseline.values.get(role, 0.0)
        metrics[f"roles/{role}_forfeit_rate"] = float(np.mean([s[5] for s in mine]))
    return metrics


def _summaries(seats: Sequence[SeatEpisode], vs_pool: Sequence[bool]) -> list[tuple]:
    """(role, against the pool, return, turns, invalid replies, forfeit) per learner seat."""
    return [
        (s.player, p, s.episode_return, s.turns, s.valid.count(False), s.forfeit)
        for s, p in zip(seats, vs_pool, strict=True)
    ]


def train(config: SelfPlayConfig) -> dict[str, Any]:
    """Run ``config``; returns the summary (final rates, baselines, paths).
    Under torchrun every rank runs this; rank 0 writes the run folder."""
    from envgym.registry import get_spec, load_entry_point
    from envgym.trainers.common.checkpoint import load_weights
    from envgym.trainers.common.generation import TransformersBackend
    from envgym.trainers.common.run import start_training
    from envgym.trainers.common.selfplay_rollout import play_games
    from envgym.trainers.common.update import policy_update

    game_cls = load_entry_point(get_spec(config.env).entry_point).game_cls
    training = start_training(
        config,
        "selfplay",
        (config.env, {**config.game_kwargs, "difficulty": "easy"}),  # checked, warmed up on
        history=config.history,
    )
    dist, model, optimizer = training.dist, training.model, training.optimizer
    tokenizer, chat, backend = training.tokenizer, training.chat, training.backend
    run, my_games, saved = training.run, training.mine, training.saved
    baseline = RoleBaseline(config.baseline_decay)
    baseline.values = dict(saved["extra"]["baselines"]) if saved else {}
    pool_paths: list[str] = list(saved["extra"]["pool"]) if saved else []
    pool = [copy.deepcopy(model).eval() for _ in pool_paths]
    for path, snapshot in zip(pool_paths, pool, strict=True):
        load_weights(Path(path), snapshot)
    # policy_update's UpdateOptions (GRPO's names): symmetric clipping, no KL term here.
    same = ("micro_batch_size", "update_epochs", "minibatches", "temperature", "loss_agg")
    update = SimpleNamespace(
        **{name: getattr(config, name) for name in (*same, "max_grad_norm")},
        clip_low=config.clip,
        clip_high=config.clip,
        kl_coef=0.0,
    )
    games = [game_cls(**config.game_kwargs) for _ in my_games]
    agents = games[0].possible_agents
    with training:
        for step in range(training.start, config.steps):
            t_step = time.perf_counter()
            seats = [seat_map(config, agents, len(pool), step, g) for g in my_games]
            backends = {"self": backend} | {
                f"pool[{k}]": TransformersBackend(m, tokenizer.pad_token_id, chat.stop_token_ids)
                for k, m in enumerate(pool)
            }
            played, times = play_games(
                games,
                seats,
                backends,
                chat,
                training.params,
                seeds=[training.first_seed(step) + k for k in range(len(my_games))],
                system_prompt=config.system_prompt,
                max_tokens=training.max_context,
                history=config.history,
            )
            backend.sleep()  # a vLLM engine gives its memory back for the update
            learner, vs_pool = learner_seats(played)
            advantages = role_advantages(learner, baseline, dist)
            samples, weights = training_samples(learner, advantages, config.history)
            t_update = time.perf_counter()
            losses = policy_update(
                model, optimizer, samples, weights, update, tokenizer.pad_token_id, None, dist
            )
            backend.sync_weights(model)
            update_s = time.perf_counter() - t_update
            done = step + 1
            if config.pool_every and done % config.pool_every == 0:
                path = run.out_dir / "pool" / f"step_{done:06d}"
                if dist.is_main:
                    model.save_pretrained(path)
                pool.append(copy.deepcopy(model).eval())
                pool_paths.append(str(path))
                pool, pool_paths = pool[-config.pool_size :], pool_paths[-config.pool_size :]
            # Every rank's seats count in the logged rates (rank 0 logs them).
            summaries = [s for part in dist.gather(_summaries(learner, vs_pool)) for s in part]
            against_pool = [s[2] > 0 for s in summaries if s[1]]
            context_full = sum(g["player_0"].context_full for g in played)
            metrics = {
                # No rates in a step whose learner seats never moved (a pool seat forfeited first).
                **(
                    {
                        "charts/success_rate": float(np.mean([s[2] > 0 for s in summaries])),
                        "charts/episodic_return": float(np.mean([s[2] for s in summaries])),
                    }
                    if summaries
                    else {}
                ),
                "charts/episode_turns": float(np.mean([s[3] for s in summaries] or [0])),
                "charts/learning_rate": config.learning_rate,
                "charts/episodes": dist.all_sum(len(played)),
                **role_metrics(summaries, baseline),
                "selfplay/pool_size": float(len(pool)),
                "selfplay/pool_games": dist.all_sum(sum(vs_pool)) / max(len(summaries), 1),
                "selfplay/invalid_reply_rate": sum(s[4] for s in summaries)
                / max(sum(s[3] for s in summaries), 1),
                "selfplay/vs_pool_win_rate": float(np.mean(against_pool or [0.0])),
                **losses,
                "rollout/tokens_per_s": times.generated_tokens / max(times.generation_s, 1e-9),
                "rollout/generation_s": times.generation_s,
                "rollout/env_s": times.env_s,
                "rollout/tokenization_s": times.tokenization_s,
                "rollout/context_full": dist.all_sum(context_full),
                "update/update_s": update_s,
                "update/trained_episodes": float(len(summaries)),
                "time/step_s": time.perf_counter() - t_step,
            }
            training.end_step(
                done,
                metrics,
                extra={"baselines": dict(baseline.values), "pool": list(pool_paths)},
                evaluate=lambda path, _done: evaluate_against_builtins(
                    path, config, run.out_dir / "eval" / path.name, len(agents), dist.device
                ),
            )
    summary = training.finish()
    last = training.history[-1] if training.history else {}
    return summary | {
        "baselines": ", ".join(f"{k} {v:+.3f}" for k, v in sorted(baseline.values.items())),
        **{
            k[5:]: v
            for k, v in last.items()
            if k.startswith("eval/")
            and "player" not in k
            and k.endswith(("win_or_draw_rate", "_return"))
        },
        "pool": pool_paths,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m envgym.trainers.selfplay``: parse the options, train, print the summary."""
    from envgym.trainers.common.run import run_main

    return run_main("selfplay", "Self-play", SelfPlayConfig, train, argv)


if __name__ == "__main__":
    sys.exit(main())
