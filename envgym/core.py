"""Base classes every envgym environment builds on, and the shared info keys.

`TextEnv` turns a small set of hooks (`_new_task`, `_act`, `_task_info`) into a
full `gymnasium.Env[str, str]`: Text spaces, seeding, the turn limit, the
shared `info` keys, rendering, and `snapshot()`/`restore()`. The base class
owns everything that must behave the same in every env, so a new env only
writes its rules.
"""

from __future__ import annotations

import copy
import string
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
from gymnasium import spaces

__all__ = [
    "CHARSET",
    "INFO_KEYS",
    "TextEnv",
    "Turn",
    "coerce_action",
    "quote_for_feedback",
]

#: Every character an envgym observation may contain, and every character the
#: action space samples. Envs accept any text as an action; what they echo back
#: is escaped into this set by `quote_for_feedback`.
CHARSET = string.printable

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
)

OBSERVATION_MAX_LENGTH = 16_384
ACTION_MAX_LENGTH = 8_192
_CHARSET_SET = frozenset(CHARSET)


def coerce_action(action: Any) -> str:
    """Turn whatever a caller passed as an action into text, never raising.

    A model's reply is normally a `str`; bytes are decoded leniently and any
    other object is formatted, so a buggy caller gets feedback, not a crash.
    """
    if isinstance(action, str):
        return action
    if isinstance(action, bytes | bytearray):
        return bytes(action).decode("utf-8", errors="replace")
    if action is None:
        return ""
    try:
        return str(action)
    except Exception:  # a broken __str__ is still only a malformed action
        return f"<unprintable {type(action).__name__}>"


def quote_for_feedback(text: str, limit: int = 60) -> str:
    """Quote model text for echoing in an observation: shortened and ASCII-safe."""
    if len(text) > limit:
        text = text[:limit] + "..."
    if not all(c in _CHARSET_SET for c in text) or "\n" in text:
        text = text.encode("ascii", errors="backslashreplace").decode("ascii")
        text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        text = "".join(c if c in _CHARSET_SET else "?" for c in text)
    return repr(text) if "'" not in text else '"' + text.replace('"', "'") + '"'


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

    def __init__(
        self,
        *,
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
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"max_turns must be a positive integer, got {max_turns!r}")
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
        if self.render_mode is None:
            gym.logger.warn(
                "render() called without a render_mode; pass render_mode='ansi' or 'human' "
                "to gym.make to see the env as text"
            )
            return None
        text = self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

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
                f"unknown difficulty {difficulty!r} for {type(self).__name__}; "
                f"choose one of {list(self.difficulties)}"
            )
        return difficulty
