"""Which `env_kwargs` from someone else's results file may make an env here.

A results file names the env arguments its episodes ran with, and replaying
them means making the env with those arguments on this machine: the
leaderboard's verifier does (`envgym.evaluation.verify`), and so do the
trajectory pages (`envgym.leaderboard.trajectory`). Both ask this module, so
the two can never disagree about what is safe. An argument is safe when it is
on the env's allow-list (`scoring_kwargs`: plain settings, never a service, a
backend, a URL or a path) and its value is a JSON scalar that names no URL and
no path on this machine (POSIX, home, Windows drive or UNC).

Whether a file is a track's run (nothing set but the difficulty and a game's
seat) is a further rule of the verifier (`envgym.evaluation.tracks`): a page
may replay a custom run that the board does not rank.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from envgym.core import Preset, TextEnv
from envgym.registry import get_spec, load_entry_point

__all__ = ["env_kwargs_problem", "scoring_kwargs"]

#: Windows drive paths (C:\ or C:/) as well as POSIX ones name a file on the verifier's disk.
_DRIVE_PATH = re.compile(r"^[A-Za-z]:[\\/]")


def scoring_kwargs(env_id: str) -> tuple[str, ...]:
    """The `env_kwargs` of `env_id` that are plain settings, sorted: safe to make
    the env with from a file (a page replays a stored custom run with them),
    never a service, a URL or a path. A scored run sets only "difficulty" of
    them (its track fixes the rest).

    "difficulty", the env's preset settings (fields declared with
    `envgym.arguments.setting`) and the spec's own `EnvSpec.scoring_kwargs`.
    Raises KeyError for an id envgym does not know.
    """
    spec = get_spec(env_id)
    names = {"difficulty", *spec.scoring_kwargs}
    env_class = load_entry_point(spec.entry_point)
    if isinstance(env_class, type) and issubclass(env_class, TextEnv):
        presets = env_class.presets
        preset = next(iter(presets.values())) if presets else Preset()
        # Only fields declared with `setting` are constructor arguments; others are derived.
        names.update(f.name for f in dataclasses.fields(preset) if "bounds" in f.metadata)
    return tuple(sorted(names))


def _value_problem(value: Any) -> str | None:
    """Why `value` cannot be an argument from a file, or None if it can."""
    if value is not None and not isinstance(value, str | bool | int | float):
        return "is not a JSON scalar (a string, number, boolean or null)"
    if isinstance(value, str):
        if "://" in value:
            return f"is a URL ({value!r}); a scored env runs from installed code only"
        if value.startswith(("/", "\\", "~")) or _DRIVE_PATH.match(value):
            return f"is a path ({value!r}); a scored env reads no files named by the submitter"
    return None


def env_kwargs_problem(env_id: str, env_kwargs: Any) -> str | None:
    """Why the env `env_id` must not be made here with `env_kwargs` taken from a
    file, as a sentence naming the argument; None when it may.

    Refused: kwargs that are not an object, an env not installed here or whose
    code does not import, a value that is not a JSON scalar or that is a URL or
    a path, a ``backend``, and any name off `scoring_kwargs`.
    """
    if not isinstance(env_kwargs, Mapping):
        return f"env_kwargs is {type(env_kwargs).__name__}, not an object of env arguments"
    try:
        allowed = scoring_kwargs(env_id)
    except KeyError:
        return f"{env_id} is not an env installed here"
    except ImportError as exc:
        return f"the code of {env_id} does not import here: {exc}"
    for name, value in env_kwargs.items():
        problem = _value_problem(value)
        if problem is not None:
            return f"env_kwargs.{name} {problem}"
        if name == "backend":
            return (
                "env_kwargs.backend is set; a scored run plays the env in envgym's own "
                "process (remove backend)"
            )
        if name not in allowed:
            return (
                f"env_kwargs.{name} is not an argument a scored run of {env_id} may set; "
                f"it may set {', '.join(allowed)}"
            )
    return None
