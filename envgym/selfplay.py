"""Self-play for trainers: a policy against itself or past policies.

This module owns the three rules every self-play rollout follows, so a trainer
adds only what it needs on top (tokenization, batched generation; see
`envgym.trainers.common.selfplay_rollout`):

- `GameLoop`: stepping a `MultiAgentTextEnv` game through the PettingZoo AEC
  loop (``agent_iter``, ``last``, ``step``) one reply at a time, and reward
  attribution: ``rewards[t]`` of a seat is what it got from its turn ``t`` up
  to its next turn or the end of the game, read from ``last()`` (PettingZoo's
  cumulative reward since the seat last acted).
- `draw_seats`: the learner's seat and its opponents, drawn from a key that
  names the game alone, so the same game gets the same seats in any process
  and a resumed run repeats them.
- `RoleBaseline`: a per-role running mean of returns for role-conditioned
  advantages (SPIRAL-style), since in most games the seats are not equally
  strong.

`play_episode` and `self_play` play whole games with plain policies and return
each seat's `Trajectory`. (A game against built-in opponents, as a
single-agent env, is `envgym.envs.games.versus.VersusEnv`.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envgym.multiagent import MultiAgentTextEnv, Policy

__all__ = [
    "GameLoop",
    "Policy",
    "RoleBaseline",
    "Trajectory",
    "draw_seats",
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
    policy: str  # who played it: "self" (the learner) or "pool[k]"
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    #: ``info`` as the seat saw it before each action
    infos: list[dict[str, Any]] = field(default_factory=list)
    #: per action: it was a legal move (``info["action_valid"]`` after it)
    valid: list[bool] = field(default_factory=list)
    forfeit: bool = False  # the game ended on this seat's invalid reply (it lost)
    truncated: bool = False  # the game hit its move cap

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))

    @property
    def turns(self) -> int:
        return len(self.actions)


class GameLoop:
    """One game's AEC loop, advanced one reply at a time.

    Resets `game` with `seed` and runs it up to the first seat that must reply:
    ``to_move`` is then ``(agent, observation, info)``, and `reply` steps that
    seat's reply and runs on to the next one; ``to_move`` is None once the game
    is over. Every seat's `Trajectory` in `seats` (one per agent, made by the
    caller, so a trainer can keep its own fields on them) gets each of its
    observations, replies and rewards as they happen. Many loops can run side
    by side, so a trainer can batch one reply from each game.
    """

    def __init__(
        self, game: MultiAgentTextEnv, seats: Mapping[str, Trajectory], *, seed: int | None
    ) -> None:
        missing = sorted(set(game.possible_agents) - set(seats))
        if missing:
            raise ValueError(f"seats {missing} have no trajectory; give one per agent")
        self.game = game
        self.seats = seats
        self.to_move: tuple[str, str, dict[str, Any]] | None = None
        game.reset(seed=seed)
        self._turns = iter(game.agent_iter())
        self._advance()

    @property
    def over(self) -> bool:
        return self.to_move is None

    def reply(self, text: str) -> None:
        """Step the reply of the seat in ``to_move``, then run to the next seat to reply."""
        if self.to_move is None:
            raise RuntimeError("the game is over: no seat is to move; start a new GameLoop")
        agent, observation, info = self.to_move
        seat = self.seats[agent]
        seat.observations.append(observation)
        seat.actions.append(text)
        seat.rewards.append(0.0)
        seat.infos.append(info)
        self.game.step(text)
        valid = bool(self.game.infos[agent].get("action_valid", True))
        seat.valid.append(valid)
        seat.forfeit = self.game.game_over and not valid
        self._advance()

    def _advance(self) -> None:
        """Run the AEC loop up to the next seat that must reply, handing each seat
        the reward ``last()`` shows on the way."""
        self.to_move = None
        for agent in self._turns:
            observation, reward, terminated, truncated, info = self.game.last()
            seat = self.seats[agent]
            if seat.rewards:
                seat.rewards[-1] += float(reward)
            if terminated or truncated:
                seat.truncated = bool(truncated)
                self.game.step(None)
                continue
            self.to_move = (agent, observation, dict(info))
            return


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
    acting = {
        agent: _as_policy(policies[agent] if isinstance(policies, Mapping) else policies)
        for agent in game.possible_agents
    }
    names = names or {}
    trajectories = {
        agent: Trajectory(agent, names.get(agent, "self")) for agent in game.possible_agents
    }
    loop = GameLoop(game, trajectories, seed=seed)
    while loop.to_move is not None:
        agent, observation, info = loop.to_move
        loop.reply(acting[agent](observation, dict(info)))
    return trajectories


#: The last word of every `draw_seats` key (any nonzero word keeps its stream apart).
_SEATS_STREAM = 0x5EA75


def draw_seats(
    agents: Sequence[str], pool_size: int, pool_prob: float, key: int | Sequence[int]
) -> dict[str, str]:
    """Who plays each seat of one game: the learner (``"self"``) in a seat drawn
    at random, every other seat the learner too or, with probability
    `pool_prob`, a snapshot ``"pool[k]"`` drawn from a pool of `pool_size`.

    Drawn from the key alone (``np.random.default_rng([*key, _SEATS_STREAM])``,
    never a game's own stream), where `key` names the game
    (the trainer's ``[seed, step, game]``, `self_play`'s ``[seed, episode]``):
    the same game gets the same seats whatever ran before it, so a resumed run,
    or another rank, draws exactly what an uninterrupted run would.
    """
    if not agents:
        raise ValueError("a game has at least one seat; got no agents")
    if not 0.0 <= pool_prob <= 1.0:
        raise ValueError(f"pool_prob must be between 0 and 1, got {pool_prob}")
    # A stream of the key's own: numpy's SeedSequence reads ``[seed, 0]`` (and
    # ``[seed, 0, 0]``) exactly as ``seed``, the seed of the game it seats, so
    # without the tag episode 0's seats followed the game's first draws (its
    # cards, its dice), and the learner's seat its hand.
    rng = np.random.default_rng([*np.ravel(key).tolist(), _SEATS_STREAM])
    learner = int(rng.integers(len(agents)))
    seats = {}
    for k, agent in enumerate(agents):
        use_pool = k != learner and pool_size and rng.random() < pool_prob
        seats[agent] = f"pool[{int(rng.integers(pool_size))}]" if use_pool else "self"
    return seats


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

    Episode ``e`` plays seed ``seed + e`` with the seats `draw_seats` gives for
    the key ``[seed, e]``: the learner's seat changes at random every episode,
    so it learns every role. Each trajectory's ``policy`` says who played it:
    ``"self"`` or ``"pool[i]"``; train on the ``"self"`` ones.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    if not 0.0 <= pool_prob <= 1.0:
        raise ValueError(f"pool_prob must be between 0 and 1, got {pool_prob}")
    players = {"self": policy} | {f"pool[{k}]": past for k, past in enumerate(pool)}
    game = game_fn()
    results = []
    for episode in range(episodes):
        names = draw_seats(game.possible_agents, len(pool), pool_prob, [seed, episode])
        policies = {agent: players[name] for agent, name in names.items()}
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
