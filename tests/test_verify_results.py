"""verify_submission: a results file is scored only if every figure in it can be recomputed.

Valid files come from `evaluate` on real envs (Sokoban, GuessNumber, FrozenLake);
each forgery is a copy with one thing changed, and most keep the rest
consistent (the summary recomputed, the return summed) so that it is the check
being tested, not an easier one, that catches it.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from envgym.evaluation import (
    Verdict,
    env_hash,
    env_version,
    evaluate,
    load_results,
    scoring_kwargs,
    summarize,
    verify_results,
    verify_submission,
    write_results,
)

SOKOBAN = "envgym/Sokoban-v0"
GUESS = "envgym/GuessNumber-v0"


@pytest.fixture(scope="module")
def sokoban() -> dict[str, Any]:
    """Three oracle episodes on easy Sokoban, seeds 0..2: all solved."""
    results = evaluate(SOKOBAN, "oracle", episodes=3, seed=0)
    assert all(ep["success"] for ep in results["episodes"])
    return results


@pytest.fixture(scope="module")
def guess() -> dict[str, Any]:
    """Three random-agent episodes on GuessNumber, seeds 10..12."""
    return evaluate(GUESS, "random", episodes=3, seed=10, env_kwargs={"difficulty": "medium"})


def forge(
    results: dict[str, Any], change: Callable[[dict[str, Any]], Any], *, resummarize: bool = True
) -> dict[str, Any]:
    """A copy of `results` with `change` applied; by default its summary is made to agree
    with its episodes again, as a careful forger would."""
    forged = copy.deepcopy(results)
    change(forged)
    if resummarize:
        forged["summary"] = summarize(forged["episodes"])
    return forged


def rejected(results: Any) -> Verdict:
    verdict = verify_submission(results)
    assert not verdict.accepted, "a forged file was accepted"
    assert verdict.reason
    return verdict


# ------------------------------------------------------------ valid files
@pytest.mark.parametrize("name", ["sokoban", "guess"])
def test_a_file_from_evaluate_is_accepted_after_a_round_trip(name, request, tmp_path):
    results = request.getfixturevalue(name)
    assert results["schema_version"] == 2
    assert (results["seed"], results["num_episodes"]) == (results["episodes"][0]["seed"], 3)
    loaded = load_results(write_results(results, tmp_path / "results.json"))
    verdict = verify_submission(loaded)
    assert verdict == Verdict(accepted=True, reason=None, episode=None, checked_episodes=3)
    # The leaderboard runs it in worker processes: the verdict must travel.
    assert pickle.loads(pickle.dumps(verdict)) == verdict


@pytest.mark.parametrize(
    ("env_id", "trivial"),
    [
        ("envgym/FrozenLake-v0", {"difficulty": "hard", "size": 2, "hole_fraction": 0.0}),
        ("envgym/FrozenLake-v0", {"difficulty": "medium", "slippery": True}),
        ("envgym/Household-v0", {"difficulty": "hard", "max_turns": 100_000}),
        ("envgym/TicTacToe-v0", {"difficulty": "hard", "opponent": "random"}),
        ("envgym/Search-v0", {"difficulty": "hard", "hops": 1, "num_docs": 200}),
    ],
)
def test_settings_that_change_the_task_keep_a_run_off_its_track(env_id, trivial):
    """The settings that made a level trivial and kept its name: the verifier and
    the board's upload check refuse each, both saying the track fixes them."""
    from fastapi import HTTPException

    from envgym.leaderboard.edge import parse_upload

    results = evaluate(env_id, "random", episodes=1, seed=3, env_kwargs=trivial)
    verdict = verify_submission(results)
    assert not verdict.accepted and "a ranked run sets only the difficulty" in verdict.reason
    with pytest.raises(HTTPException) as refused:
        parse_upload(json.dumps(results).encode())
    assert refused.value.status_code == 400
    assert "a ranked run sets only the difficulty" in refused.value.detail


def test_the_board_and_the_verifier_agree_on_every_level_of_every_env():
    """Both ways: a run that sets only a difficulty (and a game's seat) passes
    the board's upload check for every level of every env (the committed
    baselines pass the verifier: tests/test_leaderboard_page.py), and every
    other argument the allow-list names is refused by both."""
    from fastapi import HTTPException

    from envgym.evaluation.tracks import TRACK_SETTINGS
    from envgym.leaderboard.edge import parse_upload
    from envgym.registry import list_envs

    base = evaluate(GUESS, "random", episodes=1, seed=0)
    for spec in list_envs():
        for level in spec.difficulties:
            header = {**base, "env_id": spec.id, "env_kwargs": {"difficulty": level}}
            assert parse_upload(json.dumps(header).encode()).env_id == spec.id
        for name in scoring_kwargs(spec.id):
            header = {**base, "env_id": spec.id, "env_kwargs": {name: 1}}
            if name == "difficulty":
                continue
            if name in TRACK_SETTINGS:  # a game's seat: a track of its own, on both sides
                assert parse_upload(json.dumps(header).encode()).env_kwargs == {name: 1}
                verdict = verify_submission(as_env(base, spec.id, **{name: 1}))
                assert f"sets {name};" not in str(verdict.reason)
                continue
            with pytest.raises(HTTPException):
                parse_upload(json.dumps(header).encode())
            verdict = verify_submission(as_env(base, spec.id, **{name: 1}))
            assert not verdict.accepted and f"sets {name};" in verdict.reason, verdict


def test_usage_and_model_are_allowed(guess):
    def add(r):
        r["agent"]["model"] = "my-model"
        for ep in r["episodes"]:
            ep["usage"] = {"prompt_tokens": 120, "completion_tokens": 7}

    assert verify_submission(forge(guess, add)).accepted


# ------------------------------------------------------------ the replay
def test_one_altered_reward_is_rejected(sokoban):
    def change(r):
        ep = r["episodes"][1]
        ep["rewards"][0] += 0.5
        ep["return"] = sum(ep["rewards"])

    verdict = rejected(forge(sokoban, change))
    assert verdict.episode == 1
    assert verdict.checked_episodes == 1
    assert "episode 1 (seed 1)" in verdict.reason
    assert "turn 1: replayed reward" in verdict.reason


def test_a_changed_reply_is_rejected(sokoban):
    # The winning move replaced by a reply that is no move at all.
    forged = forge(sokoban, lambda r: r["episodes"][2]["actions"].__setitem__(-1, "I give up"))
    verdict = rejected(forged)
    assert verdict.episode == 2
    assert "episode 2 (seed 2) does not replay" in verdict.reason
    assert "replayed reward" in verdict.reason


def test_flipped_success_is_rejected(guess):
    forged = forge(guess, lambda r: r["episodes"][0].__setitem__("success", True))
    if guess["episodes"][0]["success"]:
        forged = forge(guess, lambda r: r["episodes"][0].__setitem__("success", False))
    verdict = rejected(forged)
    assert verdict.episode == 0
    assert "episode 0 (seed 10)" in verdict.reason
    assert "success" in verdict.reason


# ------------------------------------------------------------ seeds
def test_one_episode_copied_three_times_is_rejected(guess):
    def copy_first(r):
        r["episodes"] = [copy.deepcopy(r["episodes"][0]) for _ in range(3)]

    verdict = rejected(forge(guess, copy_first))
    assert verdict.episode == 1
    assert "episode 1 (seed 10) repeats episode 0's seed" in verdict.reason


def test_a_missing_seed_is_rejected(guess):
    verdict = rejected(forge(guess, lambda r: r["episodes"].pop(1)))
    assert "seed 11 is missing" in verdict.reason
    assert verdict.episode == 1

    # Dropping the last one and claiming fewer episodes than the header asked for.
    verdict = rejected(forge(guess, lambda r: r["episodes"].pop()))
    assert "num_episodes is 3" in verdict.reason
    assert "seeds 12 .. 12 are missing" in verdict.reason


def test_more_episodes_than_asked_for_are_rejected(guess):
    def add_one(r):
        extra = copy.deepcopy(r["episodes"][-1])
        extra["seed"] = 13
        r["episodes"].append(extra)

    verdict = rejected(forge(guess, add_one))
    assert "one more than num_episodes = 3" in verdict.reason


# ------------------------------------------------------------ episodes and summary
def test_empty_rewards_are_rejected(sokoban):
    no_rewards = forge(sokoban, lambda r: r["episodes"][0].__setitem__("rewards", []))
    assert "one reward per reply" in rejected(no_rewards).reason

    def empty(r):
        r["episodes"][0].update(actions=[], rewards=[], turns=0, success=False)
        r["episodes"][0]["return"] = 0.0

    verdict = rejected(forge(sokoban, empty))
    assert verdict.episode == 0
    assert "episode 0 (seed 0) has no replies" in verdict.reason


def test_a_summary_that_differs_from_the_episodes_is_rejected(guess):
    def boast(r):
        r["summary"]["success_rate"] = 1.0
        r["summary"]["mean_return"] = 99.0

    verdict = rejected(forge(guess, boast, resummarize=False))
    assert "summary.success_rate is 1.0 but the episodes give" in verdict.reason

    def inflate(r):
        r["summary"]["mean_return"] = 99.0

    inflated = forge(guess, inflate, resummarize=False)
    assert "summary.mean_return is 99.0" in rejected(inflated).reason

    wide = forge(guess, lambda r: r["summary"].__setitem__("ci95", [-5.0, 5.0]), resummarize=False)
    assert "summary.ci95" in rejected(wide).reason

    made_up = forge(guess, lambda r: r["summary"].__setitem__("elo", 3000), resummarize=False)
    assert "summary.elo is not a figure envgym computes" in rejected(made_up).reason


# ------------------------------------------------------------ the env
def test_a_wrong_env_hash_or_version_is_rejected(sokoban):
    made_up = forge(sokoban, lambda r: r.__setitem__("env_hash", "sha256:" + "ab" * 32))
    assert "env_hash is sha256:abab" in rejected(made_up).reason

    old = forge(sokoban, lambda r: r.__setitem__("env_version", "v0+envgym-0.0.1"))
    assert "env_version is 'v0+envgym-0.0.1'" in rejected(old).reason

    unknown = forge(sokoban, lambda r: r.__setitem__("env_id", "envgym/Sokoban-v9"))
    assert "envgym/Sokoban-v9" in rejected(unknown).reason


def as_env(results: dict[str, Any], env_id: str, **env_kwargs: Any) -> dict[str, Any]:
    """`results` relabelled as a run of `env_id` with `env_kwargs`, with that env's own
    version and hash, so the env_kwargs check is the first to see a problem."""

    def relabel(r):
        r.update(env_id=env_id, env_version=env_version(env_id), env_hash=env_hash(env_id))
        r["env_kwargs"] = env_kwargs

    return forge(results, relabel, resummarize=False)


@pytest.mark.parametrize(
    ("env_id", "env_kwargs", "expected"),
    [
        (SOKOBAN, {"backend": "docker"}, "env_kwargs.backend is set"),
        ("envgym/Search-v0", {"retriever_url": "http://127.0.0.1:8000"}, "is a URL"),
        ("envgym/Search-v0", {"cache_dir": "/var/lib/envgym"}, "is a path"),
        ("envgym/Search-v0", {"corpus": "~/corpus.jsonl"}, "is a path"),
        ("envgym/Shop-v0", {"observation": "/etc/passwd"}, "is a path"),
        ("envgym/Search-v0", {"retriever": "bm25"}, "env_kwargs.retriever is not an argument"),
        (SOKOBAN, {"render_mode": "ansi"}, "env_kwargs.render_mode is not an argument"),
        ("envgym/Household-v0", {"task_types": ["clean"]}, "is not a JSON scalar"),
    ],
)
def test_env_kwargs_off_the_scoring_list_are_rejected(sokoban, env_id, env_kwargs, expected):
    verdict = rejected(as_env(sokoban, env_id, **env_kwargs))
    assert expected in verdict.reason
    assert verdict.episode is None


def test_the_scoring_list_holds_settings_never_services():
    search = scoring_kwargs("envgym/Search-v0")
    assert {"difficulty", "hops", "num_docs", "world_seed", "distractors", "top_k"} <= set(search)
    assert not {"retriever", "retriever_url", "retriever_uds", "cache_dir", "corpus"} & set(search)
    shop = scoring_kwargs("envgym/Shop-v0")
    assert {"num_products", "catalogue_seed", "observation"} <= set(shop)
    assert "data_dir" not in scoring_kwargs("envgym/WebShop-v0")


def test_a_difficulty_differing_from_env_kwargs_is_rejected(sokoban, guess):
    verdict = rejected(forge(guess, lambda r: r.__setitem__("difficulty", "hard")))
    assert "difficulty is 'hard' but the env was made at 'medium'" in verdict.reason

    # Sokoban ran at its default level (easy) with no env_kwargs.
    verdict = rejected(forge(sokoban, lambda r: r.__setitem__("difficulty", "hard")))
    assert "made at 'easy' (the env's default)" in verdict.reason


# ------------------------------------------------------------ the file
def test_a_version_1_file_still_replays_but_is_not_scored(sokoban, tmp_path):
    def to_v1(r):
        r["schema_version"] = 1
        del r["seed"], r["num_episodes"]

    v1 = forge(sokoban, to_v1, resummarize=False)
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(v1))
    loaded = load_results(path)
    assert all(replay.matches for replay in verify_results(loaded))
    assert "re-run envgym eval with this envgym to write a version 2 file" in rejected(v1).reason


def test_a_file_that_breaks_the_schema_is_rejected_naming_the_field(sokoban):
    assert "field seed is missing" in rejected(forge(sokoban, lambda r: r.pop("seed"))).reason
    assert "a JSON object, not an array" in rejected([sokoban]).reason
    negative = forge(sokoban, lambda r: r.__setitem__("num_episodes", 0), resummarize=False)
    assert "num_episodes" in rejected(negative).reason
