"""Games as single-agent envs against a built-in opponent, and self-play rollouts.

`VersusEnv` turns any `MultiAgentTextEnv` game into a `TextEnv` (so a
registered Gymnasium id) in which the agent holds one seat and the env plays
the others. `play_episode` and `self_play` run a policy against itself or a
pool of past policies and return each seat's trajectory with its return, and
`RoleBaseline` keeps a per-role running mean of returns for role-conditioned
advantages (SPIRAL-style), since in most games the seats are not equally
strong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from envgym.core import MAX_TASK_SEED, TextEnv, Turn, check_int, short_repr
from envgym.multiagent import MultiAgentTextEnv

__all__ = [
    "OPPONENTS",
    "Policy",
    "RoleBaseline",
    "Trajectory",
    "VersusEnv",
    "play_episode",
    "self_play",
]

#: A policy maps (observation, info) to a reply.
Policy = Callable[[str, dict[str, Any]], str]
OPPONENTS = ("random", "optimal", "mixed")


class VersusEnv(TextEnv):
    """A two-or-more-player game where the agent holds one seat and the env plays
    the others. Subclasses set `game_cls` and document the game (see
    `envgym.envs.games`).

    ``difficulty`` picks the opponent: ``easy`` random legal moves, ``medium``
    the optimal move half of the time, ``hard`` the game's optimal (or best
    known) policy. ``opponent`` overrides it with ``"random"``, ``"mixed"``,
    ``"optimal"`` or a callable ``(observation, info) -> reply`` that sees the
    opponent's own observation. ``seat`` fixes the agent's seat (0 moves first);
    by default the seed picks it. ``reset(options={"task_id": "seat1-12345"})``
    replays a game, opponent moves included: the seat (0 to players - 1) and
    the game's seed (below 2**63); any other id is a ValueError.

    The reward of a step is what the game paid the agent from its move up to
    its next turn; ``reward_components`` has one key: ``result`` when the game
    ended, ``format`` after an invalid reply (the player moves again), ``move``
    otherwise. ``info["privileged"]`` holds what the game hides from players.
    """

    game_cls: ClassVar[type[MultiAgentTextEnv]]
    default_max_turns: ClassVar[int] = 60
    opponent_by_difficulty: ClassVar[dict[str, str]] = {
        "easy": "random",
        "medium": "mixed",
        "hard": "optimal",
    }
    _snapshot_fields: ClassVar[tuple[str, ...]] = ("_game", "_agent", "_seat", "_opponent_rng")

    def __init__(
        self,
        *,
        difficulty: str = "hard",
        opponent: str | Policy | None = None,
        seat: int | None = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        **game_kwargs: Any,
    ) -> None:
        super().__init__(difficulty=difficulty, max_turns=max_turns, render_mode=render_mode)
        self._game = self.game_cls(**game_kwargs)
        if opponent is not None and not callable(opponent) and opponent not in OPPONENTS:
            raise ValueError(
                f"opponent must be one of {list(OPPONENTS)} or a callable "
                f"(observation, info) -> reply, got {opponent!r}"
            )
        players = self._game.num_players
        if seat is not None:
            seat = check_int(seat, "seat", 0, players - 1, "0 moves first")
        self._opponent_arg = opponent
        self._seat_arg = seat
        self._seat = 0
        self._agent = "player_0"
        self._opponent_rng = np.random.default_rng(0)
        self.system_prompt = self._game.system_prompt

    @property
    def opponent(self) -> str | Policy:
        return self._opponent_arg or self.opponent_by_difficulty[self.difficulty]

    @property
    def game(self) -> MultiAgentTextEnv:
        """The underlying PettingZoo game (read it, do not step it)."""
        return self._game

    # -------------------------------------------------------------- episode
    def _new_task(self, options: dict[str, Any]) -> str:
        if "task_id" in options:
            seat, game_seed = _parse_task_id(options["task_id"], self._game.num_players)
        else:
            game_seed = int(self.np_random.integers(0, 2**62))
            seat = self._seat_arg
            if seat is None:
                seat = int(self.np_random.integers(self._game.num_players))
        self._seat = seat
        self._agent = self._game.possible_agents[seat]
        self.task_id = f"seat{seat}-{game_seed}"
        # The opponents' choices come from the task's own seed, so a task id
        # replays the whole game, opponent moves included.
        self._opponent_rng = np.random.default_rng([game_seed, seat])
        self._game.reset(seed=game_seed)
        self._play_opponents()
        return self._game.observe(self._agent)

    def _act(self, action: str) -> Turn:
        game, agent = self._game, self._agent
        game.step(action)
        valid = game.infos[agent]["action_valid"]
        if valid and not game.game_over:
            self._play_opponents()
        reward = game._cumulative_rewards[agent]
        over = game.game_over
        key = "result" if over else ("format" if not valid else "move")
        return Turn(
            observation=game.observe(agent),
            reward_components={key: float(reward)},
            terminated=over,
            success=over and reward > 0,
            action_valid=valid,
        )

    def _play_opponents(self) -> None:
        game = self._game
        while not game.game_over and game.agent_selection != self._agent:
            mover = game.agent_selection
            game.step(self._opponent_reply(mover))

    def _opponent_reply(self, agent: str) -> str:
        game = self._game
        choice = self.opponent
        if callable(choice):
            return choice(game.observe(agent), dict(game.infos[agent]))
        rng = self._opponent_rng
        if choice == "optimal" or (choice == "mixed" and rng.random() < 0.5):
            move = game.optimal_action(game.possible_agents.index(agent), rng)
        else:
            legal = game.legal_actions(agent)
            move = legal[int(rng.integers(len(legal)))]
        return f"<answer>{move}</answer>"

    def _task_info(self) -> dict[str, Any]:
        info = self._game.infos[self._agent]
        return {
            "player": self._agent,
            "state_key": info["state_key"],
            "admissible_actions": list(info["admissible_actions"]),
            "privileged": self._game.privileged_info(),
        }

    def _render_text(self) -> str:
        return self._game._render_text()


_TASK_ID = re.compile(r"^seat(\d{1,2})-(\d{1,20})$")


def _parse_task_id(task_id: Any, players: int) -> tuple[int, int]:
    match = _TASK_ID.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise ValueError(
            f"task_id {short_repr(task_id)} is not a task id of this game; use one from "
            "info['task_id'], e.g. 'seat1-12345' (seatSEAT-SEED)"
        )
    seat, seed = int(match.group(1)), int(match.group(2))
    try:
        check_int(seat, "its seat", 0, players - 1)
        check_int(seed, "its seed", 0, MAX_TASK_SEED)
    except ValueError as exc:
        raise ValueError(
            f"task_id {short_repr(task_id)} is not a task id of this game: {exc}; use one "
            "from info['task_id']"
        ) from None
    return seat, seed


# ------------------------------------------------------------------ self-play
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
