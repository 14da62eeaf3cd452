"""Adaptive difficulty: move an env's level up or down with the agent's success rate.

`Curriculum` keeps training at the edge of what the agent can do (the
RLVE-style adaptive-difficulty loop): too easy and the level goes up, too hard
and it comes down, with no change to the env or the trainer beyond the wrap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym

from envgym.arguments import check_int, check_number

__all__ = ["Curriculum"]

_STATE_VERSION = 1


#: The longest window of episodes the success rate is taken over.
MAX_WINDOW = 1_000_000


class Curriculum(gym.Wrapper[str, str, str, str]):
    """Move the wrapped env's difficulty with the running success rate.

    The rule:

    - At the end of every episode (``terminated`` or ``truncated``) the wrapper
      reads ``info["success"]`` from the last step (a missing key counts as a
      failure) and appends it to a sliding window of the last ``window``
      episodes played at the current level.
    - Once the window holds at least ``min_episodes`` outcomes (default: a
      full window), the success rate over it decides:
      ``rate >= promote_at`` moves one level up, ``rate <= demote_at`` one
      level down, anything between keeps the level. At the top (or bottom)
      level there is nowhere to go and the window keeps sliding.
    - After each change the window is cleared, so the new level is judged only
      on episodes played at it.
    - The level takes effect at the next ``reset``, passed to the env as
      ``options={"difficulty": level}`` merged into the caller's options. A
      ``difficulty`` the caller puts in ``options`` wins for that reset; such
      an episode is not counted unless it was played at the curriculum's level.

    ``info["curriculum"]`` on every ``reset`` and ``step`` is
    ``{"level", "success_rate", "episodes_at_level"}``. On the step that ends an
    episode it already reflects that episode, so ``level`` there is the level
    the next reset will use. ``success_rate`` is ``None`` until an episode has
    been counted at the current level; ``episodes_at_level`` counts episodes
    since the level was last changed (not capped at ``window``).

    Args:
        env: the env to wrap; its ``reset`` must accept ``options["difficulty"]``
            (every `envgym.core.TextEnv` does).
        levels: the levels in order, easiest first. Defaults to
            ``env.unwrapped.difficulties``. Any values the env accepts as a
            difficulty work, e.g. ``[1, 2, 3, 4]`` for an env with an integer scale.
        window: how many recent episodes at the current level the success rate
            is computed over.
        promote_at: move up when the success rate is at least this.
        demote_at: move down when the success rate is at most this.
            ``0 <= demote_at < promote_at <= 1``.
        start: the level of the first episode; defaults to the easiest level.
        min_episodes: how many episodes at a level are needed before it can
            change; defaults to ``window`` (a full window). ``1 <= min_episodes <= window``.

    Example::

        env = Curriculum(gym.make("envgym/Sokoban-v0"), window=64, promote_at=0.7)
        obs, info = env.reset(seed=0)
        ...
        checkpoint["curriculum"] = env.state_dict()
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        levels: Sequence[Any] | None = None,
        window: int = 32,
        promote_at: float = 0.8,
        demote_at: float = 0.3,
        start: Any = None,
        min_episodes: int | None = None,
    ) -> None:
        super().__init__(env)
        if levels is None:
            levels = getattr(env.unwrapped, "difficulties", None)
            if levels is None:
                raise ValueError(
                    f"{type(env.unwrapped).__name__} has no `difficulties` attribute; "
                    "pass the levels explicitly, easiest first, e.g. levels=['easy', 'hard']"
                )
        if isinstance(levels, str | bytes) or not isinstance(levels, Iterable):
            raise ValueError(
                f"levels must be a list of difficulty levels, easiest first, got {levels!r}"
            )
        levels = tuple(levels)
        if not levels:
            raise ValueError("levels is empty; give at least one difficulty level, easiest first")
        for i, level in enumerate(levels):
            if level in levels[:i]:
                raise ValueError(
                    f"level {level!r} appears more than once in levels={list(levels)}; "
                    "list each level once, easiest first"
                )
        window = check_int(window, "window", 1, MAX_WINDOW, "episodes")
        promote_at = check_number(promote_at, "promote_at", 0.0, 1.0, "a success rate")
        demote_at = check_number(demote_at, "demote_at", 0.0, 1.0, "a success rate")
        if not demote_at < promote_at:
            raise ValueError(
                f"need 0 <= demote_at < promote_at <= 1, got demote_at={demote_at!r}, "
                f"promote_at={promote_at!r}; pick a demote threshold below the promote one"
            )
        if min_episodes is None:
            min_episodes = window
        min_episodes = check_int(min_episodes, "min_episodes", 1, window, "at most the window")
        if start is None:
            start = levels[0]
        elif start not in levels:
            raise ValueError(f"start={start!r} is not one of levels={list(levels)}")

        self.levels: tuple[Any, ...] = levels
        self.window = window
        self.promote_at = float(promote_at)
        self.demote_at = float(demote_at)
        self.min_episodes = min_episodes
        self._index = levels.index(start)
        self._outcomes: deque[bool] = deque(maxlen=window)
        self._episodes_at_level = 0
        # Whether the running episode's outcome goes into the window: only while
        # one is running and it was played at the curriculum's level.
        self._counting = False
        self._warned_no_success = False

    # ------------------------------------------------------------ read-outs
    @property
    def level(self) -> Any:
        """The level the next reset uses (unless the caller overrides it)."""
        return self.levels[self._index]

    @property
    def success_rate(self) -> float | None:
        """Success rate over the window at the current level; None before any episode."""
        if not self._outcomes:
            return None
        return sum(self._outcomes) / len(self._outcomes)

    @property
    def episodes_at_level(self) -> int:
        """Episodes counted since the level last changed."""
        return self._episodes_at_level

    def _curriculum_info(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "success_rate": self.success_rate,
            "episodes_at_level": self._episodes_at_level,
        }

    # ------------------------------------------------------------ gymnasium
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        merged = dict(options or {})
        merged.setdefault("difficulty", self.level)
        obs, info = self.env.reset(seed=seed, options=merged)
        self._counting = merged["difficulty"] == self.level
        info = dict(info)
        info["curriculum"] = self._curriculum_info()
        return obs, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if (terminated or truncated) and self._counting:
            self._counting = False
            if "success" not in info and not self._warned_no_success:
                self._warned_no_success = True
                gym.logger.warn(
                    f"Curriculum: {type(self.env.unwrapped).__name__} gave no info['success'] "
                    "at the end of an episode; counting it as a failure"
                )
            self._record(bool(info.get("success", False)))
        info = dict(info)
        info["curriculum"] = self._curriculum_info()
        return obs, reward, terminated, truncated, info

    def _record(self, success: bool) -> None:
        self._outcomes.append(success)
        self._episodes_at_level += 1
        if len(self._outcomes) < self.min_episodes:
            return
        rate = sum(self._outcomes) / len(self._outcomes)
        if rate >= self.promote_at and self._index < len(self.levels) - 1:
            self._move(+1)
        elif rate <= self.demote_at and self._index > 0:
            self._move(-1)

    def _move(self, step: int) -> None:
        self._index += step
        self._outcomes.clear()
        self._episodes_at_level = 0

    # ---------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The curriculum's progress as plain data (JSON-safe if the levels are)."""
        return {
            "version": _STATE_VERSION,
            "levels": list(self.levels),
            "level": self.level,
            "outcomes": list(self._outcomes),
            "episodes_at_level": self._episodes_at_level,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from `state_dict()`; the wrapper must have been built with the same levels."""
        if not isinstance(state, dict) or "level" not in state or "outcomes" not in state:
            raise ValueError("load_state_dict() takes the dict returned by Curriculum.state_dict()")
        if state.get("version") != _STATE_VERSION:
            raise ValueError(
                f"curriculum state version {state.get('version')!r} is not supported; "
                f"this envgym reads version {_STATE_VERSION}"
            )
        if list(state.get("levels", self.levels)) != list(self.levels):
            raise ValueError(
                f"the saved curriculum has levels={state['levels']} but this one has "
                f"levels={list(self.levels)}; build the Curriculum with the same levels"
            )
        if state["level"] not in self.levels:
            raise ValueError(
                f"saved level {state['level']!r} is not one of levels={list(self.levels)}"
            )
        self._index = self.levels.index(state["level"])
        self._outcomes = deque((bool(x) for x in state["outcomes"]), maxlen=self.window)
        self._episodes_at_level = int(state.get("episodes_at_level", len(self._outcomes)))
