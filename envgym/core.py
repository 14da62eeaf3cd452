"""Base classes every envgym environment builds on, and the shared info keys.

`TextEnv` turns a small set of hooks (`_new_task`, `_act`, `_task_info`) into a
full `gymnasium.Env[str, str]`: Text spaces, seeding, the turn limit, the
shared `info` keys, rendering, and `snapshot()`/`restore()`. The base class
owns everything that must behave the same in every env, so a new env only
writes its rules.
"""

from __future__ import annotations

import copy
import functools
import math
import numbers
import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from envgym.parsing import parse_answer
from envgym.text import CHARSET, coerce_action, quote_for_feedback

__all__ = [
    "CHARSET",
    "INFO_KEYS",
    "MAX_EPISODE_LENGTH",
    "MAX_TASK_SEED",
    "MultiAgentTextEnv",
    "TextEnv",
    "Turn",
    "check_int",
    "check_number",
    "coerce_action",
    "quote_for_feedback",
    "short_repr",
]

#: The info keys with one meaning in every envgym env (see DESIGN.md).
INFO_KEYS = (
    "task_id",
    "turn",
    "action_valid",
    "success",
    "reward_components",
    "state_key",
    "admissible_actions",
    "tools",
    "cost",
    "privileged",
    "system_prompt",
    "player",
)

OBSERVATION_MAX_LENGTH = 16_384
ACTION_MAX_LENGTH = 8_192
#: The largest seed a task id may carry (task ids name a level by its own seed).
MAX_TASK_SEED = 2**63 - 1
#: The most turns (single-agent envs) or moves (games) one episode may be given.
MAX_EPISODE_LENGTH = 100_000


_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = 80


def short_repr(value: Any, limit: int = 100) -> str:
    """``repr(value)`` cut to at most `limit` characters, for error messages that
    echo what a caller sent (a megabyte task id comes back as its first words)."""
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_int(value: Any, name: str, low: int, high: int, meaning: str = "") -> int:
    """`value` as an int when it is a whole number (not a bool) from `low` to
    `high`; else a ValueError that names the allowed range.

    Envs check their sizes, counts and task-id parts with it, so that nothing a
    caller (or a remote client) sends can ask for unbounded work.
    """
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or not low <= value <= high:
        what = f" ({meaning})" if meaning else ""
        raise ValueError(
            f"{name} must be an integer from {low} to {high}{what}, got {short_repr(value)}"
        )
    return int(value)


def check_number(value: Any, name: str, low: float, high: float, meaning: str = "") -> float:
    """`value` as a float when it is a finite number (not a bool) from `low` to
    `high`; else a ValueError that names the allowed range."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not low <= value <= high:
        what = f" ({meaning})" if meaning else ""
        raise ValueError(
            f"{name} must be a number from {low:g} to {high:g}{what}, got {short_repr(value)}"
        )
    return float(value)


def render_text(render_mode: str | None, text: Callable[[], str]) -> str | None:
    """``render()`` for text envs: "ansi" returns the text, "human" prints it."""
    if render_mode is None:
        gym.logger.warn(
            "render() called without a render_mode; create the env with "
            "render_mode='ansi' or 'human' to see it as text"
        )
        return None
    out = text()
    if render_mode == "human":
        print(out)
        return None
    return out


@dataclass
class Turn:
    """What an env's `_act` hook reports for one step.

    `reward_components` must sum to the step's reward; the base class adds them.
    It goes into `info` as is, so `_act` must build a new dict every step.
    """

    observation: str
    reward_components: dict[str, float]
    terminated: bool = False
    success: bool = False
    action_valid: bool = True
    extra_info: dict[str, Any] | None = None


def _accepting_local_backend(init: Callable[..., None]) -> Callable[..., None]:
    """``init`` that also takes (and drops) ``backend="local"``; see TextEnv.__new__."""

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, backend: str = "local", **kwargs: Any) -> None:
        init(self, *args, **kwargs)

    __init__._takes_backend = True  # type: ignore[attr-defined]
    return __init__


class TextEnv(gym.Env[str, str]):
    """Base class for single-agent text environments (see DESIGN.md).

    Subclasses implement:

    - ``_new_task(options) -> str``: build a task from ``self.np_random`` (and
      ``options["task_id"]`` if given) and return the first observation text.
    - ``_act(action: str) -> Turn``: apply the model's whole reply.
    - ``_task_info() -> dict``: env-specific info keys for the current state
      (``state_key``, ``admissible_actions``, ``privileged``, ...).
    - ``_render_text() -> str``: the current state as text (pure function of state).

    and list in ``_snapshot_fields`` the attributes that hold episode state, so
    ``snapshot()``/``restore()`` work. Envs whose state lives outside the Python
    process (a sandbox) set ``fork_by_replay = True`` instead: their snapshot is
    the reset seed and options plus the actions taken, and restore replays them.

    ``max_turns`` is 1 to `MAX_EPISODE_LENGTH`; envs check their own sizes,
    counts and task-id parts with `check_int` / `check_number`, so every value
    a caller can pass is bounded and a bad one is a ValueError naming the range.

    Every env takes ``backend="local"`` (the default) or ``backend="docker"``:
    ``gym.make(id, backend="docker")`` serves the env in a container of the
    runtime image and returns a `envgym.remote.RemoteEnv` on its Unix socket.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 4}

    #: Named difficulty levels, easiest first.
    difficulties: ClassVar[tuple[str, ...]] = ("easy", "medium", "hard")
    default_max_turns: ClassVar[int] = 30
    #: Attributes that together are the episode state (for snapshot/restore).
    _snapshot_fields: ClassVar[tuple[str, ...]] = ()
    fork_by_replay: ClassVar[bool] = False
    #: Instructions for the action format, returned as info["system_prompt"] on reset.
    system_prompt: ClassVar[str] = ""
    #: The keys `reset(options=...)` accepts; anything else is a clear error.
    reset_options: ClassVar[tuple[str, ...]] = ("task_id", "difficulty")

    def __new__(cls, *args: Any, backend: str = "local", **kwargs: Any):
        # gym.make(id, backend="docker") reaches the env class with backend=...:
        # the env is then served in a container and the caller gets a RemoteEnv.
        if backend == "local":
            return super().__new__(cls)
        if args:
            raise TypeError(f"backend={backend!r} takes keyword arguments only")
        from envgym.remote.container import make_in_backend

        return make_in_backend(cls, backend, kwargs)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "_takes_backend", False):
            cls.__init__ = _accepting_local_backend(init)

    def __init__(
        self,
        *,
        backend: str = "local",
        difficulty: str = "easy",
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not supported by {type(self).__name__}; "
                f"use one of {self.metadata['render_modes']} or None"
            )
        self.render_mode = render_mode
        self.difficulty = self._check_difficulty(difficulty)
        if max_turns is not None:
            max_turns = check_int(
                max_turns, "max_turns", 1, MAX_EPISODE_LENGTH, "turns per episode"
            )
        self._max_turns_arg = max_turns
        self.max_turns = max_turns or self.default_max_turns
        self.observation_space = spaces.Text(max_length=OBSERVATION_MAX_LENGTH, charset=CHARSET)
        self.action_space = spaces.Text(max_length=ACTION_MAX_LENGTH, charset=CHARSET)
        self.turn = 0
        self.task_id = ""
        self._episode_over = True
        self._success = False
        self._last_obs = ""
        # For replay-based forking: how the current episode began and what was done.
        self._reset_rng_state: dict[str, Any] | None = None
        self._reset_options: dict[str, Any] = {}
        self._actions: list[str] = []

    # ----------------------------------------------------------------- hooks
    def _new_task(self, options: dict[str, Any]) -> str:
        raise NotImplementedError

    def _act(self, action: str) -> Turn:
        raise NotImplementedError

    def _task_info(self) -> dict[str, Any]:
        return {}

    def _render_text(self) -> str:
        return self._last_obs

    def _apply_difficulty(self, difficulty: str) -> None:
        """Called when `options["difficulty"]` changes the level at reset."""
        self.difficulty = difficulty

    # ------------------------------------------------------------ gymnasium
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.reset_options))
        if unknown:
            raise ValueError(
                f"unknown reset option(s) {short_repr(unknown)}; {type(self).__name__} takes "
                f"{', '.join(repr(k) for k in self.reset_options)}"
            )
        if "difficulty" in options:
            self._apply_difficulty(self._check_difficulty(options["difficulty"]))
        self._reset_rng_state = copy.deepcopy(self.np_random.bit_generator.state)
        self._reset_options = options
        self._actions = []
        self.turn = 0
        self._success = False
        self._episode_over = False
        obs = self._new_task(options)
        self._last_obs = obs
        info = self._base_info(action_valid=True, reward_components={})
        info["system_prompt"] = self.system_prompt
        if self.render_mode == "human":
            self.render()
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._episode_over:
            raise gym.error.ResetNeeded(
                "the episode has ended (terminated or truncated); call env.reset() before step()"
            )
        text = coerce_action(action)
        if self.fork_by_replay:
            self._actions.append(text)
        turn = self._act(text)
        self.turn += 1
        reward = float(sum(turn.reward_components.values()))
        terminated = turn.terminated
        truncated = not terminated and self.turn >= self.max_turns
        self._success = self._success or turn.success
        self._episode_over = terminated or truncated
        self._last_obs = turn.observation
        info = self._base_info(turn.action_valid, turn.reward_components)
        if turn.extra_info:
            info.update(turn.extra_info)
        if self.render_mode == "human":
            self.render()
        return turn.observation, reward, terminated, truncated, info

    def render(self) -> str | None:
        return render_text(self.render_mode, self._render_text)

    # --------------------------------------------------------------- forking
    def snapshot(self) -> Any:
        """Return an opaque, picklable copy of the episode state."""
        base = {
            "turn": self.turn,
            "task_id": self.task_id,
            "episode_over": self._episode_over,
            "success": self._success,
            "last_obs": self._last_obs,
            "difficulty": self.difficulty,
            "rng": copy.deepcopy(self.np_random.bit_generator.state),
        }
        if self.fork_by_replay:
            base["replay"] = {
                "rng": copy.deepcopy(self._reset_rng_state),
                "options": copy.deepcopy(self._reset_options),
                "actions": list(self._actions),
            }
            return base
        base["fields"] = {
            name: copy.deepcopy(getattr(self, name)) for name in self._snapshot_fields
        }
        return base

    def restore(self, snapshot: Any) -> None:
        """Put back a state taken by `snapshot()`; the snapshot stays reusable."""
        if not isinstance(snapshot, dict) or "rng" not in snapshot:
            raise TypeError("restore() takes the object returned by snapshot() of this env")
        if self.fork_by_replay:
            replay = snapshot["replay"]
            # Rewind the RNG to where the episode began; reset() and the replayed
            # actions then draw exactly what they drew the first time.
            self.np_random.bit_generator.state = copy.deepcopy(replay["rng"])
            self.reset(options=copy.deepcopy(replay["options"]))
            for action in replay["actions"]:
                self.step(action)
        else:
            for name, value in snapshot["fields"].items():
                setattr(self, name, copy.deepcopy(value))
        self.turn = snapshot["turn"]
        self.task_id = snapshot["task_id"]
        self._episode_over = snapshot["episode_over"]
        self._success = snapshot["success"]
        self._last_obs = snapshot["last_obs"]
        self.difficulty = snapshot["difficulty"]
        self.np_random.bit_generator.state = copy.deepcopy(snapshot["rng"])

    # --------------------------------------------------------------- helpers
    @property
    def last_observation(self) -> str:
        return self._last_obs

    def _base_info(self, action_valid: bool, reward_components: dict[str, float]) -> dict[str, Any]:
        info = {
            "task_id": self.task_id,
            "turn": self.turn,
            "action_valid": action_valid,
            "success": self._success,
            "reward_components": reward_components,
        }
        info.update(self._task_info())
        return info

    def _check_difficulty(self, difficulty: Any) -> str:
        if difficulty not in self.difficulties:
            raise ValueError(
                f"unknown difficulty {short_repr(difficulty)} for {type(self).__name__}; "
                f"choose one of {list(self.difficulties)}"
            )
        return difficulty


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

    and list the attributes holding game state in ``_snapshot_fields``.
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
    _snapshot_fields: ClassVar[tuple[str, ...]] = ()
    #: Instructions for the action format, in every reset info.
    system_prompt: ClassVar[str] = ""

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
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not supported; use one of "
                f"{self.metadata['render_modes']} or None"
            )
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
        parsed = parse_answer(text, example=legal[0] if legal else "...")
        if not parsed.ok:
            return None, parsed.error
        value = " ".join(parsed.value.split()).lower()
        for action in legal:
            if action.lower() == value:
                return action, None
        return None, f"{quote_for_feedback(parsed.value, 40)} is not a legal move now."

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
            self._np_random, _ = seeding.np_random(self._pending_seed)
            self._pending_seed = None
        return self._np_random

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._np_random, self._pending_seed = None, seed
        self.agents = list(self.possible_agents)
        self._version += 1
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.moves = 0
        self._strikes = 0
        self._notes = {a: "" for a in self.agents}
        self.outcome = ""
        self._skip_agent_selection = None
        self._new_game(dict(options or {}))
        self.agent_selection = self.possible_agents[self.current]
        self.infos = {a: self._info(a, True) for a in self.agents}
        self.infos[self.agent_selection]["system_prompt"] = self.system_prompt

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not hasattr(self, "agent_selection"):
            raise RuntimeError("last() before reset(); call env.reset() first")
        return super().last(observe)

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
        self._clear_rewards()
        move, error = self._parse_action(player, coerce_action(action))
        final: dict[int, float] | None = None
        if move is None:
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
        else:
            self._strikes = 0
            self._notes[agent] = ""
            self.moves += 1
            self._version += 1
            final = self._apply(player, move)
        if final is not None:
            for p, reward in final.items():
                self.rewards[self.possible_agents[p]] = float(reward)
            self.terminations = {a: True for a in self.agents}
        elif self.moves >= self.max_moves:
            for p, reward in self._truncation_rewards().items():
                self.rewards[self.possible_agents[p]] = float(reward)
            self.truncations = {a: True for a in self.agents}
            self.outcome = f"stopped after {self.max_moves} moves"
        self._accumulate_rewards()
        self.agent_selection = self.possible_agents[self.current]
        # Every player's info is rebuilt: the state (and so each state_key) changed.
        self.infos = {a: self._info(a, a != agent or move is not None) for a in self.agents}
        if self.render_mode == "human":
            print(self._render_text())

    def render(self) -> str | None:
        return render_text(self.render_mode, self._render_text)

    def close(self) -> None:
        pass

    # ---------------------------------------------------------------- forking
    def snapshot(self) -> Any:
        """An opaque, picklable copy of the game state (AEC bookkeeping included)."""
        fields = ("agents", "rewards", "_cumulative_rewards", "terminations", "truncations",
                  "infos", "agent_selection", "_skip_agent_selection", "current", "moves",
                  "_strikes", "_notes", "outcome", *self._snapshot_fields)  # fmt: skip
        state = {name: copy.deepcopy(getattr(self, name)) for name in fields}
        state["rng"] = copy.deepcopy(self.np_random.bit_generator.state)
        return state

    def restore(self, snapshot: Any) -> None:
        """Put back a state taken by `snapshot()`; the snapshot stays reusable."""
        if not isinstance(snapshot, dict) or "rng" not in snapshot:
            raise TypeError("restore() takes the object returned by snapshot() of this env")
        for name, value in snapshot.items():
            if name != "rng":
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
        to_move = agent == self.agent_selection and not self.game_over
        return {
            "player": agent,
            "turn": self.moves,
            "action_valid": action_valid,
            "state_key": self._information_key(self._index[agent]),
            "admissible_actions": list(self._legal(self._index[agent])) if to_move else [],
        }
