"""Checks on what a user asks an evaluation to do, made before any episode runs.

The env id and kwargs, the agent, the episode count and seed, and the output
file or folder: each bad one raises `EvaluationError` saying what to fix, so a
long evaluation never fails at its end for a typo at its start. `json_object`
reads env kwargs from a command line (``envgym serve``, the trainers).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from envgym.agents import check_agent_for, parse_agent_spec
from envgym.registry import EnvCreationError, get_spec, make_text_env

__all__ = [
    "EvaluationError",
    "check_inputs",
    "json_object",
    "make_evaluation_env",
    "prepare_output_dir",
    "prepare_output_path",
]


class EvaluationError(ValueError):
    """Bad input to an evaluation (env kwargs, agent, episode count, output path)."""


def json_object(text: str) -> dict[str, Any]:
    """An argparse type for env kwargs on a command line: one JSON object,
    e.g. ``{"difficulty": "hard"}``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f'expected a JSON object such as {{"max_turns": 6}}, got {text!r}'
        )
    return value


def make_evaluation_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> gym.Env:
    """`envgym.registry.make_text_env`, raising `EvaluationError` for an env it cannot make."""
    try:
        return make_text_env(env_id, env_kwargs)
    except EnvCreationError as exc:
        raise EvaluationError(str(exc)) from exc


def check_inputs(
    env_id: str,
    agent_name: str,
    episodes: int,
    seed: int,
    env_kwargs: Mapping[str, Any] | None,
) -> None:
    """Raise KeyError for an unknown env id and `EvaluationError` for any other bad input."""
    if not isinstance(env_id, str) or not env_id:
        raise EvaluationError(
            f"an env id is a non-empty string like 'envgym/Sokoban-v0', got {env_id!r}"
        )
    get_spec(env_id)  # KeyError naming close matches and `envgym list`
    try:
        parse_agent_spec(agent_name)
        check_agent_for(agent_name, env_id)
    except ValueError as exc:
        raise EvaluationError(str(exc)) from None
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise EvaluationError(f"episodes must be a whole number >= 1, got {episodes!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise EvaluationError(f"seed must be a whole number >= 0, got {seed!r}")
    if env_kwargs is not None:
        if not isinstance(env_kwargs, Mapping):
            raise EvaluationError(f"env_kwargs must be a dict, got {type(env_kwargs).__name__}")
        try:
            json.dumps(dict(env_kwargs), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise EvaluationError(
                f"env_kwargs must be JSON values (numbers, strings, bools, lists, dicts) so the "
                f"results file can record them: {exc}"
            ) from exc


def prepare_output_path(path: str | os.PathLike[str]) -> Path:
    """Check, before any work is done, that a results file can be written at `path`.

    Creates missing parent folders. Raises `EvaluationError` saying what to fix.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise EvaluationError(
            f"--out {target} is a folder; give a file name such as {target / 'results.json'}"
        )
    prepare_output_dir(target.parent if str(target.parent) else Path("."), flag="--out")
    return target


def prepare_output_dir(directory: str | os.PathLike[str], *, flag: str = "--out-dir") -> Path:
    """Create `directory` if needed and check a file can be written in it."""
    folder = Path(directory).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EvaluationError(
            f"cannot create the folder {folder} for {flag}: {exc.strerror or exc}; "
            "choose a folder you can write to"
        ) from exc
    if not folder.is_dir():
        raise EvaluationError(f"{flag} {folder} is not a folder; choose a folder you can write to")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".envgym-write-check-"):
            pass
    except OSError as exc:
        raise EvaluationError(
            f"cannot write to {folder} ({flag}): {exc.strerror or exc}; "
            "choose a folder you can write to"
        ) from exc
    return folder
