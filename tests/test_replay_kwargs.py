"""A submitted file's env_kwargs meet one check wherever the file is replayed.

The verifier (`verify_submission`) and the trajectory pages (the worker's stored
views, `episode_views`, and a page's own replay, `replay_observations`) make the
env a file names, with the file's kwargs, on the server's machine. Each attack
below is a real results file relabelled with hostile kwargs; both paths must
refuse it, for the same reason, before any env is made. And both paths replay
with the same loop (`replay_in_env`), so what a page shows is what was verified.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from envgym.evaluation import (
    env_hash,
    env_kwargs_problem,
    env_version,
    evaluate,
    make_text_env,
    replay_in_env,
    verify_submission,
)
from envgym.leaderboard.trajectory import replay_observations
from envgym.leaderboard.views import episode_views

SOKOBAN = "envgym/Sokoban-v0"
SHOP = "envgym/Shop-v0"


@pytest.fixture(scope="module")
def sokoban() -> dict[str, Any]:
    """Two oracle episodes on easy Sokoban, seeds 0..1."""
    return evaluate(SOKOBAN, "oracle", episodes=2, seed=0)


def relabelled(results: dict[str, Any], env_id: str, env_kwargs: Any) -> dict[str, Any]:
    """`results` as a run of `env_id` with `env_kwargs`, carrying that env's own
    version and hash, so the kwargs are the first thing a check can object to."""
    forged = copy.deepcopy(results)
    forged.update(env_id=env_id, env_version=env_version(env_id), env_hash=env_hash(env_id))
    forged["env_kwargs"] = env_kwargs
    return forged


ATTACKS = [
    pytest.param(SHOP, {"observation": "C:\\Windows\\win.ini"}, "is a path", id="drive-backslash"),
    pytest.param(SHOP, {"observation": "c:/Users/x/.ssh/id_rsa"}, "is a path", id="drive-slash"),
    pytest.param(SHOP, {"observation": "\\\\fileserver\\share\\x"}, "is a path", id="unc"),
    pytest.param(SHOP, {"observation": "/etc/passwd"}, "is a path", id="posix-path"),
    pytest.param("envgym/Search-v0", {"corpus": "~/corpus.jsonl"}, "is a path", id="home"),
    pytest.param(
        "envgym/Search-v0", {"retriever_url": "http://127.0.0.1:8000"}, "is a URL", id="url"
    ),
    pytest.param(SOKOBAN, {"backend": "docker"}, "env_kwargs.backend is set", id="backend"),
    pytest.param(
        SOKOBAN, {"render_mode": "ansi"}, "render_mode is not an argument", id="off-the-list"
    ),
    pytest.param(
        "envgym/Household-v0", {"task_types": ["clean"]}, "is not a JSON scalar", id="list"
    ),
]


@pytest.mark.parametrize(("env_id", "env_kwargs", "expected"), ATTACKS)
def test_hostile_env_kwargs_are_refused_by_the_verifier_and_the_pages(
    sokoban: dict[str, Any], env_id: str, env_kwargs: dict[str, Any], expected: str
) -> None:
    forged = relabelled(sokoban, env_id, env_kwargs)
    assert expected in (env_kwargs_problem(env_id, env_kwargs) or "")
    verdict = verify_submission(forged)
    assert not verdict.accepted and expected in (verdict.reason or "")
    assert verdict.checked_episodes == 0
    # The page's own replay (the static export, the committed baselines) ...
    seen = replay_observations(forged, forged["episodes"][0])
    assert seen.observations == [] and seen.rewards == []
    assert seen.note is not None and seen.note.startswith("not replayed:")
    assert expected in seen.note
    # ... and what a verification worker stores for the server's pages.
    for view in episode_views(forged):
        stored = json.loads(view or "{}")
        assert stored["observations"] == [] and expected in stored["note"]


def test_env_kwargs_that_are_not_an_object_are_not_replayed(sokoban: dict[str, Any]) -> None:
    seen = replay_observations({"env_id": SOKOBAN, "env_kwargs": ["easy"]}, sokoban["episodes"][0])
    assert seen.observations == [] and "not an object" in (seen.note or "")


def test_the_pages_show_what_the_verifier_replayed(sokoban: dict[str, Any]) -> None:
    """Allowed kwargs: the file verifies, and the page's observations are the
    env's own, from the same loop, with the recorded rewards."""
    assert verify_submission(sokoban).accepted
    episode = sokoban["episodes"][1]
    seen = replay_observations(sokoban, episode)
    assert seen.note is None and seen.rewards == episode["rewards"]
    env = make_text_env(SOKOBAN, sokoban["env_kwargs"])
    try:
        obs, info = env.reset(seed=episode["seed"])
        assert seen.observations[0] == obs and seen.system_prompt == info.get("system_prompt")
        replay = replay_in_env(env, episode, observations=True)
    finally:
        env.close()
    assert replay.matches and replay.observations == seen.observations
    assert len(seen.observations) == len(episode["actions"]) + 1


def test_a_replay_the_env_refuses_is_a_problem_not_a_crash(sokoban: dict[str, Any]) -> None:
    """An env that raises (here on a negative seed) stops the replay: the verifier
    and the pages both say so, neither raises."""
    episode = {**sokoban["episodes"][0], "seed": -1}
    env = make_text_env(SOKOBAN, {})
    try:
        replay = replay_in_env(env, episode)
    finally:
        env.close()
    assert replay.error is not None and not replay.matches
    assert replay.problems[0].startswith("replaying it failed")
    seen = replay_observations(sokoban, episode)
    assert seen.observations == [] and (seen.note or "").startswith("the replay stopped:")
