"""Decide whether a submitted results file can be scored, trusting nothing in it.

`verify_submission` recomputes everything a leaderboard would publish from a
results file: the file must hold at most `MAX_TURNS_PER_FILE` turns; match the
version 2 schema; name an installed env by id, version and code hash; run on
a track (`envgym.evaluation.tracks`: no env argument but the difficulty);
hold exactly the seeds its header asked for, each as many times as its
``trials`` says (trials 0 .. K-1, in a row); keep one reward per reply; carry
the summary `summarize` gives for its episodes (pass^k included); and every episode, replayed in the
installed env from its seed and replies, must give the recorded rewards,
success and ending. The first problem found is the verdict's reason, naming
the episode (index and seed) where it concerns one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envgym.evaluation.identity import env_hash, env_version
from envgym.evaluation.inputs import make_evaluation_env
from envgym.evaluation.replay import replay_in_env
from envgym.evaluation.results_file import SCHEMA_VERSION, schema_problem, trials_problem
from envgym.evaluation.submitted_kwargs import env_kwargs_problem, scoring_kwargs
from envgym.evaluation.summary import summarize
from envgym.evaluation.tracks import track_problem
from envgym.registry import EnvSpec, get_spec

__all__ = ["MAX_TURNS_PER_FILE", "Verdict", "scoring_kwargs", "verify_submission"]

#: Turns (replies, over all episodes) one file may hold. The committed baselines
#: hold at most 1,000 (20 episodes of 50 turns); 1,000 episodes that long are
#: 50,000. The cap bounds what one upload can make the verifier do (the schema
#: check and the replay are linear in the turns); a longer run is split into
#: several files of consecutive seeds.
MAX_TURNS_PER_FILE = 100_000


@dataclass(frozen=True)
class Verdict:
    """Whether a results file can be scored, and if not, the first reason why."""

    accepted: bool
    #: The first problem found, as a sentence that says what is wrong; None when accepted.
    reason: str | None = None
    #: Index in ``episodes`` of the episode the problem concerns, if it concerns one.
    episode: int | None = None
    #: How many episodes were replayed and matched before the verdict.
    checked_episodes: int = 0


class _Rejected(Exception):
    def __init__(self, reason: str, episode: int | None = None, checked: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.episode = episode
        #: Episodes replayed and matched before this problem.
        self.checked = checked


def _episode_name(results: Mapping[str, Any], index: int) -> str:
    return f"episode {index} (seed {results['episodes'][index]['seed']})"


# ------------------------------------------------------------ the env
def _check_env(results: Mapping[str, Any]) -> EnvSpec:
    env_id = results["env_id"]
    try:
        spec = get_spec(env_id)
    except KeyError as exc:
        raise _Rejected(f"env_id: {exc.args[0]}") from exc
    installed_version = env_version(env_id)
    if results["env_version"] != installed_version:
        raise _Rejected(
            f"env_version is {results['env_version']!r} but the installed {env_id} is "
            f"{installed_version!r}; re-run envgym eval with this envgym release"
        )
    try:
        installed_hash = env_hash(env_id)
    except Exception as exc:  # the env's code is missing here: nothing to compare with
        raise _Rejected(f"the code of {env_id} cannot be hashed here: {exc}") from exc
    if results["env_hash"] != installed_hash:
        raise _Rejected(
            f"env_hash is {results['env_hash']} but the installed {env_id}'s code hashes to "
            f"{installed_hash}; the episodes were run on other code (re-run envgym eval with "
            "this envgym release, unmodified)"
        )
    return spec


def _check_env_kwargs(results: Mapping[str, Any], spec: EnvSpec) -> None:
    kwargs: Mapping[str, Any] = results["env_kwargs"]
    problem = env_kwargs_problem(spec.id, kwargs)
    if problem is not None:
        raise _Rejected(problem)
    problem = track_problem(kwargs)
    if problem is not None:  # a setting the env takes, but one the track fixes
        raise _Rejected(f"not a track's run: {problem}")
    difficulty = kwargs.get("difficulty", spec.default_difficulty)
    if difficulty not in spec.difficulties:
        raise _Rejected(
            f"env_kwargs.difficulty is {difficulty!r}; {spec.id} has the levels "
            f"{', '.join(spec.difficulties)}"
        )
    if "difficulty" not in results:
        raise _Rejected(f"field difficulty is missing; the episodes ran at {difficulty!r}")
    if results["difficulty"] != difficulty:
        source = "env_kwargs.difficulty" if "difficulty" in kwargs else "the env's default"
        raise _Rejected(
            f"difficulty is {results['difficulty']!r} but the env was made at {difficulty!r} "
            f"({source}); the header's difficulty must be the one the episodes ran at"
        )


# ------------------------------------------------------------ the episodes
def _check_seeds(results: Mapping[str, Any]) -> None:
    """Exactly the seeds asked for, in order, each run `trials` times in a row:
    episode i is seed ``seed + i // trials``, trial ``i % trials``."""
    base, count = results["seed"], results["num_episodes"]
    trials = results.get("trials", 1)
    episodes = results["episodes"]
    if trials > 1 or any("trial" in episode for episode in episodes):
        problem = trials_problem(results)
        if problem is not None:  # a repeated, missing or mis-numbered trial
            raise _Rejected(*problem)
    first_index: dict[tuple[int, int], int] = {}
    for i, episode in enumerate(episodes):
        seed, trial = episode["seed"], episode.get("trial", 0)
        if (seed, trial) in first_index:  # a run of one trial (trials_problem checks the rest)
            raise _Rejected(
                f"{_episode_name(results, i)} repeats episode {first_index[seed, trial]}'s "
                "seed; each seed runs once",
                i,
            )
        first_index[seed, trial] = i
        if i >= count * trials:
            each = f" x trials = {trials}" if trials > 1 else ""
            raise _Rejected(
                f"{_episode_name(results, i)} is one more than num_episodes = {count}{each}", i
            )
        want_seed, want_trial = base + i // trials, i % trials
        if seed != want_seed:
            missing = f"; seed {want_seed} is missing" if seed > want_seed else ""
            raise _Rejected(
                f"{_episode_name(results, i)} should have seed {want_seed}: the run's seeds are "
                f"seed .. seed + num_episodes - 1 = {base} .. {base + count - 1}, "
                f"in order{missing}",
                i,
            )
        if trial != want_trial:
            raise _Rejected(
                f"{_episode_name(results, i)} is trial {trial} but should be trial "
                f"{want_trial}: each seed's trials 0 .. {trials - 1} come in a row, in order",
                i,
            )
    if len(episodes) < count * trials:
        held = len(episodes) // trials
        raise _Rejected(
            f"the file holds {held} seeds' episodes but num_episodes is {count}; seeds "
            f"{base + held} .. {base + count - 1} are missing"
        )


def _check_episodes(results: Mapping[str, Any]) -> None:
    for i, episode in enumerate(results["episodes"]):
        replies, rewards = len(episode["actions"]), len(episode["rewards"])
        if replies == 0:
            raise _Rejected(
                f"{_episode_name(results, i)} has no replies; every episode takes at least "
                "one turn",
                i,
            )
        if rewards != replies:
            raise _Rejected(
                f"{_episode_name(results, i)} has {replies} replies but {rewards} rewards; "
                "there is one reward per reply",
                i,
            )
        if episode["turns"] != replies:
            raise _Rejected(
                f"{_episode_name(results, i)} says turns = {episode['turns']} but holds "
                f"{replies} replies",
                i,
            )
        total = math.fsum(episode["rewards"])
        if not math.isclose(episode["return"], total, rel_tol=1e-9, abs_tol=1e-9):
            raise _Rejected(
                f"{_episode_name(results, i)} says return = {episode['return']} but its "
                f"rewards sum to {total}",
                i,
            )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):  # pass_k: the same k's, each the same
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_same(a[k], b[k]) for k in a)
        )
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _check_summary(results: Mapping[str, Any]) -> None:
    claimed: Mapping[str, Any] = results["summary"]
    recomputed = summarize(results["episodes"])
    for key, value in claimed.items():
        if key not in recomputed:
            raise _Rejected(
                f"summary.{key} is not a figure envgym computes, so it cannot be checked; "
                f"remove it (the summary holds {', '.join(recomputed)})"
            )
        if not _same(value, recomputed[key]):
            raise _Rejected(
                f"summary.{key} is {value} but the episodes give {recomputed[key]}; "
                "the summary must be what summarize() computes from them"
            )


def _check_replays(results: Mapping[str, Any]) -> int:
    """Replay every episode in one env; return how many matched (all, if none raised)."""
    env_id = results["env_id"]
    try:
        env = make_evaluation_env(env_id, results["env_kwargs"])
    except Exception as exc:
        raise _Rejected(f"{env_id} cannot be made here to replay the episodes: {exc}") from exc
    try:
        made_at = getattr(env.unwrapped, "difficulty", None)
        if isinstance(made_at, str) and made_at != results["difficulty"]:
            raise _Rejected(
                f"difficulty is {results['difficulty']!r} but {env_id} made with env_kwargs "
                f"runs at {made_at!r}"
            )
        for i, episode in enumerate(results["episodes"]):
            replay = replay_in_env(env, episode, index=i)
            if replay.error is not None:  # a reply the env cannot take is the file's problem
                raise _Rejected(
                    f"{_episode_name(results, i)}: replaying it failed ({replay.error})",
                    i,
                    checked=i,
                )
            if replay.problems:
                raise _Rejected(
                    f"{_episode_name(results, i)} does not replay: {replay.problems[0]}",
                    i,
                    checked=i,
                )
    finally:
        env.close()
    return len(results["episodes"])


# ------------------------------------------------------------ the size
def _turn_count(results: Any) -> int:
    """The replies in `results`, over all episodes; parts not shaped like a results
    file count nothing (the schema check names them)."""
    episodes = results.get("episodes") if isinstance(results, Mapping) else None
    if not isinstance(episodes, list):
        return 0
    return sum(
        len(episode["actions"])
        for episode in episodes
        if isinstance(episode, Mapping) and isinstance(episode.get("actions"), list)
    )


def _size_problem(results: Any) -> str | None:
    turns = _turn_count(results)
    if turns <= MAX_TURNS_PER_FILE:
        return None
    return (
        f"the file holds {turns:,} turns, more than the {MAX_TURNS_PER_FILE:,} one file may "
        "hold; split the run into several files of consecutive seeds (envgym eval --seed S "
        "--episodes N for each part) and submit each"
    )


# ------------------------------------------------------------ the verdict
def verify_submission(results: Any) -> Verdict:
    """Check a parsed results file against the installed envs; the first problem rejects it.

    In order: the size (at most `MAX_TURNS_PER_FILE` turns, counted before
    anything else reads the episodes); the version 2 schema; the env's id,
    version and hash; the env_kwargs (no backend, URL, path or argument outside
    `scoring_kwargs`, then nothing but the difficulty: a track's run) and the
    header's difficulty; the seeds (exactly
    ``seed .. seed + num_episodes - 1``, in order); one reward per reply in
    every episode; the summary; and a replay of every episode. A pure function
    of `results` and the installed code, safe to run in a worker process.
    """
    if isinstance(results, Mapping) and results.get("schema_version") == 1:
        return Verdict(
            accepted=False,
            reason=(
                "schema_version is 1: the file does not record the seed and episode count "
                "asked for; re-run envgym eval with this envgym to write a version 2 file"
            ),
        )
    problem = _size_problem(results)
    if problem is None:
        problem = schema_problem(results, (SCHEMA_VERSION,))
    if problem is not None:
        return Verdict(accepted=False, reason=problem)
    try:
        spec = _check_env(results)
        _check_env_kwargs(results, spec)
        _check_seeds(results)
        _check_episodes(results)
        _check_summary(results)
        checked = _check_replays(results)
    except _Rejected as rejected:
        return Verdict(
            accepted=False,
            reason=rejected.reason,
            episode=rejected.episode,
            checked_episodes=rejected.checked,
        )
    return Verdict(accepted=True, checked_episodes=checked)
