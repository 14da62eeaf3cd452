"""The results file: its JSON Schema, and reading, checking and writing one.

A results file (JSON, ``schema_version`` 2, schema in
``envgym/schemas/results.schema.json``) records the base seed and episode
count asked for, every episode's seed and the agent's raw replies, so anyone
can replay it. A file is valid when it matches the schema (checked with
jsonschema) and its fields agree with each other (one reward per action,
returns that add up), which a schema cannot say. Version 1 files (written
before the header named the seed and episode count) still load, for replay;
`envgym.evaluation.verify` refuses them for scoring.

Trials. A run of ``trials`` K > 1 (``envgym eval --trials K``) holds each seed
K times: every episode carries its ``trial`` (0 .. K-1), each (seed, trial)
once, and the summary holds ``pass_k``. A file without ``trials`` (every file
written before them) is a run of one trial, and an episode without ``trial``
is trial 0; `trials_problem` checks the numbering.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envgym.evaluation.inputs import prepare_output_dir
from envgym.version import __version__

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "READABLE_VERSIONS",
    "SCHEMA_VERSION",
    "ResultsFileError",
    "load_results",
    "load_schema",
    "results_file_name",
    "schema_problem",
    "trials_problem",
    "validate_results",
    "write_results",
]

SCHEMA_VERSION = 2
#: The versions `load_results` reads; only `SCHEMA_VERSION` is written.
READABLE_VERSIONS = (1, 2)
#: What version 2 added to the header; a version 1 file has neither.
_ADDED_IN_2 = ("seed", "num_episodes")


class ResultsFileError(ValueError):
    """A results file that cannot be read or does not match the schema."""


def load_schema() -> dict[str, Any]:
    """The results file JSON Schema shipped with envgym."""
    resource = importlib.resources.files("envgym") / "schemas" / "results.schema.json"
    return json.loads(resource.read_text(encoding="utf-8"))


def _schema_for(version: int) -> dict[str, Any]:
    """The schema of file format `version`: the shipped one, or version 1 derived from it.

    Version 1 is version 2 without the header's seed and episode count and the
    success interval in the summary; deriving it keeps one schema to maintain.
    """
    schema = load_schema()
    if version == SCHEMA_VERSION:
        return schema
    schema["$id"] = f"urn:envgym:schema:results:{version}"
    schema["properties"]["schema_version"]["const"] = version
    schema["required"] = [key for key in schema["required"] if key not in _ADDED_IN_2]
    summary = schema["properties"]["summary"]
    summary["required"] = [key for key in summary["required"] if key != "success_ci95"]
    return schema


@functools.cache
def _validator(version: int = SCHEMA_VERSION) -> jsonschema.Draft202012Validator:
    # Imported on first use: jsonschema takes a sizeable part of a second to
    # import, and most CLI commands that import this package never read a file.
    import jsonschema

    return jsonschema.Draft202012Validator(_schema_for(version))


# ------------------------------------------------------- describing errors
def _field_name(path: list[Any]) -> str:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name


def _json_kind(value: Any) -> str:
    """What `value` is, in JSON's words: "an array", "a string", "null"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _error_field(error: jsonschema.ValidationError) -> list[Any]:
    """The path of the field `error` is about; for a missing field, the missing one."""
    path = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [key for key in error.validator_value if key not in error.instance]
        path.append(missing[0])
    return path


def _describe(error: jsonschema.ValidationError, versions: tuple[int, ...]) -> str:
    """One schema error as a sentence that names the field and says what is wrong."""
    path = _error_field(error)
    name = _field_name(path)
    if error.validator == "required":
        return f"field {name} is missing"
    if path == ["schema_version"]:
        also = [v for v in versions if v != SCHEMA_VERSION]
        older = f" (and {', '.join(map(str, also))}, for replay)" if also else ""
        return (
            f"field schema_version is {error.instance!r}; this envgym ({__version__}) "
            f"reads schema_version {SCHEMA_VERSION}{older}"
        )
    if not path and error.validator == "type":
        return f"a results file holds a JSON object, not {_json_kind(error.instance)}"
    return f"field {name or '(the whole file)'}: {error.message}"


def schema_problem(results: Any, versions: tuple[int, ...] = READABLE_VERSIONS) -> str | None:
    """What is wrong with `results` against the schema of its version (one of `versions`),
    as a sentence naming the field; None when it matches."""
    from jsonschema.exceptions import best_match

    version = results.get("schema_version") if isinstance(results, dict) else None
    if isinstance(version, bool) or version not in versions:
        version = SCHEMA_VERSION  # its schema_version error explains the rest
    validator = _validator(version)
    errors = list(validator.iter_errors(results))
    if not errors:
        return None
    # A file in another format version breaks many rules; its version explains them all.
    version_errors = [e for e in errors if _error_field(e) == ["schema_version"]]
    return _describe(version_errors[0] if version_errors else best_match(errors), versions)


def trials_problem(results: Mapping[str, Any]) -> tuple[str, int | None] | None:
    """What is wrong with the trial numbering of a schema-valid `results`, and the
    index of the episode it concerns (None when it concerns no one episode); None
    when each seed holds exactly trials 0 .. ``trials`` - 1, once each."""
    trials = results.get("trials", 1)
    seen: dict[tuple[int, int], int] = {}
    per_seed: dict[int, list[int]] = {}
    for i, ep in enumerate(results["episodes"]):
        if trials > 1 and "trial" not in ep:
            return (
                f"field episodes[{i}].trial is missing; in a run of trials = {trials} every "
                "episode says which trial of its seed it is",
                i,
            )
        seed, trial = ep["seed"], ep.get("trial", 0)
        if trial >= trials:
            return (
                f"field episodes[{i}].trial is {trial} but the header's trials is {trials}; "
                f"the trials of a seed are numbered 0 .. {trials - 1}",
                i,
            )
        if (seed, trial) in seen:
            return (
                f"field episodes[{i}] repeats seed {seed} trial {trial} of "
                f"episodes[{seen[seed, trial]}]; each trial of a seed runs once",
                i,
            )
        seen[seed, trial] = i
        per_seed.setdefault(seed, []).append(trial)
    for seed, numbers in per_seed.items():
        if len(numbers) != trials:
            missing = sorted(set(range(trials)) - set(numbers))
            return (
                f"seed {seed} has {len(numbers)} trials but the header's trials is {trials}; "
                f"trial {', '.join(map(str, missing))} of seed {seed} is missing",
                None,
            )
    if trials > 1 and "pass_k" not in results["summary"]:
        return (f"field summary.pass_k is missing; a run of trials = {trials} reports it", None)
    return None


def _consistency_problem(results: Mapping[str, Any]) -> str | None:
    """Checks a JSON Schema cannot express: lengths and sums that must agree, and
    each seed's trials."""
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
    problem = trials_problem(results)
    return None if problem is None else problem[0]


# ------------------------------------------------------------ the file
def validate_results(
    results: Any,
    *,
    source: str = "results",
    versions: tuple[int, ...] = READABLE_VERSIONS,
) -> None:
    """Raise `ResultsFileError` naming the first wrong field, if `results` is not valid.

    The JSON Schema of the file's version (one of `versions`) decides the
    shape; then the fields must agree with each other (one reward per action,
    returns that add up, the episode count).
    """
    problem = schema_problem(results, versions) or _consistency_problem(results)
    if problem is not None:
        raise ResultsFileError(f"{source}: {problem}")


def results_file_name(env_id: str, difficulty: str | None, agent: str) -> str:
    """The one name a run's results file gets in a folder of them (``envgym eval
    --out-dir``, ``envgym baselines``, the committed baselines):
    ``envgym/Sokoban-v0``, hard, oracle -> ``Sokoban-v0_hard_oracle.json``. The
    stem is the run's entry id on the leaderboard's pages; an agent spec such as
    ``openai:URL#MODEL`` keeps only letters, digits, dots and dashes."""
    agent_part = re.sub(r"[^A-Za-z0-9.-]+", "_", agent).strip("_") or "agent"
    return f"{env_id.rsplit('/', 1)[-1]}_{difficulty or 'default'}_{agent_part}.json"


def write_results(results: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Validate `results` as a version 2 file and write them as JSON to `path`
    (atomically); return the path."""
    target = Path(path).expanduser()
    validate_results(dict(results), versions=(SCHEMA_VERSION,))
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
    """Read and validate a results file (version 2, or 1 for replay); `ResultsFileError`
    says what is wrong."""
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
