"""Terminal-v0's ``make`` family (envs/terminal/families/makefile.py): each
planted bug alone is caught by the rebuild check, a dist/ written by hand
next to the broken Makefile fails it, and, played through envgym/Terminal-v0
in sandbox sessions, the oracle solves git and make tasks while the random
agent scores nothing."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import tarfile

import gymnasium as gym
import pytest
from sandbox_backends import require_backend
from terminal_play import play_episode, play_solution, play_untouched

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent
from envgym.envs.terminal.families import makefile
from envgym.envs.terminal.families.makefile import BUGS, MAKEFILE, make_task
from envgym.envs.terminal.grade import run_checks, starting_tree
from envgym.sandbox import open_sandbox


@pytest.fixture(scope="module")
def box():
    require_backend("bwrap")
    with open_sandbox(backend="bwrap") as sandbox:
        yield sandbox


def test_each_planted_bug_alone_fails_the_rebuild(box):
    task = make_task(0, "easy")
    rebuild = [c for c in task.checks if c.name == "rebuilds_incrementally"]
    fixed = dataclasses.replace(task, files={**task.files, "Makefile": MAKEFILE})
    assert run_checks(box, starting_tree(fixed), rebuild)[0].passed
    for right, wrong in BUGS:
        broken = dataclasses.replace(
            task, files={**task.files, "Makefile": MAKEFILE.replace(right, wrong)}
        )
        (result,) = run_checks(box, starting_tree(broken), rebuild)
        assert not result.passed, f"the bug {wrong!r} goes unnoticed"


def test_a_dist_written_by_hand_fails(box):
    # The right dist/ (as the oracle builds it) beside the broken Makefile
    # passes the checks of the current build only.
    task = make_task(1, "medium")
    with tarfile.open(fileobj=io.BytesIO(play_solution(box, task))) as tar:
        dist = {
            path: tar.extractfile(f"./{path}").read()
            for path in ("dist/book.txt", "dist/SHA256SUMS")
        }
    forged = dataclasses.replace(task, files={**task.files, **dist})
    results = {r.name: r.passed for r in run_checks(box, play_untouched(box, forged), task.checks)}
    assert results == {
        "built_book": True,
        "built_sha256sums": True,
        "rebuilds_incrementally": False,
    }


def test_running_make_alone_never_builds_right():
    """Some planted bug always spoils the book of a clean build."""
    harmless = [MAKEFILE]
    for right, wrong in makefile.BOOK_STILL_RIGHT:
        harmless += [text.replace(right, wrong) for text in harmless]
    for level in ("easy", "medium", "hard"):
        for seed in range(40):
            assert make_task(seed, level).files["Makefile"] not in harmless


def play(env, agent_name: str, seed: int):
    total, info, _ = play_episode(env, make_agent(agent_name, env, seed=seed), seed)
    return total, info


@pytest.mark.parametrize("family", ["git", "make"])
def test_the_env_oracle_succeeds_and_random_scores_nothing(family):
    require_backend("bwrap")
    with contextlib.closing(gym.make("envgym/Terminal-v0", sandbox="bwrap", family=family)) as env:
        total, info = play(env, "oracle", 0)
        assert info["success"] and total == pytest.approx(1.0), info["task_id"]
        for seed in range(3):
            total, info = play(env, "random", seed)
            assert total == 0.0, (info["task_id"], info["grade"])
