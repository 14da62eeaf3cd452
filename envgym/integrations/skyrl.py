"""Every envgym id as a SkyRL-Gym text env (``pip install 'envgym[skyrl]'``).

Importing this module registers each id that `envgym.registry.list_envs` lists
(envgym's own and installed plugins) in ``skyrl_gym``'s registry under the same
id, so SkyRL's generator makes it the way it makes its own envs::

    import skyrl_gym
    import envgym.integrations.skyrl  # registers "envgym/Sokoban-v0", ...

    env = skyrl_gym.make("envgym/Sokoban-v0", env_config={}, extras={"seed": 7})
    chat, metadata = env.init([])        # [system prompt, first observation]
    out = env.step("<answer>Up</answer>")  # observations, reward, done, metadata

`EnvgymTextEnv` is a ``skyrl_gym.envs.base_text_env.BaseTextEnv`` (skyrl-gym
0.4) around ``gym.make(env_id, **env_kwargs)``:

- ``init(prompt)`` resets the env with the row's seed and returns the env's
  own conversation, ``[{"role": "system", ...}, {"role": "user", ...}]`` (the
  system message only where the env has a system prompt), in place of the
  dataset's prompt: the task comes from the seed. The prompt a dataset row
  carries (`dataset_rows` writes it) is that same conversation, so SkyRL's
  prompt-length filter measures the real one.
- ``step(reply)`` is one ``env.step(reply)``: the reward is envgym's reward
  for that turn, ``done`` is ``terminated or truncated``, and the next
  observation comes back as one user message (none once done; the last
  observation is in ``metadata["observation"]``).
- ``metadata`` holds the env's public info keys (``success``,
  ``reward_components``, ``action_valid``, ``turn``, ``task_id``, ...) and
  ``terminated`` and ``truncated`` apart; ``info["privileged"]`` is never in
  an observation or in the metadata. ``init``'s metadata also carries the
  env's OpenAI-style ``tools`` and the ``seed``.
- ``get_metrics()`` reports the episode's ``return``, ``success``, ``turns``
  and ``truncated``, which SkyRL averages over episodes.

What a dataset row (SkyRL's ``extras``: every column but the prompt and
``env_class``) may hold: ``seed`` (int), ``task_id`` (replays a task by id)
and ``env_kwargs`` (a dict, or JSON text of one, for ``gym.make``), at the top
level or in ``extra_info``. The env's config section
(``environment.skyrl_gym["envgym/Sokoban-v0"]``) may hold ``env_kwargs`` too;
the row's win. SkyRL's generator also passes its ``generator.max_turns`` as
``extras["max_turns"]`` for envs that take their turn limit from it; this env
ignores it: the envgym env's own turn limit (its ``max_turns`` argument, in
``env_kwargs``) ends the episode and sets ``truncated``, as in every envgym
evaluation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym

import envgym  # noqa: F401 - registers the envgym ids with Gymnasium
from envgym.core import INFO_KEYS
from envgym.extras import missing_extra
from envgym.registry import list_envs

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - exercised by tests/test_extras.py-style checks
    raise missing_extra(
        exc.name or "skyrl_gym", extra="skyrl", purpose="envgym.integrations.skyrl"
    ) from exc

__all__ = [
    "ENTRY_POINT",
    "PUBLIC_INFO_KEYS",
    "EnvgymTextEnv",
    "dataset_rows",
    "public_info",
    "register_envs",
]

#: The skyrl_gym entry point every envgym id is registered with.
ENTRY_POINT = "envgym.integrations.skyrl:EnvgymTextEnv"

#: The info keys passed on as metadata: the shared keys (`envgym.core.INFO_KEYS`)
#: a trainer may log, never ``privileged`` (trainer-only data such as gold
#: answers), nor ``grade`` (a code env's per-test results), nor the texts the
#: conversation already holds (``tools``, ``system_prompt``).
PUBLIC_INFO_KEYS = tuple(
    key for key in INFO_KEYS if key not in {"privileged", "grade", "tools", "system_prompt"}
)


def public_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of `info` in `PUBLIC_INFO_KEYS` (so never ``privileged``)."""
    return {key: info[key] for key in PUBLIC_INFO_KEYS if key in info}


def _plain(value: Any) -> dict[str, Any]:
    """A plain dict of `value` (None, a mapping or an OmegaConf DictConfig)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        try:
            from omegaconf import OmegaConf

            value = OmegaConf.to_container(value, resolve=True)
        except Exception as exc:  # noqa: BLE001 - any non-mapping is the caller's mistake
            raise TypeError(f"expected a mapping, got {type(value).__name__}") from exc
    return dict(value)  # type: ignore[arg-type]


def _kwargs(value: Any, where: str) -> dict[str, Any]:
    """`env_kwargs` given as a dict or as JSON text of one (parquet keeps text simply)."""
    if value is None:
        return {}
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else {}
    value = _plain(value)
    if not all(isinstance(k, str) for k in value):
        raise TypeError(f"{where}: env_kwargs must map names to values, got {value!r}")
    return value


def _row_value(extras: Mapping[str, Any], key: str) -> Any:
    """`key` from a dataset row: at the top level, else in its ``extra_info``."""
    if extras.get(key) is not None:
        return extras[key]
    extra_info = extras.get("extra_info")
    if isinstance(extra_info, Mapping):
        return extra_info.get(key)
    return None


class EnvgymTextEnv(BaseTextEnv):
    """An envgym env behind skyrl-gym's ``BaseTextEnv``; see the module docstring.

    SkyRL makes it with ``skyrl_gym.make(id, env_config=..., extras=row)``;
    `env_id` comes from the registration (`register_envs`), or from
    ``env_config["env_id"]`` / the row's ``env_id`` where it is registered
    without one.
    """

    def __init__(
        self,
        env_config: Any = None,
        extras: Any = None,
        *,
        env_id: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        config = _plain(env_config)
        row = _plain(extras)
        self.env_id = env_id or config.get("env_id") or _row_value(row, "env_id")
        if not isinstance(self.env_id, str):
            raise ValueError("EnvgymTextEnv needs an envgym env id (register_envs registers each)")
        self.env_kwargs = {
            **dict(env_kwargs or {}),
            **_kwargs(config.get("env_kwargs"), "env_config"),
            **_kwargs(_row_value(row, "env_kwargs"), "dataset row"),
        }
        seed = _row_value(row, "seed")
        if seed is not None and (isinstance(seed, bool) or int(seed) != seed):
            raise ValueError(f"seed must be a whole number, got {seed!r}")
        self.seed = None if seed is None else int(seed)
        task_id = _row_value(row, "task_id")
        self.reset_options = {"task_id": task_id} if task_id is not None else None
        self.env = gym.make(self.env_id, **self.env_kwargs)
        limit = getattr(self.env.unwrapped, "max_turns", None)
        self.max_turns = int(limit) if isinstance(limit, int) else 0
        self.rewards: list[float] = []
        self.success = False
        self.terminated = False
        self.truncated = False

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset the env to the row's seed; return its conversation and metadata."""
        obs, info = self.env.reset(seed=self.seed, options=self.reset_options)
        self.turns = 0
        self.rewards = []
        self.success = bool(info.get("success", False))
        self.terminated = self.truncated = False
        chat: list[dict[str, str]] = []
        system_prompt = info.get("system_prompt")
        if isinstance(system_prompt, str) and system_prompt:
            chat.append({"role": "system", "content": system_prompt})
        chat.append({"role": "user", "content": obs})
        metadata = public_info(info) | {"seed": self.seed, "env_id": self.env_id}
        if info.get("tools"):
            metadata["tools"] = info["tools"]
        return chat, metadata

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One envgym turn: the whole reply is the action."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        self.rewards.append(float(reward))
        self.success = bool(info.get("success", False))
        self.terminated, self.truncated = bool(terminated), bool(truncated)
        done = self.terminated or self.truncated
        metadata = public_info(info) | {"terminated": self.terminated, "truncated": self.truncated}
        if done:
            metadata["observation"] = obs
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": obs}],
            reward=float(reward),
            done=done,
            metadata=metadata,
            postprocessed_action=None,
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode so far: ``return``, ``success``, ``turns``, ``truncated``."""
        return {
            "return": float(sum(self.rewards)),
            "success": float(self.success),
            "turns": self.turns,
            "truncated": float(self.truncated),
        }

    def close(self) -> None:
        self.env.close()


def register_envs(env_ids: Iterable[str] | None = None) -> list[str]:
    """Register `env_ids` (default: every listed envgym id) with skyrl_gym under
    the same ids; ids already registered there are left alone. Returns the ids.
    Importing this module calls it once; call it again after registering more
    envgym envs (`envgym.registry.register`)."""
    ids = [spec.id for spec in list_envs()] if env_ids is None else list(env_ids)
    for env_id in ids:
        if env_id not in skyrl_gym.registry:
            skyrl_gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"env_id": env_id})
    return ids


def dataset_rows(
    env_id: str,
    seeds: Sequence[int],
    env_kwargs: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One SkyRL dataset row per seed: ``prompt`` (the env's first conversation
    for that seed, as `EnvgymTextEnv.init` returns it), ``env_class`` (the id),
    ``seed`` and ``env_kwargs`` (JSON text, so the rows fit in a parquet file).
    Write them with ``pandas.DataFrame(rows).to_parquet(path)``."""
    kwargs = dict(env_kwargs or {})
    rows = []
    env = EnvgymTextEnv(env_id=env_id, env_kwargs=kwargs)
    try:
        for seed in seeds:
            env.seed = int(seed)
            chat, _ = env.init([])
            rows.append(
                {
                    "prompt": chat,
                    "env_class": env_id,
                    "seed": int(seed),
                    "env_kwargs": json.dumps(kwargs),
                }
            )
    finally:
        env.close()
    return rows


register_envs()
