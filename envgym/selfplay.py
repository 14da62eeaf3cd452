"""Self-play rollouts for trainers: a policy against itself or past policies.

`play_episode` and `self_play` run a policy against itself or a pool of past
policies on any `MultiAgentTextEnv` game and return each seat's trajectory
with its return, and `RoleBaseline` keeps a per-role running mean of returns
for role-conditioned advantages (SPIRAL-style), since in most games the seats
are not equally strong. (A game against built-in opponents, as a single-agent
env, is `envgym.envs.games.versus.VersusEnv`.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envgym.multiagent import MultiAgentTextEnv, Policy

__all__ = [
    "Policy",
    "RoleBaseline",
    "Trajectory",
    "play_episode",
    "self_play",
]


@dataclass
class Trajectory:
    """One seat's side of a game: what it saw, what it said, what it got.

    ``rewards[i]`` is the reward that followed ``actions[i]`` (through the other
    players' moves, up to this seat's next turn or the end of the game).
    """

    player: str
    policy: str
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))


def _as_policy(policy: Any) -> Policy:
    act = getattr(policy, "act", None)
    if callable(act):
        return act
    if callable(policy):
        return policy
    raise TypeError(
        f"a policy is a callable (observation, info) -> reply or an agent with .act(); "
        f"got {type(policy).__name__}"
    )


def play_episode(
    game: MultiAgentTextEnv,
    policies: Policy | Mapping[str, Policy],
    *,
    seed: int | None = None,
    names: Mapping[str, str] | None = None,
) -> dict[str, Trajectory]:
    """Play one game; `policies` is one policy for every seat (pure self-play)
    or a mapping from agent (``player_0``, ...) to policy."""
    game.reset(seed=seed)
    acting = {
        agent: _as_policy(policies[agent] if isinstance(policies, Mapping) else policies)
        for agent in game.possible_agents
    }
    names = names or {}
    trajectories = {
        agent: Trajectory(agent, names.get(agent, "self")) for agent in game.possible_agents
    }
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, info = game.last()
        trajectory = trajectories[agent]
        if trajectory.rewards:
            trajectory.rewards[-1] += float(reward)
        if terminated or truncated:
            game.step(None)
            continue
        reply = acting[agent](obs, dict(info))
        trajectory.observations.append(obs)
        trajectory.actions.append(reply)
        trajectory.rewards.append(0.0)
        trajectory.infos.append(dict(info))
        game.step(reply)
    return trajectories


def self_play(
    game_fn: Callable[[], MultiAgentTextEnv],
    policy: Policy,
    *,
    episodes: int,
    seed: int = 0,
    pool: Sequence[Policy] = (),
    pool_prob: float = 0.5,
) -> list[dict[str, Trajectory]]:
    """Play `policy` against itself, or, with probability `pool_prob` per seat,
    against policies drawn from `pool` (e.g. past checkpoints).

    The learner's seat changes at random every episode, so it learns every
    role. Each trajectory's ``policy`` says who played it: ``"self"`` or
    ``"pool[i]"``; train on the ``"self"`` ones.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    if not 0.0 <= pool_prob <= 1.0:
        raise ValueError(f"pool_prob must be between 0 and 1, got {pool_prob}")
    rng = np.random.default_rng(seed)
    game = game_fn()
    results = []
    for episode in range(episodes):
        learner = game.possible_agents[int(rng.integers(len(game.possible_agents)))]
        policies: dict[str, Policy] = {}
        names: dict[str, str] = {}
        for agent in game.possible_agents:
            if agent != learner and pool and rng.random() < pool_prob:
                k = int(rng.integers(len(pool)))
                policies[agent], names[agent] = pool[k], f"pool[{k}]"
            else:
                policies[agent], names[agent] = policy, "self"
        results.append(play_episode(game, policies, seed=seed + episode, names=names))
    return results


class RoleBaseline:
    """Running mean of returns per role, for role-conditioned advantages.

    ``advantage(role, G) = G - baseline[role]``; the baseline is an
    exponential moving average with rate `decay` (SPIRAL's role-conditioned
    advantage estimation uses the same idea).
    """

    def __init__(self, decay: float = 0.95) -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay}")
        self.decay = decay
        self.values: dict[str, float] = {}

    def advantage(self, role: str, episode_return: float) -> float:
        return episode_return - self.values.get(role, 0.0)

    def update(self, role: str, episode_return: float) -> None:
        old = self.values.get(role)
        if old is None:
            self.values[role] = episode_return
        else:
            self.values[role] = self.decay * old + (1 - self.decay) * episode_return
