"""`VersusEnv`: a multi-agent game as a single-agent `TextEnv` against built-in
opponents, so every game is also a registered Gymnasium id."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from envgym.arguments import match_task_id, task_id_parts
from envgym.core import MAX_TASK_SEED, Preset, TextEnv, Turn, check_int, setting, short_repr
from envgym.multiagent import MultiAgentTextEnv, Policy
from envgym.rng import jumped_generator

__all__ = ["OPPONENTS", "Policy", "VersusEnv", "VersusPreset", "versus_presets"]

#: The built-in opponents: random legal moves, the game's optimal move half of
#: the time, and the game's optimal (or best known) move.
OPPONENTS = ("random", "optimal", "mixed")


@dataclass(frozen=True)
class VersusPreset(Preset):
    """A difficulty level of a game against built-in opponents."""

    # No bounds: a callable is allowed too, so `VersusEnv._configure` checks it.
    opponent: str | Policy = setting("optimal", meaning="who plays the other seats")


def versus_presets(max_turns: int) -> dict[str, VersusPreset]:
    """The levels every game has: the opponent gets stronger, the turn limit stays."""
    return {
        "easy": VersusPreset(opponent="random", max_turns=max_turns),
        "medium": VersusPreset(opponent="mixed", max_turns=max_turns),
        "hard": VersusPreset(opponent="optimal", max_turns=max_turns),
    }


class VersusEnv(TextEnv):
    """A two-or-more-player game where the agent holds one seat and the env plays
    the others. Subclasses set `game_cls` and `presets` (`versus_presets` with
    their turn limit) and document the game (see `envgym.envs.games`).

    ``difficulty`` picks the opponent: ``easy`` random legal moves, ``medium``
    the optimal move half of the time, ``hard`` the game's optimal (or best
    known) policy. ``opponent`` overrides it with ``"random"``, ``"mixed"``,
    ``"optimal"`` or a callable ``(observation, info) -> reply`` that sees the
    opponent's own observation (it is a setting, never part of a snapshot).
    ``seat`` fixes the agent's seat (0 moves first). ``max_turns`` overrides
    the turn limit. Other keyword arguments go to the game.

    ``reset(seed=s)`` plays the game of seed ``s`` (the deal of the game's own
    ``reset(seed=s)``) at seat ``s % players`` unless ``seat`` fixes it, so
    seeds 0 .. N-1 share the seats evenly; its task id is ``seat{s % players}-{s}``.
    A reset without a seed (or with one of 2**63 or more) draws the game's seed
    and the seat from the env's generator. ``reset(options={"task_id":
    "seat1-12345"})`` replays a game, opponent moves included: the seat (0 to
    players - 1) and the game's seed (below 2**63); any other id is a ValueError.

    The opponents draw from the game's own generator jumped ``seat + 1`` times
    (numpy's ``PCG64(game_seed).jumped(seat + 1)``: the same stream, more than
    2**120 draws away from any the game makes), so a task id replays them too. A
    random opponent picks ``legal[int(rng.random() * len(legal))]``. (They once
    drew from ``default_rng([game_seed, seat])``, which numpy seeds exactly as
    ``game_seed`` at seat 0: the opponent then drew the numbers that dealt the
    agent's cards, and Kuhn poker's random opponent folded to every bet on a
    King and called every bet on a Jack.)

    The reward of a step is what the game paid the agent from its move up to
    its next turn; ``reward_components`` has one key: ``result`` when the game
    ended, ``format`` after an invalid reply (the player moves again), ``move``
    otherwise. ``info["privileged"]`` holds what the game hides from players.
    """

    game_cls: ClassVar[type[MultiAgentTextEnv]]
    presets: ClassVar[dict[str, VersusPreset]] = versus_presets(max_turns=60)
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("system_prompt", "_fixed_seat")

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
        # The game comes first: the seat and a game's derived settings depend on it.
        self._game = self.game_cls(**game_kwargs)
        if seat is not None:
            seat = check_int(seat, "seat", 0, self._game.num_players - 1, "0 moves first")
        self._fixed_seat = seat
        super().__init__(
            difficulty=difficulty, render_mode=render_mode, opponent=opponent, max_turns=max_turns
        )
        self._seat = 0
        self._agent = "player_0"
        self._opponent_rng = np.random.default_rng(0)
        self.system_prompt = self._game.system_prompt

    def _configure(self, config: VersusPreset) -> VersusPreset:
        opponent = config.opponent
        if not callable(opponent) and opponent not in OPPONENTS:
            raise ValueError(
                f"opponent must be one of {list(OPPONENTS)} or a callable "
                f"(observation, info) -> reply, got {short_repr(opponent)}"
            )
        return config

    @property
    def opponent(self) -> str | Policy:
        """Who plays the other seats: a name from `OPPONENTS` or a callable."""
        return self.config.opponent

    @property
    def fast_calls(self) -> bool:  # type: ignore[override]
        """Steps are short and bounded with a built-in opponent (see `TextEnv`); a
        callable opponent (a model, a person) may take any time."""
        return not callable(self.config.opponent)

    @property
    def game(self) -> MultiAgentTextEnv:
        """The underlying PettingZoo game (read it, do not step it)."""
        return self._game

    # -------------------------------------------------------------- episode
    def _new_task(self, options: dict[str, Any]) -> str:
        seed = self._episode_seed
        if "task_id" in options:
            seat, game_seed = _parse_task_id(options["task_id"], self._game.num_players)
        elif seed is not None and seed <= MAX_TASK_SEED:  # the seed's own game
            game_seed = seed
            seat = self._fixed_seat
            if seat is None:
                seat = seed % self._game.num_players
        else:
            game_seed = int(self.np_random.integers(0, 2**62))
            seat = self._fixed_seat
            if seat is None:
                seat = int(self.np_random.integers(self._game.num_players))
        self._seat = seat
        self._agent = self._game.possible_agents[seat]
        self.task_id = f"seat{seat}-{game_seed}"
        self._game.reset(seed=game_seed)
        # The opponents' choices come from the task's own seed, so a task id
        # replays the whole game, opponent moves included (see the class doc).
        self._opponent_rng = jumped_generator(self._game.np_random, seat + 1)
        self._play_opponents()
        return self._game.observe(self._agent)

    def _act(self, action: str) -> Turn:
        game, agent = self._game, self._agent
        moves = game.moves
        game.step(action)
        # The agent is to move and the game is on: only a valid move counts.
        valid = game.moves != moves
        # game.game_over, read from the agent's own flags: the game ends for every
        # player at once and nobody leaves it here (no step(None)).
        over = game.terminations[agent] or game.truncations[agent]
        if valid and not over:
            self._play_opponents()
            over = game.terminations[agent] or game.truncations[agent]
        reward = game._cumulative_rewards[agent]
        key = "result" if over else ("format" if not valid else "move")
        return Turn(
            observation=game.observe(agent),
            reward_components={key: float(reward)},
            terminated=over,
            success=over and reward > 0,
            action_valid=valid,
        )

    def _play_opponents(self) -> None:
        game, agent = self._game, self._agent
        choice = self.config.opponent
        # `not game.game_over`, as in `_act`: the agent's flags are every player's.
        while game.agent_selection != agent and not (
            game.terminations[agent] or game.truncations[agent]
        ):
            if callable(choice):
                seat = game.agent_selection
                game.step(choice(game.observe(seat), dict(game.infos[seat])))
            else:  # a legal move: played without writing and parsing a reply
                game._step_legal(self._opponent_move(game.agent_selection))

    def _opponent_move(self, agent: str) -> str:
        """The built-in opponent's move for `agent`, the player to move."""
        game = self._game
        choice = self.config.opponent
        rng = self._opponent_rng
        if choice == "optimal" or (choice == "mixed" and rng.random() < 0.5):
            return game.optimal_action(game._index[agent], rng)
        # game.legal_actions(agent), without its copy: the opponent is to move.
        legal = game._legal(game._index[agent])
        return legal[int(rng.random() * len(legal))]

    def _task_info(self) -> dict[str, Any]:
        game = self._game
        key, moves = game._view(self._agent)  # what the agent's game info says
        return {
            "player": self._agent,
            "state_key": key,
            "admissible_actions": moves,
            "privileged": game.privileged_info(),
        }

    def _render_text(self) -> str:
        return self._game._render_text()


_TASK_ID = re.compile(r"^seat(\d{1,2})-(\d{1,20})$")


def _parse_task_id(task_id: Any, players: int) -> tuple[int, int]:
    match = match_task_id(
        task_id, _TASK_ID, "a task id of this game", "e.g. 'seat1-12345' (seatSEAT-SEED)"
    )
    seat, seed = int(match.group(1)), int(match.group(2))
    with task_id_parts(task_id, "is not a task id of this game"):
        check_int(seat, "its seat", 0, players - 1)
        check_int(seed, "its seed", 0, MAX_TASK_SEED)
    return seat, seed
