"""What each env of a batch is made from: env ids (with kwargs) or ``env_fns``.

`env_factories` turns the vector env's ``envs``/``env_fns`` arguments into one
factory per env, laid out in groups, and the source each env runs (its index
in the ``envs`` list, which the task queue keys its seeds by), and checks them
with errors that say what to pass instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from envgym.registry import register_envs

__all__ = ["EnvSource", "MakeEnv", "env_factories"]

#: An env id, or an ``(id, kwargs)`` pair.
EnvSource = str | tuple[str, dict[str, Any]]


class MakeEnv:
    """A picklable factory for a registered id (lambdas over ids would do, but
    this one prints well in error messages)."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        self.env_id = env_id
        self.kwargs = dict(kwargs)

    def __call__(self) -> gym.Env:
        register_envs()  # a fresh worker process (spawned, a Ray actor) knows no ids yet
        return gym.make(self.env_id, **self.kwargs)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"gym.make({self.env_id!r}{args})"


def _normalise_sources(envs: Any) -> list[tuple[str, dict[str, Any]]]:
    is_pair = isinstance(envs, tuple) and len(envs) == 2 and isinstance(envs[1], dict)
    items = [envs] if isinstance(envs, str) or is_pair else list(envs)
    if not items:
        raise ValueError("no env ids given; pass an id, a list of ids, or env_fns=[...]")
    out = []
    for item in items:
        if isinstance(item, str):
            out.append((item, {}))
        elif (
            isinstance(item, tuple)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], dict)
        ):
            out.append((item[0], dict(item[1])))
        else:
            raise TypeError(
                f"an env is named by an id or an (id, kwargs) pair, got {item!r}; "
                "for arbitrary factories pass env_fns=[...]"
            )
    return out


def env_factories(
    envs: Any,
    env_fns: Sequence[Callable[[], gym.Env]] | None,
    env_kwargs: dict[str, Any] | None,
    num_envs: int | None,
    group_size: int,
) -> tuple[list[Callable[[], gym.Env]], list[int]]:
    """One factory per env and the source index of each: ``env_fns`` as given
    (env ``i`` is source ``i``), or the ids in `envs` repeated over the groups in
    order (group ``g`` runs source ``g % len(envs)``)."""
    if env_fns is not None:
        if envs is not None:
            raise ValueError("pass env ids or env_fns, not both")
        fns = list(env_fns)
        if not fns or not all(callable(f) for f in fns):
            raise TypeError("env_fns must be a non-empty list of callables returning an env")
        if num_envs is not None and num_envs != len(fns):
            raise ValueError(f"num_envs={num_envs} but {len(fns)} env_fns were given")
        if len(fns) % group_size:
            raise ValueError(
                f"{len(fns)} env_fns do not split into groups of group_size={group_size}"
            )
        return fns, list(range(len(fns)))
    if envs is None:
        raise ValueError("pass an env id (or a list of ids), or env_fns=[...]")
    sources = _normalise_sources(envs)
    if num_envs is None:
        num_envs = len(sources) * group_size
    if num_envs % group_size:
        raise ValueError(
            f"num_envs={num_envs} is not divisible by group_size={group_size}; "
            f"use a multiple of {group_size}"
        )
    groups = num_envs // group_size
    if groups % len(sources):
        raise ValueError(
            f"{groups} groups cannot be shared evenly among {len(sources)} env ids; "
            f"make num_envs / group_size a multiple of {len(sources)}"
        )
    extra = dict(env_kwargs or {})
    made = [MakeEnv(env_id, {**kwargs, **extra}) for env_id, kwargs in sources]
    for env_id, _ in sources:
        gym.spec(env_id)  # an unknown id fails here, with Gymnasium's suggestions
    index = [(i // group_size) % len(made) for i in range(num_envs)]
    return [made[s] for s in index], index
