"""Play a RepoFix task's tree through a sandbox job, as an episode would, and
grade the final tree with the trusted grader (`envgym.envs.terminal.grade`).

``play(box, task, script)`` unpacks `starting_tree(task)` in a one-shot bash
job, runs the task's ``setup`` and then ``script`` (the reference solution, an
attack, or nothing) in the work directory, and returns a tar of that directory
afterwards; ``grade`` runs the task's checks on it in fresh jobs.
"""

from __future__ import annotations

import base64

from envgym.envs.terminal.grade import CheckResult, run_checks, starting_tree
from envgym.envs.terminal.task import TerminalTask

MARK = "@@TREE@@"
# Tar the work dir's entries by name (no "./" prefix), dotfiles included.
_PACK = (
    "import os, sys, tarfile\n"
    "with tarfile.open(fileobj=sys.stdout.buffer, mode='w|') as tar:\n"
    "    for name in sorted(os.listdir('.')):\n"
    "        tar.add(name)\n"
)


def play(box, task: TerminalTask, script: str = "") -> bytes:
    """The work directory as a tar archive after ``setup`` and ``script`` (each
    must succeed: a script that does not run proves nothing)."""
    job = (
        "mkdir -p /work/w && cd /work/w && tar xf /work/tree.tar\n"
        f"( {task.setup or ':'}\n) >/work/setup.log 2>&1 || {{ cat /work/setup.log; exit 3; }}\n"
        f"( cd /work/w\n{script or ':'}\n) >/work/agent.log 2>&1 "
        "|| { cat /work/agent.log; exit 4; }\n"
        f"cd /work/w && printf '{MARK}'\n"
        f"python3 -c {_shell_quote(_PACK)} | base64 -w0\n"
    )
    done = box.run(job, language="bash", files={"tree.tar": starting_tree(task)})
    assert done.exit_code == 0 and MARK in done.stdout, (done.stdout[-500:], done.stderr[-2000:])
    return base64.b64decode(done.stdout.split(MARK, 1)[1].strip())


def grade(box, task: TerminalTask, script: str = "") -> dict[str, CheckResult]:
    results = run_checks(box, play(box, task, script), task.checks)
    return {r.name: r for r in results}


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
