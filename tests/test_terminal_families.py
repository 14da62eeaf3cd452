"""Terminal-v0's task families (envs/terminal/families): for every family and
level the trusted grader fails the untouched task and passes the reference
solution, tasks are the same for the same seed and differ between seeds, and
bad arguments say what to do. The 100-seed sweep is marked sweep (ENVGYM_SWEEPS=1 runs it)."""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor

import pytest
from sandbox_backends import backend_params, require_backend
from terminal_play import play_solution, play_untouched, verdicts

from envgym.envs.terminal.families import FAMILIES, make_task
from envgym.envs.terminal.grade import starting_tree
from envgym.envs.terminal.task import LEVELS
from envgym.sandbox import open_sandbox

CASES = [(family, level) for family in sorted(FAMILIES) for level in LEVELS]
SEEDS = (0, 1)
#: The family swept on docker too (the other backend runs the same grader code).
DOCKER_FAMILY = "build"


@pytest.fixture(scope="module")
def bwrap_boxes():
    """One bwrap sandbox per seed, so the seeds of a case grade side by side."""
    require_backend("bwrap")
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(open_sandbox(backend="bwrap")) for _ in SEEDS]


def assert_checker_tells(box, task) -> None:
    untouched = verdicts(box, task, play_untouched(box, task))
    failed = [r.name for r in untouched if not r.passed]
    assert failed, f"{task.task_id}: every check passes on the untouched task"
    assert 2 * len(failed) >= len(untouched), (
        f"{task.task_id}: only {failed} of {len(untouched)} checks fail untouched"
    )
    solved = verdicts(box, task, play_solution(box, task))
    wrong = [(r.name, r.reason) for r in solved if not r.passed]
    assert not wrong, f"{task.task_id}: the reference solution fails {wrong}"


def test_at_least_ten_families():
    assert len(FAMILIES) >= 10


@pytest.mark.parametrize(("family", "level"), CASES)
def test_checker_fails_untouched_and_passes_the_solution(bwrap_boxes, family, level):
    tasks = [make_task(family, seed, level) for seed in SEEDS]
    with ThreadPoolExecutor(len(tasks)) as pool:
        list(pool.map(assert_checker_tells, bwrap_boxes, tasks))


@pytest.mark.parametrize("backend", backend_params(("docker",)))
def test_one_family_on_docker(backend):
    require_backend(backend)
    with open_sandbox(backend=backend) as box:
        for level in LEVELS:
            assert_checker_tells(box, make_task(DOCKER_FAMILY, 0, level))


@pytest.mark.parametrize(("family", "level"), CASES)
def test_same_seed_same_task_other_seed_other_task(family, level):
    a, b, c = (make_task(family, s, level) for s in (7, 7, 8))
    assert starting_tree(a) == starting_tree(b)
    assert (a.instruction, a.checks, a.solution, a.setup) == (
        b.instruction,
        b.checks,
        b.solution,
        b.setup,
    )
    assert starting_tree(a) != starting_tree(c)
    assert [x.code for x in a.checks] != [x.code for x in c.checks], "the answers must differ"
    assert a.task_id != c.task_id and a.family == family and a.difficulty == level
    assert a.vocabulary and a.instruction


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_levels_differ(family):
    tasks = [make_task(family, 3, level) for level in LEVELS]
    assert len({starting_tree(t) for t in tasks}) == len(LEVELS)
    assert len({tuple(c.code for c in t.checks) for t in tasks}) == len(LEVELS)


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="known: "):
        make_task("no-such-family", 0, "easy")
    with pytest.raises(ValueError, match="difficulty must be one of"):
        make_task("logs", 0, "impossible")
    for bad in (-1, "3", 1.5):
        with pytest.raises(ValueError, match="seed must be"):
            FAMILIES["logs"](bad, "easy")


@pytest.mark.sweep  # about 25 min for every family on bwrap
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_sweep_100_seeds(bwrap_boxes, family):
    """The oracle passes every check and the untouched task fails every task,
    on 100 seeds per level."""
    for level in LEVELS:
        for seed in range(100):
            task = make_task(family, seed, level)
            box = bwrap_boxes[seed % len(bwrap_boxes)]
            untouched = verdicts(box, task, play_untouched(box, task))
            assert not all(r.passed for r in untouched), task.task_id
            solved = verdicts(box, task, play_solution(box, task))
            assert all(r.passed for r in solved), (task.task_id, solved)
