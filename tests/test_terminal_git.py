"""Terminal-v0's ``git`` family (envs/terminal/families/gitwork.py): the
repository written without git (gitrepo.py) is one real git accepts, byte for
byte the same for a seed; every kind at every level fails untouched and passes
its git-made reference solution; and trees an agent could leave behind
(wrong merge parents, a forged revert, a rewritten history, a branch name or
short id for an answer, a ``.git`` that runs commands or points elsewhere)
fail the checks of gitcheck.py, each of which passes only if its attack worked."""

from __future__ import annotations

import contextlib
import io
import re
import tarfile
from concurrent.futures import ThreadPoolExecutor

import pytest
from sandbox_backends import backend_params, require_backend
from terminal_play import _play, play_solution, play_untouched, verdicts
from test_terminal_families import SEEDS

from envgym.envs.terminal.families import make_task
from envgym.envs.terminal.families._common import check
from envgym.envs.terminal.families.gitcheck import git_check
from envgym.envs.terminal.families.gitrepo import CONFIG, GitRepo, blob_id
from envgym.envs.terminal.families.gitwork import KINDS, kind_of
from envgym.envs.terminal.grade import run_checks, starting_tree
from envgym.envs.terminal.task import LEVELS
from envgym.sandbox import open_sandbox


def seed_of(kind: str, level: str) -> int:
    return next(s for s in range(100) if kind_of(s, level) == kind)


@pytest.fixture(scope="module")
def boxes():
    require_backend("bwrap")
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(open_sandbox(backend="bwrap")) for _ in range(2)]


def by_name(results) -> dict[str, bool]:
    return {r.name: r.passed for r in results}


def test_real_git_accepts_the_written_repository(boxes):
    repo = GitRepo()
    files = {"a.txt": "one\n", "bin/run.sh": "#!/bin/sh\necho hi\n", "b/c/d.md": "deep\n"}
    modes = {"bin/run.sh": 0o755}
    c1 = repo.commit(files, [], "First", 0, modes)
    c2 = repo.commit({**files, "a.txt": "two\n"}, [c1], "Second", 1, modes)
    c3 = repo.commit({**files, "e.txt": "side\n"}, [c1], "Side", 2, modes)
    merged = {**files, "a.txt": "two\n", "e.txt": "side\n"}
    c4 = repo.commit(merged, [c2, c3], "Merge side", 3, modes)
    repo.branch("main", c4)
    repo.branch("side", c3)
    repo.tag("v1", c1)
    tree = repo.files("main", merged, modes)
    script = """
set -e
cd /work/t && chmod 755 bin/run.sh
git fsck --strict --no-dangling 2>&1
echo "log: $(git log --format='%H:%P:%an:%at:%s' main | tr '\\n' ' ')"
echo "tag: $(git rev-parse v1) side: $(git rev-parse side)"
echo "blob: $(git cat-file -p HEAD:a.txt) mode: $(git ls-tree HEAD bin/run.sh | cut -c1-6)"
echo "status: [$(git status --porcelain)] blob id: $(git rev-parse HEAD:a.txt)"
"""
    done = boxes[0].run(script, language="bash", files={f"t/{k}": v for k, v in tree.items()})
    assert done.ok, done.stdout + done.stderr
    out = done.stdout
    assert f"{c4}:{c2} {c3}:Dana Reyes:1700010800:Merge side" in out
    assert f"{c1}::Dana Reyes:1700000000:First" in out
    assert f"tag: {c1} side: {c3}" in out and "blob: two mode: 100755" in out
    assert "status: []" in out, "the written index does not match the work tree"
    assert f"blob id: {blob_id('two' + chr(10))}" in out


def test_real_git_accepts_every_kind_of_task_repository(boxes):
    files, script = {}, "set -e\n"
    for kind in KINDS:
        task = make_task("git", seed_of(kind, "hard"), "hard")
        files.update({f"{kind}/{path}": data for path, data in task.files.items()})
        script += f"cd /work/{kind} && git fsck --strict --no-dangling && "
        script += 'echo "$(git rev-list --count --all) [$(git status --porcelain)]"\n'
    done = boxes[0].run(script, language="bash", files=files)
    assert done.ok, done.stdout + done.stderr
    counts = [line.split(" ", 1) for line in done.stdout.splitlines()]
    assert [status for _, status in counts] == ["[]"] * len(KINDS), done.stdout
    assert int(counts[KINDS.index("bisect")][0]) == 60, "hard bisects 60 commits"


@pytest.mark.parametrize("level", LEVELS)
def test_same_seed_same_repository_and_commit_ids(level):
    a, b = make_task("git", 5, level), make_task("git", 5, level)
    assert starting_tree(a) == starting_tree(b)
    heads = {p: v for p, v in a.files.items() if p.startswith(".git/refs/")}
    assert heads and all(re.fullmatch(rb"[0-9a-f]{40}\n", v) for v in heads.values())
    assert {kind_of(s, level) for s in range(12)} == set(KINDS), "every kind at every level"


#: The kinds at each level that test_terminal_families.py's seeds do not draw.
UNSEEN = [
    (kind, level)
    for level in LEVELS
    for kind in KINDS
    if kind not in {kind_of(s, level) for s in SEEDS}
]


@pytest.mark.parametrize(("kind", "level"), UNSEEN)
def test_every_kind_fails_untouched_and_passes_its_git_solution(boxes, kind, level):
    task = make_task("git", seed_of(kind, level), level)
    with ThreadPoolExecutor(2) as pool:
        untouched, solved = pool.map(
            lambda box, play: verdicts(box, task, play(box, task)),
            boxes,
            (play_untouched, play_solution),
        )
    assert not any(r.passed for r in untouched), task.task_id
    assert all(r.passed for r in solved), (task.task_id, solved)


def attacked(box, kind: str, level: str, script: str):
    """Each check's verdict and reason after ``script`` ran on the task (the
    reference solution is in $SOLUTION, to run first where an attack builds on it)."""
    task = make_task("git", seed_of(kind, level), level)
    tree = _play(box, task, f"SOLUTION={_quote(task.solution)}\n{script}")
    results = run_checks(box, tree, task.checks)
    return by_name(results), {r.name: r.reason for r in results}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_a_merge_with_the_wrong_parents_fails(boxes):
    # The right content, committed with one parent, or with the parents swapped.
    one_parent = 'eval "$SOLUTION"\nc=$(git commit-tree HEAD^{tree} -p HEAD^1 -m merge)\n'
    swapped = 'eval "$SOLUTION"\nc=$(git commit-tree HEAD^{tree} -p HEAD^2 -p HEAD^1 -m m)\n'
    scripts = [script + "git update-ref refs/heads/main $c" for script in (one_parent, swapped)]
    with ThreadPoolExecutor(2) as pool:
        for got, why in pool.map(lambda b, x: attacked(b, "merge", "easy", x), boxes, scripts):
            assert got == {"merge_commit": False, "merged_content": True, "work_tree": True}, why


def test_a_forged_revert_message_fails(boxes):
    script = 'git commit -q --allow-empty -m "Revert \\"$(git log -1 --format=%s HEAD~1)\\""'
    got, why = attacked(boxes[0], "revert", "easy", script)
    assert got == {"reverted": False, "work_tree": False}
    assert "does not hold the expected content" in why["reverted"]


def test_a_history_rewritten_without_the_bad_commit_fails(boxes):
    # Dropping the bad commit leaves the right content, but not the history.
    task = make_task("git", seed_of("revert", "medium"), "medium")
    bad = re.search(r"ommit ([0-9a-f]{12})", task.instruction).group(1)
    script = f"git rebase -q --onto {bad}^ {bad} main"
    got, why = attacked(boxes[0], "revert", "medium", script)
    assert got == {"reverted": False, "work_tree": True}
    assert "rewritten" in why["reverted"]


def with_files(tree: bytes, files: dict[str, str], mode: int = 0o644) -> bytes:
    """``tree`` (a tar) with ``files`` added or replaced."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(tree)) as src, tarfile.open(fileobj=out, mode="w") as tar:
        for member in src.getmembers():
            if member.name.removeprefix("./") not in files:
                tar.addfile(member, src.extractfile(member) if member.isfile() else None)
        for path, text in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(text.encode()), mode
            tar.addfile(info, io.BytesIO(text.encode()))
    return out.getvalue()


def test_a_bisect_answer_must_be_the_full_id(boxes):
    task = make_task("git", seed_of("bisect", "medium"), "medium")
    first_bad = re.search(r"FIRST_BAD = '([0-9a-f]{40})'", task.checks[0].code).group(1)
    for answer in ("main", first_bad[:12], f"{first_bad}^", "regression", first_bad):
        tree = with_files(starting_tree(task), {"first_bad.txt": answer + "\n"})
        passed = run_checks(boxes[1], tree, task.checks[:1])[0].passed
        assert passed == (answer == first_bad), answer


#: Ways an agent's .git runs its own program when a naive check runs git
#: (`git status`, `git diff`): each program tags the first bad commit. (An
#: alias cannot shadow the built-in commands the checks run; the replaced
#: config drops aliases too.)
TRAPS = {
    "fsmonitor": {".git/config": CONFIG + "[core]\n\tfsmonitor = .git/trap.sh\n"},
    "hooks_path": {
        ".git/config": CONFIG + "[core]\n\thooksPath = .githooks\n",
        ".githooks/post-index-change": "",
    },
    "hooks_dir": {".git/hooks/post-index-change": ""},
    "include": {
        ".git/config": CONFIG + "[include]\n\tpath = extra\n",
        ".git/extra": "[core]\n\tfsmonitor = .git/trap.sh\n",
    },
    "filter": {
        ".git/config": CONFIG + '[filter "x"]\n\tclean = .git/trap.sh\n',
        ".gitattributes": "* filter=x\n",
    },
    "diff_external": {
        ".git/config": CONFIG + "[diff]\n\texternal = .git/trap.sh\n",
        "calc.py": "# changed, so git diff has something to show\n",
    },
}
NAIVE_PROBE = check(
    "probe",
    """
for args in (["status", "--porcelain"], ["diff", "HEAD"], ["log", "-1"]):
    subprocess.run(["git", *args], capture_output=True, timeout=20)
sys.exit(0 if os.path.exists(".git/refs/tags/regression") else 1)
""",
)
SAFE_PROBE = git_check(
    "probe",
    """
for args in (["status", "--porcelain"], ["diff", "HEAD"], ["log", "-1"]):
    git(*args)
sys.exit(0 if os.path.exists(".git/refs/tags/regression") else 1)
""",
)


@pytest.mark.parametrize("trap", sorted(TRAPS))
def test_a_git_config_that_runs_commands_runs_nothing(boxes, trap):
    task = make_task("git", seed_of("bisect", "medium"), "medium")
    first_bad = re.search(r"FIRST_BAD = '([0-9a-f]{40})'", task.checks[0].code).group(1)
    trap_sh = (
        f"#!/bin/sh\nmkdir -p .git/refs/tags\necho {first_bad} > .git/refs/tags/regression\n"
        f"echo {first_bad} > first_bad.txt\n"
    )
    script = {".git/trap.sh": trap_sh}
    script.update({p: trap_sh for p, text in TRAPS[trap].items() if not text})
    tree = with_files(starting_tree(task), script, mode=0o755)
    tree = with_files(tree, {p: text for p, text in TRAPS[trap].items() if text})
    with ThreadPoolExecutor(2) as pool:
        naive, safe = pool.map(
            lambda box, probe: run_checks(box, tree, [probe])[0].passed,
            boxes,
            (NAIVE_PROBE, SAFE_PROBE),
        )
    assert naive, f"the {trap} trap did not fire for a naive check: the test proves nothing"
    assert not safe, f"the {trap} trap fired under gitcheck's git"
    if trap == "fsmonitor":  # the task's own checks run the same prelude as SAFE_PROBE
        got = by_name(run_checks(boxes[0], tree, task.checks))
        assert got == {"first_bad": False, "tag": False}


def test_a_git_file_or_replace_ref_pointing_elsewhere_fails(boxes):
    # .git as a file naming a folder that holds the solved repository, and a
    # replace ref that shows a rewritten main as a proper revert.
    gitfile = 'eval "$SOLUTION"\nmv .git .store\necho "gitdir: .store" > .git'
    got, why = attacked(boxes[1], "bisect", "medium", gitfile)
    assert got == {"first_bad": False, "tag": False}
    task = make_task("git", seed_of("revert", "medium"), "medium")
    bad = re.search(r"ommit ([0-9a-f]{12})", task.instruction).group(1)
    replace = (
        'eval "$SOLUTION"\ngood=$(git rev-parse HEAD)\n'
        f'new=$(git commit-tree "$good^{{tree}}" -p {bad}^ -m "Drop the bad change")\n'
        'git update-ref refs/heads/main "$new"\ngit replace "$new" "$good"\n'
    )
    got, why = attacked(boxes[1], "revert", "medium", replace)
    assert got == {"reverted": False, "work_tree": True}


@pytest.mark.docker
@pytest.mark.parametrize("backend", backend_params(("docker",)))
def test_git_and_make_on_docker(backend):
    require_backend(backend)
    with open_sandbox(backend=backend) as box:
        for family, seed in (("git", seed_of("merge", "medium")), ("make", 0)):
            task = make_task(family, seed, "medium")
            assert not all(r.passed for r in verdicts(box, task, play_untouched(box, task)))
            solved = verdicts(box, task, play_solution(box, task))
            assert all(r.passed for r in solved), (task.task_id, solved)
