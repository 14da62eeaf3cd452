"""The base class of single-agent text environments, and the shared info keys.

`TextEnv` turns a small set of hooks (`_new_task`, `_act`, `_task_info`) into a
full `gymnasium.Env[str, str]`: Text spaces, seeding, difficulty presets, the
turn limit, the shared `info` keys, rendering, and `snapshot()`/`restore()`.
The base class owns everything that must behave the same in every env, so a
new env only writes its rules. It knows nothing of backends, servers or files:
``gym.make(id, backend="docker")`` is the registry's business.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envgym.arguments import (
    MAX_EPISODE_LENGTH,
    MAX_TASK_SEED,
    check_int,
    check_number,
    check_render_mode,
    check_setting,
    setting,
    short_repr,
)
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

__all__ = [
    "CHARSET",
    "INFO_KEYS",
    "MAX_EPISODE_LENGTH",
    "MAX_TASK_SEED",
    "Preset",
    "TextEnv",
    "Turn",
    "check_int",
    "check_number",
    "coerce_action",
    "quote_for_feedback",
    "render_text",
    "setting",
    "short_repr",
]

#: The info keys with one meaning in every envgym env (see docs/design.md).
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
    # Envs that run code: whether the sandbox failed (timeout, memory, crash), and
    # a submission's per-test results.
    "sandbox_error",
    "grade",
)


@dataclass(frozen=True)
class Preset:
    """What one difficulty level sets. An env subclasses it (a frozen dataclass)
    with its own fields, declared with `setting` where a caller may override them:

        @dataclass(frozen=True)
        class LakePreset(Preset):
            size: int = setting(4, 2, 12, "the map's side length")

    ``max_turns`` is every env's: the turn limit (1 to `MAX_EPISODE_LENGTH`).
    """

    max_turns: int = setting(30, 1, MAX_EPISODE_LENGTH, "turns per episode")


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
    """Base class for single-agent text environments (see docs/design.md and
    docs/writing-an-env.md).

    Subclasses implement:

    - ``_new_task(options) -> str``: build a task from ``self.np_random`` (and
      ``options["task_id"]`` if given) and return the first observation text.
    - ``_act(action: str) -> Turn``: apply the model's whole reply.
    - ``_task_info() -> dict``: env-specific info keys for the current state
      (``state_key``, ``admissible_actions``, ``privileged``, ...).
    - ``_render_text() -> str``: the current state as text (pure function of state).

    Difficulty: ``presets`` maps each level name to a `Preset` (a frozen
    dataclass of the env's settings). The constructor passes its arguments on
    as ``super().__init__(difficulty=..., size=size, ...)``; those that are not
    None override the preset's fields (checked against the bounds each
    `setting` declares), and ``self.config`` is the result, recomputed when
    ``reset(options={"difficulty": ...})`` changes the level. ``_configure``
    may check combinations or derive one setting from others. An env without
    ``presets`` has the levels easy, medium and hard, each with
    ``default_max_turns`` turns.

    ``snapshot()`` copies every attribute the env sets except those in
    ``snapshot_exclude`` (caches, loaded data, clients), so a new attribute is
    episode state unless the env says otherwise. Envs whose state lives outside
    the Python process (a sandbox) set ``fork_by_replay = True`` instead: their
    snapshot is the reset seed and options plus the actions taken, and restore
    replays them.

    ``fast_calls = True`` promises that ``step`` is pure Python with short,
    bounded work (no I/O, no sandbox, no network, no model): an env server then
    runs its steps on its event loop rather than handing each to a thread (see
    `envgym.remote.inline`). A declared-fast step that hangs holds every
    session of that server, so declare it only when that cannot happen.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 4}

    #: difficulty name -> settings, easiest first (None: easy/medium/hard alike).
    presets: ClassVar[Mapping[str, Preset] | None] = None
    default_max_turns: ClassVar[int] = 30
    #: Attributes snapshot() leaves out: caches, loaded data, clients.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ()
    fork_by_replay: ClassVar[bool] = False
    #: step is pure Python, short and bounded: env servers run it on their event loop.
    fast_calls: ClassVar[bool] = False
    #: Instructions for the action format, returned as info["system_prompt"] on reset.
    system_prompt: ClassVar[str] = ""
    # The seed of a seeded reset until `_np_random` builds its generator, and
    # that generator (class defaults, as Gymnasium's `_np_random` is one).
    _pending_seed: int | None = None
    _built_rng: np.random.Generator | None = None
    #: This episode's reset seed (None when the reset was not seeded).
    _episode_seed: int | None = None
    #: The keys `reset(options=...)` accepts; anything else is a clear error.
    reset_options: ClassVar[tuple[str, ...]] = ("task_id", "difficulty")

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        render_mode: str | None = None,
        **settings: Any,
    ) -> None:
        self.render_mode = check_render_mode(self, render_mode)
        #: The constructor arguments that override the preset's settings.
        self.overrides = self._check_overrides(settings)
        self._set_difficulty(self._check_difficulty(difficulty))
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

    # ---------------------------------------------------------- difficulty
    @property
    def difficulties(self) -> tuple[str, ...]:
        """The named difficulty levels, easiest first."""
        return tuple(self.presets) if self.presets else ("easy", "medium", "hard")

    def _preset(self, difficulty: str) -> Preset:
        if self.presets:
            return self.presets[difficulty]
        return Preset(max_turns=self.default_max_turns)

    def _check_overrides(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        fields = {f.name: f for f in dataclasses.fields(self._preset(self.difficulties[0]))}
        unknown = sorted(set(settings) - set(fields))
        if unknown:
            raise TypeError(
                f"{type(self).__name__} got unknown setting(s) {', '.join(unknown)}; "
                f"its settings are {', '.join(fields)}"
            )
        return {
            name: check_setting(fields[name], value)
            for name, value in settings.items()
            if value is not None
        }

    def _configure(self, config: Preset) -> Preset:
        """Check a combination of settings, or derive one from others; return the
        settings to use. Called whenever the difficulty is set."""
        return config

    def _set_difficulty(self, difficulty: str) -> None:
        # Checked before anything is set: a refused level leaves the env as it was.
        config = self._configure(dataclasses.replace(self._preset(difficulty), **self.overrides))
        self.difficulty, self.config = difficulty, config
        self.max_turns = self.config.max_turns

    @property
    def _np_random(self) -> np.random.Generator | None:  # type: ignore[override]
        """Gymnasium's generator attribute (``np_random`` reads it, and so does
        Gymnasium's env checker); after a seeded reset it is built when first
        read: what Gymnasium's seeding builds for that seed."""
        if self._pending_seed is not None:
            self._built_rng, self._pending_seed = seeded_generator(self._pending_seed), None
        return self._built_rng

    @_np_random.setter
    def _np_random(self, value: np.random.Generator | None) -> None:
        self._pending_seed = None
        self._built_rng = value

    # ----------------------------------------------------------------- hooks
    def _new_task(self, options: dict[str, Any]) -> str:
        raise NotImplementedError

    def _act(self, action: str) -> Turn:
        raise NotImplementedError

    def _task_info(self) -> dict[str, Any]:
        return {}

    def _render_text(self) -> str:
        return self._last_obs

    # ------------------------------------------------------------ gymnasium
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if type(seed) is int and seed >= 0:
            # What Gymnasium's seeding.np_random(seed) builds, built when first read.
            self._pending_seed, self._np_random_seed = seed, seed
            self._episode_seed = seed
            super().reset()
        else:  # None, or a seed Gymnasium refuses with its own error
            super().reset(seed=seed)
            self._episode_seed = None
        options = dict(options or {})
        unknown = sorted(set(options).difference(self.reset_options)) if options else None
        if unknown:
            raise ValueError(
                f"unknown reset option(s) {short_repr(unknown)}; {type(self).__name__} takes "
                f"{', '.join(repr(k) for k in self.reset_options)}"
            )
        if "difficulty" in options:
            self._set_difficulty(self._check_difficulty(options["difficulty"]))
        if self.fork_by_replay:  # only a replayed fork reads it (1 us a reset)
            # The getter builds a new dict (and arrays) on every read: nothing to copy.
            self._reset_rng_state = self.np_random.bit_generator.state
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
        too_long = reply_too_long(text)
        if too_long is None:
            turn = self._act(text)
        else:  # never parsed: the env answers it as it answers an empty reply
            turn = self._act("")
            turn.observation = f"{too_long}\n{turn.observation}"
            turn.action_valid = False
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
        state: dict[str, Any] = {
            "difficulty": self.difficulty,
            "rng": copy.deepcopy(self.np_random.bit_generator.state),
        }
        if self.fork_by_replay:
            state["replay"] = {
                "rng": copy.deepcopy(self._reset_rng_state),
                "options": copy.deepcopy(self._reset_options),
                "actions": list(self._actions),
            }
            names = _BASE_STATE
        else:
            skip = _NOT_STATE.union(self.snapshot_exclude)
            names = tuple(name for name in vars(self) if name not in skip)
        state["attrs"] = {name: copy.deepcopy(getattr(self, name)) for name in names}
        return state

    def restore(self, snapshot: Any) -> None:
        """Put back a state taken by `snapshot()`; the snapshot stays reusable."""
        if not isinstance(snapshot, dict) or "rng" not in snapshot or "attrs" not in snapshot:
            raise TypeError("restore() takes the object returned by snapshot() of this env")
        if snapshot["difficulty"] != self.difficulty:
            self._set_difficulty(snapshot["difficulty"])
        if self.fork_by_replay:
            replay = snapshot["replay"]
            # Rewind the RNG to where the episode began; reset() and the replayed
            # actions then draw exactly what they drew the first time.
            self.np_random.bit_generator.state = copy.deepcopy(replay["rng"])
            self.reset(options=copy.deepcopy(replay["options"]))
            for action in replay["actions"]:
                self.step(action)
        for name, value in snapshot["attrs"].items():
            setattr(self, name, copy.deepcopy(value))
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


#: What the base class keeps per env that is not episode state: spaces and
#: settings fixed at construction, the RNG (saved by its state), Gymnasium's spec.
_NOT_STATE = frozenset(
    {
        "observation_space",
        "action_space",
        "render_mode",
        "overrides",
        "config",
        "max_turns",
        "difficulty",
        "spec",
        "_np_random",
        "_np_random_seed",
        "_pending_seed",
        "_built_rng",
    }
)
#: The base class's own episode state (all a replay-forked env's snapshot holds
#: besides the replay).
_BASE_STATE = ("turn", "task_id", "_episode_over", "_success", "_last_obs")
