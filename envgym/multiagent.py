"""The base class of turn-based text games: a PettingZoo AEC env with Text
spaces, per-player observations, illegal-move handling and snapshots."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar

from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from envgym.arguments import MAX_EPISODE_LENGTH, check_int, check_render_mode
from envgym.parsing import parse_answer, whole_answer
from envgym.rng import seeded_generator
from envgym.text import (
    ACTION_MAX_LENGTH,
    CHARSET,
    OBSERVATION_MAX_LENGTH,
    coerce_action,
    quote_for_feedback,
    render_text,
    reply_too_long,
)

__all__ = ["MultiAgentTextEnv", "Policy"]

#: A player: (observation, info) -> reply. Built-in opponents and self-play take one.
Policy = Callable[[str, dict[str, Any]], str]

#: What the base class keeps per game that is not game state: spaces, settings
#: fixed at construction, and caches keyed by `_version` (bumped on restore).
_NOT_STATE = frozenset(
    {
        "observation_spaces",
        "action_spaces",
        "possible_agents",
        "num_players",
        "illegal_retries",
        "max_moves",
        "render_mode",
        "_index",
        "_np_random",
        "_pending_seed",
        "_version",
        "_legal_cache",
        "_key_cache",
    }
)


class MultiAgentTextEnv(AECEnv):
    """Base class for turn-based text games as PettingZoo AEC envs.

    Agents are ``player_0``, ``player_1``, ...; every agent has Text
    observation and action spaces, sees its own observation text (private
    information stays private), and replies with free text that is parsed like
    any envgym action (``<answer>...</answer>`` or ``\\boxed{}``, ``<think>``
    ignored).

    ``illegal_retries`` is 0 to 100 and ``max_moves`` 1 to `MAX_EPISODE_LENGTH`.

    Illegal moves are the env's business, never an exception: the first
    illegal or unparsable reply in a turn gets a warning in that player's next
    observation and the same player moves again; a second one in the same turn
    loses the game (``illegal_move_penalty`` for the offender, the opposite
    shared among the others, so zero-sum games stay zero-sum). Games may
    override `_forfeit_rewards` to document another consequence.

    Subclasses implement:

    - ``_new_game(options)``: set up state from ``self.np_random`` and set
      ``self.current`` (the index of the player to move).
    - ``_legal_actions(player) -> list[str]``: the moves ``current`` may make.
    - ``_apply(player, action) -> dict[int, float] | None``: make a legal move
      and set ``current``; return each player's final reward when the game
      ends, else None.
    - ``_observe(player) -> str``: what `player` sees now.
    - ``_state_key() -> str``: the full game state as text, without history.
    - ``_information_key(player) -> str``: what `player` knows of it, for that
      player's ``info["state_key"]``; override it when information is hidden.

    ``snapshot()`` copies every attribute a game sets; list in
    ``snapshot_exclude`` the ones that are not game state (caches, lookup
    tables fixed at construction).
    Use ``self._legal(player)`` (cached per game state) rather than calling
    ``_legal_actions`` again. The base class enforces PettingZoo's call order
    itself (clear errors for step/last/observe before reset), so game modules
    hand out the env unwrapped: PettingZoo's OrderEnforcingWrapper would route
    every attribute read through ``__getattr__`` and halve the speed.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "envgym_game",
        "is_parallelizable": False,
    }
    #: Which player counts are allowed (most games: exactly two).
    player_counts: ClassVar[tuple[int, ...]] = (2,)
    zero_sum: ClassVar[bool] = True
    illegal_move_penalty: ClassVar[float] = -1.0
    #: A hard cap on moves, so no game can run forever (truncation).
    default_max_moves: ClassVar[int] = 200
    #: Attributes snapshot() leaves out: caches and settings, not game state.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ()
    #: Instructions for the action format, in every reset info.
    system_prompt: ClassVar[str] = ""
    #: True when every legal action is written in lower case (digits, "bet"):
    #: a reply then matches by one membership test instead of a loop
    #: (tests/test_games_fast_paths.py holds each game that says so to it).
    lower_case_moves: ClassVar[bool] = False

    def __init__(
        self,
        *,
        num_players: int | None = None,
        illegal_retries: int = 1,
        max_moves: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        num_players = self.player_counts[0] if num_players is None else num_players
        if num_players not in self.player_counts:
            raise ValueError(
                f"{type(self).__name__} is for {', '.join(map(str, self.player_counts))} "
                f"players, got num_players={num_players!r}"
            )
        check_render_mode(self, render_mode)
        illegal_retries = check_int(
            illegal_retries, "illegal_retries", 0, 100, "invalid replies forgiven per turn"
        )
        if max_moves is not None:
            max_moves = check_int(max_moves, "max_moves", 1, MAX_EPISODE_LENGTH, "moves per game")
        self.num_players = num_players
        self.illegal_retries = illegal_retries
        self.max_moves = max_moves or self.default_max_moves
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(num_players)]
        self._index = {agent: i for i, agent in enumerate(self.possible_agents)}
        text_obs = spaces.Text(max_length=OBSERVATION_MAX_LENGTH, charset=CHARSET)
        text_act = spaces.Text(max_length=ACTION_MAX_LENGTH, charset=CHARSET)
        self.observation_spaces = {a: text_obs for a in self.possible_agents}
        self.action_spaces = {a: text_act for a in self.possible_agents}
        self._np_random: Any = None
        self._pending_seed: int | None = None
        # Bumped whenever the game state changes; keys the legal-move cache.
        self._version = 0
        self._legal_cache: tuple[int, int, list[str]] = (-1, -1, [])
        self._key_cache: tuple[int, str] = (-1, "")
        # The move whose infos `infos` has yet to build (see `_settle`).
        self._infos_after: tuple[str | None, bool, dict] | None = None
        self._infos: dict[str, dict[str, Any]] = {}
        self.agents = []
        self.current = 0
        self.moves = 0
        self._strikes = 0
        self._notes = {a: "" for a in self.possible_agents}
        self.outcome = ""

    # ----------------------------------------------------------------- hooks
    def _new_game(self, options: dict[str, Any]) -> None:
        raise NotImplementedError

    def _legal_actions(self, player: int) -> list[str]:
        raise NotImplementedError

    def _apply(self, player: int, action: str) -> dict[int, float] | None:
        raise NotImplementedError

    def _observe(self, player: int) -> str:
        raise NotImplementedError

    def _state_key(self) -> str:
        raise NotImplementedError

    def _render_text(self) -> str:
        return self._state_key()

    def _information_key(self, player: int) -> str:
        """`info["state_key"]` for `player`: the state as that player knows it.

        Perfect-information games use the full state (the default);
        imperfect-information games must override this so that no player's
        info reveals another's hidden cards or dice.
        """
        return self._current_state_key()

    def _current_state_key(self) -> str:
        """`_state_key()`, computed once per game state."""
        version, key = self._key_cache
        if version != self._version:
            key = self._state_key()
            self._key_cache = (self._version, key)
        return key

    def _legal(self, player: int) -> list[str]:
        """`_legal_actions(player)`, computed once per game state."""
        version, who, actions = self._legal_cache
        if version != self._version or who != player:
            actions = self._legal_actions(player)
            self._legal_cache = (self._version, player, actions)
        return actions

    def _parse_action(self, player: int, text: str) -> tuple[str | None, str | None]:
        """Turn a reply into one legal action, or explain why it is not one."""
        legal = self._legal(player)
        value = whole_answer(text)
        if value is None:
            parsed = parse_answer(text, example=legal[0] if legal else "...")
            if not parsed.ok:
                return None, parsed.error
            value = parsed.value
        if self.lower_case_moves and value in legal:
            return value, None  # already normalized: the commonest reply
        wanted = " ".join(value.split()).lower()
        if self.lower_case_moves:
            # Every legal action is its own lower case: the first whose lower
            # case matches is the one equal to `wanted`.
            if wanted in legal:
                return wanted, None
        else:
            for action in legal:
                if action.lower() == wanted:
                    return action, None
        return None, f"{quote_for_feedback(value, 40)} is not a legal move now."

    def _forfeit_rewards(self, player: int) -> dict[int, float]:
        """Final rewards when `player` loses by a second illegal move in a turn."""
        others = self.num_players - 1
        share = -self.illegal_move_penalty / others if self.zero_sum else 0.0
        rewards = {p: share for p in range(self.num_players)}
        rewards[player] = self.illegal_move_penalty
        return rewards

    def _truncation_rewards(self) -> dict[int, float]:
        """Final rewards when the move cap ends a game: nobody wins by default."""
        return {p: 0.0 for p in range(self.num_players)}

    # --------------------------------------------------------------- pettingzoo
    def observation_space(self, agent: str) -> spaces.Text:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Text:
        return self.action_spaces[agent]

    @property
    def np_random(self) -> Any:
        # Built on first use: seeding a generator costs more than a whole game of
        # TicTacToe, and deterministic games never draw from it.
        if self._np_random is None:
            seed = self._pending_seed
            if type(seed) is int and seed >= 0:
                # What seeding.np_random builds for such a seed, without its checks.
                self._np_random = seeded_generator(seed)
            else:  # None (fresh entropy), or a seed it rejects with its own error
                self._np_random, _ = seeding.np_random(seed)
            self._pending_seed = None
        return self._np_random

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._np_random, self._pending_seed = None, seed
        self.agents = agents = list(self.possible_agents)
        self._version += 1
        self.rewards = dict.fromkeys(agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(agents, 0.0)
        self.terminations = dict.fromkeys(agents, False)
        self.truncations = dict.fromkeys(agents, False)
        self.moves = 0
        self._strikes = 0
        self._notes = dict.fromkeys(agents, "")
        self.outcome = ""
        self._skip_agent_selection = None
        self._new_game(dict(options or {}))
        self.agent_selection = self.possible_agents[self.current]
        # Built when first read, as after a move (no one has moved: `None`).
        self._infos_after = (None, True, {})

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        # AECEnv.last, inlined: it runs once per move of every game loop.
        try:
            agent = self.agent_selection
        except AttributeError:
            raise RuntimeError("last() before reset(); call env.reset() first") from None
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self._info_of(agent),
        )

    def observe(self, agent: str) -> str:
        if not self.agents and not hasattr(self, "agent_selection"):
            raise RuntimeError("observe() before reset(); call env.reset() first")
        note = self._notes.get(agent, "")
        text = self._observe(self._index[agent])
        return f"{note}\n{text}" if note else text

    def step(self, action: Any) -> None:
        if not self.agents:
            raise RuntimeError(
                "step() with no live agents: call env.reset() first (or again after the game)"
            )
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        player = self._index[agent]
        self._cumulative_rewards[agent] = 0.0
        rewards = self.rewards
        for a in rewards:  # AECEnv._clear_rewards, inlined (it writes an int 0)
            rewards[a] = 0
        text = action if type(action) is str else coerce_action(action)
        if len(text) <= ACTION_MAX_LENGTH:  # reply_too_long(text) is None
            move, error = self._parse_action(player, text)
        else:  # never parsed
            move, error = None, reply_too_long(text)
        if move is not None:
            self._play(agent, player, move)
            return
        self._strikes += 1
        if self._strikes <= self.illegal_retries:
            legal = ", ".join(self._legal(player))
            self._notes[agent] = (
                f"Invalid move: {error} Try again; legal moves: {legal}. "
                "Another invalid move this turn loses the game."
            )
            self.infos[agent] = self._info(agent, False)
            return
        final = self._forfeit_rewards(player)
        self.outcome = f"{agent} lost by making two invalid moves in one turn"
        self._notes[agent] = f"Invalid move again: {error} You lose the game."
        self._settle(agent, final, False)

    def _step_legal(self, move: str) -> None:
        """`step("<answer>move</answer>")` for a move known to be legal (a
        built-in opponent's), without writing and parsing the reply."""
        agent = self.agent_selection
        player = self._index[agent]
        # The parser returns a legal move as it is only in lower-case games
        # (elsewhere it returns the first legal move equal to it but for case).
        dead = self.terminations[agent] or self.truncations[agent]
        if dead or not self.lower_case_moves or move not in self._legal(player):
            self.step(f"<answer>{move}</answer>")
            return
        self._cumulative_rewards[agent] = 0.0
        rewards = self.rewards
        for a in rewards:
            rewards[a] = 0
        self._play(agent, player, move)

    def _play(self, agent: str, player: int, move: str) -> None:
        """Make `agent`'s legal `move` (its rewards already cleared by `step`)."""
        self._strikes = 0
        self._notes[agent] = ""
        self.moves += 1
        self._version += 1
        self._settle(agent, self._apply(player, move), True)

    def _settle(self, agent: str, final: dict[int, float] | None, valid: bool) -> None:
        """The AEC bookkeeping after `agent`'s move (`valid`) or forfeit: final
        rewards, end flags, the next agent; the infos are built when read."""
        rewards = self.rewards
        over = True
        if final is not None:
            agents = self.possible_agents
            for p, reward in final.items():
                rewards[agents[p]] = float(reward)
            self.terminations = {a: True for a in self.agents}
        elif self.moves >= self.max_moves:
            agents = self.possible_agents
            for p, reward in self._truncation_rewards().items():
                rewards[agents[p]] = float(reward)
            self.truncations = {a: True for a in self.agents}
            self.outcome = f"stopped after {self.max_moves} moves"
        else:
            over = False
        if over:  # mid-game every reward is 0 and every cumulative reward 0.0
            cumulative = self._cumulative_rewards
            for a, reward in rewards.items():  # AECEnv._accumulate_rewards, inlined
                cumulative[a] += reward
        self.agent_selection = self.possible_agents[self.current]
        # Every player's info changes with the state; they are built when first
        # read (`infos`, `last`), so moves nobody reads the infos of (a built-in
        # opponent's, any but the last of a single-agent id's step) build none.
        self._infos_after = (agent, valid, {})
        if self.render_mode == "human":
            print(self._render_text())

    @property
    def infos(self) -> dict[str, dict[str, Any]]:  # type: ignore[override]
        """Each live agent's info (PettingZoo's ``infos``), current after every move."""
        if self._infos_after is not None:
            infos = {a: self._info_of(a) for a in self.agents}
            self._infos_after = None
            self._infos = infos
        return self._infos

    @infos.setter
    def infos(self, value: dict[str, dict[str, Any]]) -> None:
        self._infos_after = None
        self._infos = value

    def _info_of(self, agent: str) -> dict[str, Any]:
        """``self.infos[agent]``, building no other agent's info: after a move
        `_settle` recorded (who moved, None at a reset; whether validly; the
        infos built since), each live player's info is built when first read."""
        after = self._infos_after
        if after is None or agent not in self.agents:
            return self.infos[agent]
        mover, valid, built = after
        info = built.get(agent)
        if info is None:
            info = built[agent] = self._info(agent, agent != mover or valid)
            if mover is None and agent == self.agent_selection:  # a reset: the rules, to the first
                info["system_prompt"] = self.system_prompt
        return info

    def _view(self, a: str) -> tuple[str, list[str]]:
        """What live player `a`'s info says of the state now: its state key, and
        the moves it may make (a new list; none unless it is to move)."""
        index = self._index[a]
        if type(self)._information_key is _FULL_STATE_KEY:
            key = self._current_state_key()  # perfect information: one key for all
        else:
            key = self._information_key(index)
        # The game ends for every player at once: `a`'s flags are the game's.
        if a != self.agent_selection or self.terminations[a] or self.truncations[a]:
            return key, []
        return key, list(self._legal(index))

    def render(self) -> str | None:
        return render_text(self.render_mode, self._render_text)

    def close(self) -> None:
        pass

    # ---------------------------------------------------------------- forking
    def snapshot(self) -> Any:
        """An opaque, picklable copy of the game state (AEC bookkeeping included):
        every attribute except the settings and caches in `_NOT_STATE` and the
        game's own `snapshot_exclude`."""
        self.infos  # noqa: B018 (builds any infos not built yet: they are state too)
        skip = _NOT_STATE.union(self.snapshot_exclude)
        names = tuple(name for name in vars(self) if name not in skip)
        attrs = {name: copy.deepcopy(getattr(self, name)) for name in names}
        return {"attrs": attrs, "rng": copy.deepcopy(self.np_random.bit_generator.state)}

    def restore(self, snapshot: Any) -> None:
        """Put back a state taken by `snapshot()`; the snapshot stays reusable."""
        if not isinstance(snapshot, dict) or "rng" not in snapshot or "attrs" not in snapshot:
            raise TypeError("restore() takes the object returned by snapshot() of this env")
        for name, value in snapshot["attrs"].items():
            setattr(self, name, copy.deepcopy(value))
        self.np_random.bit_generator.state = copy.deepcopy(snapshot["rng"])
        self._version += 1

    def optimal_action(self, player: int, rng: Any) -> str:
        """The game's optimal (or best known) move for `player`, using only what
        `player` may know; built-in opponents play it. `rng` breaks ties."""
        raise NotImplementedError(f"{type(self).__name__} has no optimal policy")

    def privileged_info(self) -> dict[str, Any]:
        """Trainer-only facts (hidden cards, valuations); never in an observation."""
        return {}

    # ---------------------------------------------------------------- helpers
    @property
    def game_over(self) -> bool:
        return any(self.terminations.values()) or any(self.truncations.values())

    def legal_actions(self, agent: str | None = None) -> list[str]:
        """The moves `agent` (default: the one to move) may make now."""
        agent = agent or self.agent_selection
        if self.game_over or agent != self.agent_selection:
            return []
        return list(self._legal(self._index[agent]))

    def _info(self, agent: str, action_valid: bool) -> dict[str, Any]:
        key, moves = self._view(agent)
        return {
            "player": agent,
            "turn": self.moves,
            "action_valid": action_valid,
            "state_key": key,
            "admissible_actions": moves,
        }


#: The base class's `_information_key` (the full state): a game that keeps it
#: has perfect information, so every player's info has the same state key.
_FULL_STATE_KEY = MultiAgentTextEnv._information_key
