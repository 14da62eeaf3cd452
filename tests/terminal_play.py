"""Play a terminal task without an agent, for tests: one one-shot bash job
unpacks the task's starting tree, runs its ``setup`` (and, for
`play_solution`, its reference ``solution``) and sends back the resulting work
directory as a tar archive, which the trusted grader then checks in fresh
jobs. The real env plays in a persistent session; the grader is the same."""

from __future__ import annotations

import base64

from envgym.envs.terminal.grade import CheckResult, run_checks, starting_tree
from envgym.envs.terminal.task import TerminalTask

MARK = "@@terminal-play-tree@@"
_PLAY = f"""
set -u
mkdir /work/task && cd /work/task
tar -xf /work/tree.tar && rm /work/tree.tar
bash -e /work/setup.sh >&2 || {{ echo "setup failed: $?" >&2; exit 3; }}
bash -e /work/solution.sh >&2 || {{ echo "solution failed: $?" >&2; exit 4; }}
echo {MARK}
tar -cf - . | base64 -w0
"""


def _play(box, task: TerminalTask, solution: str) -> bytes:
    files = {"tree.tar": starting_tree(task), "setup.sh": task.setup, "solution.sh": solution}
    done = box.run(_PLAY, language="bash", files=files)
    if not done.ok or MARK not in done.stdout:
        raise AssertionError(
            f"playing {task.task_id} failed (exit {done.exit_code}, error {done.error}): "
            f"{done.stderr[-800:]}"
        )
    return base64.b64decode(done.stdout.split(MARK, 1)[1].strip())


def play_untouched(box, task: TerminalTask) -> bytes:
    """The work directory after ``setup`` only, as a tar archive."""
    return _play(box, task, "")


def play_solution(box, task: TerminalTask) -> bytes:
    """The work directory after ``setup`` and the reference solution."""
    return _play(box, task, task.solution)


def verdicts(box, task: TerminalTask, tree: bytes) -> list[CheckResult]:
    return run_checks(box, tree, task.checks)


def play_episode(env, agent, seed: int) -> tuple[float, dict, str]:
    """One episode of `env` from `seed`, played by `agent` (an envgym agent, reset
    first): its return, its last info and its last observation."""
    agent.reset()
    obs, info = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        total += reward
        done = terminated or truncated
    return total, info, obs
