"""Run an agent for a number of seeded episodes and keep what happened in a results file.

A results file (JSON, ``schema_version`` 1, schema in ``envgym/schemas/``) records
every episode's seed and the agent's raw replies, so anyone can replay it in
the same env version and check the rewards (`replay_episode`,
`verify_results`); the leaderboard does exactly that. The summary carries
95% confidence intervals: a Student-t interval for the mean return and a
Wilson interval for the success rate.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.resources
import importlib.util
import json
import math
import os
import re
import statistics
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import envgym
from envgym.agents import AGENT_NAMES, make_agent
from envgym.core import coerce_action
from envgym.registry import get_spec, register_envs

__all__ = [
    "SCHEMA_VERSION",
    "agent_seed",
    "EvaluationError",
    "ReplayResult",
    "ResultsFileError",
    "env_hash",
    "env_version",
    "evaluate",
    "load_results",
    "load_schema",
    "make_text_env",
    "mean_ci95",
    "prepare_output_dir",
    "prepare_output_path",
    "replay_episode",
    "summarize",
    "t_critical_95",
    "validate_results",
    "verify_results",
    "wilson_ci95",
    "write_results",
]

SCHEMA_VERSION = 1

#: A correct env ends every episode through its turn limit; this only stops a
#: broken one from hanging an evaluation forever.
_MAX_STEPS_PER_EPISODE = 100_000

ProgressCallback = Callable[[int, int], None]


class EvaluationError(ValueError):
    """Bad input to an evaluation (env kwargs, agent, episode count, output path)."""


class ResultsFileError(ValueError):
    """A results file that cannot be read or does not match the schema."""


# ----------------------------------------------------------------- envs
def _gym_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """Gymnasium's spec for `env_id`, with envgym's helpful error if there is none."""
    if not isinstance(env_id, str) or not env_id:
        raise EvaluationError(
            f"an env id is a non-empty string like 'envgym/Sokoban-v0', got {env_id!r}"
        )
    if env_id not in gym.registry:
        register_envs()
    if env_id not in gym.registry:
        get_spec(env_id)  # raises KeyError naming close matches and `envgym list`
        raise KeyError(f"{env_id!r} is not registered with gymnasium; `import envgym` registers it")
    return gym.spec(env_id)


def make_text_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> gym.Env:
    """`gym.make(env_id, **env_kwargs)`, with errors that say what to fix.

    Raises KeyError for an unknown id and `EvaluationError` for kwargs the env
    refuses, env code that does not import, or an env that is not a text env.
    """
    _gym_spec(env_id)
    kwargs = dict(env_kwargs or {})
    try:
        env = gym.make(env_id, **kwargs)
    except ImportError as exc:
        raise EvaluationError(
            f"could not import the code of {env_id}: {exc}. Is the env's package installed "
            "(with its extras)?"
        ) from exc
    except (TypeError, ValueError) as exc:
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "no arguments"
        raise EvaluationError(
            f"could not make {env_id} with {shown}: {exc}. "
            f"Run `envgym info {env_id}` to see its arguments."
        ) from exc
    if not isinstance(env.observation_space, spaces.Text) or not isinstance(
        env.action_space, spaces.Text
    ):
        env.close()
        raise EvaluationError(
            f"{env_id} is not a text env (its spaces are {env.observation_space} and "
            f"{env.action_space}); envgym evaluates envs whose observations and actions are text"
        )
    return env


def env_version(env_id: str) -> str:
    """The id's version suffix plus the envgym release, e.g. ``v0+envgym-0.1.0``."""
    match = re.search(r"-(v\d+)$", env_id)
    suffix = match.group(1) if match else "unversioned"
    return f"{suffix}+envgym-{envgym.__version__}"


def _entry_point_module(env_id: str) -> str:
    entry_point = _gym_spec(env_id).entry_point
    if isinstance(entry_point, str):
        return entry_point.split(":", 1)[0]
    module = getattr(entry_point, "__module__", None)
    if not module:
        raise EvaluationError(f"cannot tell which module {env_id}'s entry point comes from")
    return module


def _source_files(module_name: str) -> tuple[Path, list[Path]]:
    """The folder and files whose contents define `module_name`'s env.

    A package means every file under it; a module inside a package means that
    package (an env may use its siblings); a top-level module means its file.
    """
    found = importlib.util.find_spec(module_name)
    if found is None:
        raise EvaluationError(f"module {module_name!r} cannot be found; is it installed?")
    if found.submodule_search_locations:
        roots = [Path(p) for p in found.submodule_search_locations]
    elif "." in module_name:
        return _source_files(module_name.rsplit(".", 1)[0])
    elif found.origin and os.path.isfile(found.origin):
        path = Path(found.origin)
        return path.parent, [path]
    else:
        raise EvaluationError(f"module {module_name!r} has no source files to hash")
    files: list[Path] = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            # Caches and hidden folders are not the env's code.
            dirnames[:] = sorted(
                d for d in dirnames if d != "__pycache__" and not d.startswith(".")
            )
            for name in filenames:
                if name.startswith(".") or name.endswith((".pyc", ".pyo")):
                    continue
                files.append(Path(dirpath) / name)
    return roots[0], files


#: envgym modules whose code decides what every env does with an action.
_SHARED_ENV_SOURCES = ("core.py", "parsing.py", "selfplay.py", "text.py")


def env_hash(env_id: str) -> str:
    """``sha256:<hex>`` over the source files of the env's package and of the
    envgym modules every env's behaviour runs through (the base classes, the
    action parsers, the game-versus-opponent adapter).

    Any change to that code or the env's data files changes it; paths are
    hashed relative to their package, so the hash is the same on every machine.
    """
    module_name = _entry_point_module(env_id)
    root, files = _source_files(module_name)
    digest = hashlib.sha256()
    digest.update(module_name.encode())
    entries = sorted(
        (f.relative_to(root).as_posix() if f.is_relative_to(root) else f.name, f) for f in files
    )
    core_dir = Path(envgym.__file__).parent
    entries += [(f"envgym/{name}", core_dir / name) for name in _SHARED_ENV_SOURCES]
    for rel, path in entries:
        data = path.read_bytes()
        digest.update(b"\0" + rel.encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return "sha256:" + digest.hexdigest()


# ------------------------------------------------------------ statistics
# Two-sided 95% critical values of Student's t for 1 to 30 degrees of freedom.
_T_975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
    2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
    2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
    2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
)  # fmt: skip


def t_critical_95(df: int) -> float:
    """The two-sided 95% critical value of Student's t with `df` degrees of freedom.

    A table up to 30; beyond it the Cornish-Fisher expansion around the normal
    quantile, which is within 0.001 of the exact value there.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T_975):
        return _T_975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_ci95(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t interval for the mean of `values`.

    With fewer than two values, or none that differ, the interval is the mean.
    """
    if not values:
        raise ValueError("mean_ci95 needs at least one value")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    sd = statistics.stdev(values)
    if sd == 0.0 or not math.isfinite(sd):
        return mean, mean, mean
    half = t_critical_95(len(values) - 1) * sd / math.sqrt(len(values))
    return mean, mean - half, mean + half


def wilson_ci95(successes: int, n: int) -> tuple[float, float]:
    """The Wilson score 95% interval for a success rate of `successes` out of `n`."""
    if n < 1:
        raise ValueError("wilson_ci95 needs n >= 1")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    z = statistics.NormalDist().inv_cdf(0.975)
    p = successes / n
    denom = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 or n successes the bound is exactly 0 or 1; rounding would leave 1e-17.
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return low, high


def summarize(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``summary`` block of a results file for these episode records."""
    if not episodes:
        raise ValueError("summarize needs at least one episode")
    returns = [float(ep["return"]) for ep in episodes]
    successes = sum(1 for ep in episodes if ep["success"])
    n = len(episodes)
    mean, low, high = mean_ci95(returns)
    s_low, s_high = wilson_ci95(successes, n)
    return {
        "episodes": n,
        "success_rate": successes / n,
        "mean_return": mean,
        "ci95": [low, high],
        "success_ci95": [s_low, s_high],
        "mean_turns": statistics.fmean(int(ep["turns"]) for ep in episodes),
    }


# ------------------------------------------------------------ output paths
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


# ------------------------------------------------------------- evaluation
def _check_inputs(
    env_id: str,
    agent_name: str,
    episodes: int,
    seed: int,
    env_kwargs: Mapping[str, Any] | None,
) -> None:
    _gym_spec(env_id)
    if agent_name not in AGENT_NAMES:
        raise EvaluationError(
            f"unknown agent {agent_name!r}; choose one of {', '.join(AGENT_NAMES)}"
        )
    if agent_name == "oracle":
        try:
            oracle = get_spec(env_id).oracle
        except KeyError:
            oracle = None
        if oracle is None:
            raise EvaluationError(f"{env_id} has no oracle agent; use --agent random")
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


def agent_seed(episode_seed: int) -> int:
    """The seed an episode's agent gets: derived from the episode seed, never equal to it.

    Gymnasium seeds `env.np_random` exactly as `numpy.random.default_rng(seed)`
    does, so an agent seeded with the env's own seed draws the env's numbers
    (a random guesser would "know" the secret). A spawned child stream of the
    seed is independent of it.
    """
    child = np.random.SeedSequence(entropy=episode_seed, spawn_key=(1,))
    return int(child.generate_state(1, dtype=np.uint32)[0])


def _run_episode(env: gym.Env, agent_name: str, episode_seed: int) -> dict[str, Any]:
    obs, info = env.reset(seed=episode_seed)
    agent = make_agent(agent_name, env, seed=agent_seed(episode_seed))
    agent.reset()
    task_id = info.get("task_id")
    actions: list[str] = []
    rewards: list[float] = []
    terminated = truncated = False
    while not (terminated or truncated):
        if len(actions) >= _MAX_STEPS_PER_EPISODE:
            raise RuntimeError(
                f"episode with seed {episode_seed} did not end after {_MAX_STEPS_PER_EPISODE} "
                "steps; the env's turn limit is broken"
            )
        action = coerce_action(agent.act(obs, info))
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append(action)
        rewards.append(float(reward))
    record: dict[str, Any] = {
        "seed": episode_seed,
        "agent_seed": agent_seed(episode_seed),
        "actions": actions,
        "rewards": rewards,
        "return": float(sum(rewards)),
        "success": bool(info.get("success", False)),
        "turns": len(actions),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
    }
    if isinstance(task_id, str) and task_id:
        record["task_id"] = task_id
    return record


def evaluate(
    env_id: str,
    agent_name: str = "random",
    episodes: int = 10,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    out: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Run `episodes` episodes of `agent_name` on `env_id` and return a results dict.

    Episode ``i`` resets the env with ``seed + i`` and gets a fresh agent
    seeded with `agent_seed` of that seed (recorded as ``agent_seed``).
    `progress(done, total)` is called before the first episode and after each
    one. With `out`, the file is checked to be writable before
    any episode runs and written at the end.

    Raises KeyError for an unknown env id and `EvaluationError` for any other
    bad input, always before the first episode.
    """
    _check_inputs(env_id, agent_name, episodes, seed, env_kwargs)
    out_path = prepare_output_path(out) if out is not None else None
    kwargs = dict(env_kwargs or {})
    hash_ = env_hash(env_id)
    env = make_text_env(env_id, kwargs)
    records: list[dict[str, Any]] = []
    try:
        if progress is not None:
            progress(0, episodes)
        for i in range(episodes):
            records.append(_run_episode(env, agent_name, seed + i))
            if progress is not None:
                progress(i + 1, episodes)
        difficulty = getattr(env.unwrapped, "difficulty", None)
    finally:
        env.close()
    results: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "env_id": env_id,
        "env_version": env_version(env_id),
        "env_hash": hash_,
        "env_kwargs": kwargs,
        "agent": {"name": agent_name},
        "episodes": records,
        "summary": summarize(records),
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if isinstance(difficulty, str):
        results["difficulty"] = difficulty
    if out_path is not None:
        write_results(results, out_path)
    return results


# ------------------------------------------------------------ results files
def load_schema() -> dict[str, Any]:
    """The results file JSON Schema shipped with envgym."""
    resource = importlib.resources.files("envgym") / "schemas" / "results.schema.json"
    return json.loads(resource.read_text(encoding="utf-8"))


def _field_name(path: Iterable[Any]) -> str:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "(the whole file)"


def _schema_problem(results: Any) -> str | None:
    try:
        import jsonschema
    except ImportError:
        return None
    validator = jsonschema.Draft202012Validator(load_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(results))
    if error is None:
        return None
    return f"field {_field_name(error.absolute_path)}: {error.message}"


def _consistency_problem(results: Mapping[str, Any]) -> str | None:
    """Checks a JSON Schema cannot express: lengths and sums that must agree."""
    episodes = results["episodes"]
    for i, ep in enumerate(episodes):
        if len(ep["actions"]) != len(ep["rewards"]):
            return (
                f"field episodes[{i}]: {len(ep['actions'])} actions but "
                f"{len(ep['rewards'])} rewards; there is one reward per action"
            )
        if ep["turns"] != len(ep["actions"]):
            return (
                f"field episodes[{i}].turns is {ep['turns']} but "
                f"{len(ep['actions'])} actions are recorded"
            )
        if not math.isclose(sum(ep["rewards"]), ep["return"], rel_tol=1e-9, abs_tol=1e-9):
            return (
                f"field episodes[{i}].return is {ep['return']} but its rewards "
                f"sum to {sum(ep['rewards'])}"
            )
    if results["summary"]["episodes"] != len(episodes):
        return (
            f"field summary.episodes is {results['summary']['episodes']} but the file holds "
            f"{len(episodes)} episodes"
        )
    return None


_REQUIRED_TOP_LEVEL = (
    "schema_version",
    "env_id",
    "env_version",
    "env_hash",
    "env_kwargs",
    "agent",
    "episodes",
    "summary",
)


def validate_results(results: Any, *, source: str = "results") -> None:
    """Raise `ResultsFileError` naming the first wrong field, if `results` is not valid.

    Uses the JSON Schema when `jsonschema` is installed, plus consistency
    checks (one reward per action, returns that add up) either way.
    """
    if not isinstance(results, dict):
        raise ResultsFileError(
            f"{source}: a results file holds a JSON object, not {type(results).__name__}"
        )
    version = results.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ResultsFileError(
            f"{source}: field schema_version is {version!r}; this envgym "
            f"({envgym.__version__}) reads schema_version {SCHEMA_VERSION}"
        )
    problem = _schema_problem(results)
    if problem is None:
        missing = [key for key in _REQUIRED_TOP_LEVEL if key not in results]
        if missing:
            problem = f"field {missing[0]} is missing"
    if problem is None:
        try:
            problem = _consistency_problem(results)
        except (KeyError, TypeError) as exc:  # only without jsonschema: shape unchecked
            problem = f"malformed episode or summary ({exc!r})"
    if problem is not None:
        raise ResultsFileError(f"{source}: {problem}")


def write_results(results: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Validate `results` and write them as JSON to `path` (atomically); return the path."""
    target = Path(path).expanduser()
    validate_results(dict(results))
    try:
        text = json.dumps(results, indent=2, allow_nan=False) + "\n"
    except ValueError as exc:
        raise ResultsFileError(
            f"results hold a NaN or infinite number, which JSON cannot store: {exc}"
        ) from exc
    folder = prepare_output_dir(target.parent if str(target.parent) else Path("."), flag="--out")
    # Write to a temporary file and rename, so a crash never leaves half a file.
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


def load_results(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a results file; `ResultsFileError` says what is wrong."""
    source = Path(path).expanduser()
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ResultsFileError(f"{source}: no such results file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"{source}: cannot read it ({exc})") from exc
    try:
        results = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from exc
    validate_results(results, source=str(source))
    return results


# ------------------------------------------------------------------ replay
@dataclass
class ReplayResult:
    """One recorded episode replayed from its seed and actions."""

    index: int
    seed: int
    rewards: list[float]
    episode_return: float
    success: bool
    terminated: bool
    truncated: bool
    #: What differs from the record; empty when the replay reproduces it.
    problems: list[str] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return not self.problems


def _same_number(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _replay(env: gym.Env, results: Mapping[str, Any], index: int) -> ReplayResult:
    episodes = results["episodes"]
    if not -len(episodes) <= index < len(episodes):
        raise IndexError(
            f"episode index {index} is out of range; the file holds {len(episodes)} episodes"
        )
    index %= len(episodes)
    record = episodes[index]
    obs, info = env.reset(seed=record["seed"])
    rewards: list[float] = []
    terminated = truncated = False
    problems: list[str] = []
    for turn, action in enumerate(record["actions"], start=1):
        if terminated or truncated:
            problems.append(
                f"the episode ended after {turn - 1} turns but "
                f"{len(record['actions'])} actions are recorded"
            )
            break
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
    success = bool(info.get("success", False))
    recorded = [float(r) for r in record["rewards"]]
    for turn, (got, want) in enumerate(zip(rewards, recorded, strict=False), start=1):
        if not _same_number(got, want):
            problems.append(f"turn {turn}: replayed reward {got!r} but the file records {want!r}")
            break
    if not (terminated or truncated):
        problems.append(
            f"the episode had not ended after the {len(record['actions'])} recorded actions"
        )
    if success != bool(record["success"]):
        problems.append(f"replayed success is {success} but the file records {record['success']}")
    for key, value in (("terminated", terminated), ("truncated", truncated)):
        if key in record and bool(record[key]) != value:
            problems.append(f"replayed {key} is {value} but the file records {record[key]}")
    return ReplayResult(
        index=index,
        seed=record["seed"],
        rewards=rewards,
        episode_return=float(sum(rewards)),
        success=success,
        terminated=bool(terminated),
        truncated=bool(truncated),
        problems=problems,
    )


def replay_episode(results: Mapping[str, Any], index: int) -> ReplayResult:
    """Replay episode `index` of `results` in a fresh env made from the recorded id and kwargs.

    Resets with the recorded seed, steps the recorded actions and compares
    rewards, success and how the episode ended; `ReplayResult.problems` lists
    every difference (empty when the replay matches). The env's code is the
    installed one: compare `results["env_hash"]` with `env_hash(env_id)` to
    know whether it is the code that produced the file.
    """
    env = make_text_env(results["env_id"], results.get("env_kwargs") or {})
    try:
        return _replay(env, results, index)
    finally:
        env.close()


def verify_results(results: Mapping[str, Any]) -> list[ReplayResult]:
    """Replay every episode of `results` in one env; see `replay_episode`."""
    env = make_text_env(results["env_id"], results.get("env_kwargs") or {})
    try:
        return [_replay(env, results, i) for i in range(len(results["episodes"]))]
    finally:
        env.close()
