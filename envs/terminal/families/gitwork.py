"""Work in a real git repository (family ``git``): merge a feature branch whose
changes conflict, resolving by a stated rule; revert a named bad commit under
later good ones; bisect a regression over 8, 24 or 60 commits. The kind is
drawn from the seed; the level sets how many conflicts, files, later commits
or commits to search. The repository is written object by object
(`gitrepo.GitRepo`, no git at reset) with fixed authors and dates, so a seed
gives the same commit ids. The reference solutions use git itself. The checks
(`gitcheck`) judge verified objects: a merge's two parents and its tree, the
reverted commit still in the history and the tree without its change, the
true first bad commit's full id."""

from __future__ import annotations

from envgym.envs.terminal.families import bisect as releases
from envgym.envs.terminal.families._common import WORDS, make, rng_for, write_cmd
from envgym.envs.terminal.families.gitcheck import git_check
from envgym.envs.terminal.families.gitrepo import GitRepo
from envgym.envs.terminal.task import Check, TerminalTask

FAMILY = "git"
KINDS = ("merge", "revert", "bisect")
VOCABULARY = (
    "git status",
    "git log --oneline --graph --all",
    "git branch -a",
    "git diff main feature",
    "git merge feature",
    "git show --stat HEAD",
    "git revert --no-edit HEAD",
    "git bisect start",
    "cat app.conf",
    "ls",
)

#: Key lines of app.conf where the branches conflict (up to three) and where
#: each side alone changes a line: at least two unchanged lines between them.
CONFLICT_AT = (3, 8, 13)
MAIN_ONLY, FEATURE_ONLY = 0, 16
CHANGELOG_HEAD = ["# Changelog", "", "## Unreleased", ""]
CHANGELOG_TAIL = ["", "## 1.0.0", "", "- first release"]


def _text(items) -> str:
    return "".join(f"{item}\n" for item in items)


def _conf(values: dict[str, int]) -> str:
    return _text(["[main]", *(f"{k} = {v}" for k, v in values.items())])


def _tree_check(name: str, ref: str, want: dict[str, str]) -> Check:
    return git_check(
        name,
        """
same_files(tree_files(commit(ref(REF))[0]), WANT, f"the tree of {REF}")
""",
        REF=ref,
        WANT=want,
    )


def _work_check(want: dict[str, str]) -> Check:
    return git_check(
        "work_tree",
        """
same_files(work_files(), WANT, "the work tree")
""",
        WANT=want,
    )


def _merge(rng, difficulty: str):
    hunks = {"easy": 1, "medium": 2, "hard": 3}[difficulty]
    keys = rng.sample(WORDS, 17)
    base = {k: rng.randint(10, 99) for k in keys}
    main, feature = dict(base), dict(base)
    for i in CONFLICT_AT[:hunks]:
        k = keys[i]
        while main[k] == base[k] or feature[k] in (base[k], main[k]):
            main[k], feature[k] = rng.randint(100, 999), rng.randint(100, 999)
    main[keys[MAIN_ONLY]] = base[keys[MAIN_ONLY]] + 100
    feature[keys[FEATURE_ONLY]] = base[keys[FEATURE_ONLY]] + 200
    rule, pick = {
        "easy": ("keep the feature branch's value", lambda ours, theirs: theirs),
        "medium": ("keep main's value", lambda ours, theirs: ours),
        "hard": ("keep the larger of the two numbers", max),
    }[difficulty]
    merged = {}
    for k in keys:
        if main[k] == base[k] or feature[k] == base[k]:
            merged[k] = feature[k] if main[k] == base[k] else main[k]
        else:
            merged[k] = pick(main[k], feature[k])
    files = {"README.md": f"# {rng.choice(WORDS)} service\n", "app.conf": _conf(base)}
    files["CHANGELOG.md"] = _text(CHANGELOG_HEAD + CHANGELOG_TAIL)
    ours = {**files, "app.conf": _conf(main)}
    theirs = {**files, "app.conf": _conf(feature), "docs/feature.md": f"{rng.choice(WORDS)}\n"}
    merged_files = {**theirs, "app.conf": _conf(merged)}
    rules = f"in app.conf, where both branches changed a value, {rule}"
    if difficulty != "easy":
        a = f"- {rng.choice(WORDS)} {rng.choice(WORDS)} fixed"
        b = f"- added {rng.choice(WORDS)} {rng.choice(WORDS)}"
        ours["CHANGELOG.md"] = _text(CHANGELOG_HEAD + [a] + CHANGELOG_TAIL)
        theirs["CHANGELOG.md"] = _text(CHANGELOG_HEAD + [b] + CHANGELOG_TAIL)
        merged_files["CHANGELOG.md"] = _text(CHANGELOG_HEAD + [a, b] + CHANGELOG_TAIL)
        rules += "; in CHANGELOG.md keep both entries, main's first, then feature's"
    repo = GitRepo()
    c0 = repo.commit(files, [], "Initial version", 0)
    main_tip = repo.commit(ours, [c0], f"Tune {keys[CONFLICT_AT[0]]}", 1)
    feature_tip = repo.commit(theirs, [c0], f"Feature: {rng.choice(WORDS)} settings", 2)
    repo.branch("main", main_tip)
    repo.branch("feature", feature_tip)
    instruction = (
        "This is a git repository on branch main. Merge the branch feature into main. The "
        f"merge conflicts: resolve it by these rules: {rules}; take every other change "
        "from whichever branch made it. Commit the merge on main (a merge commit whose "
        "parents are main's current commit, then feature's), leaving the work tree clean: "
        "no conflict markers and no other files changed."
    )
    checks = (
        git_check(
            "merge_commit",
            """
parents = commit(ref("refs/heads/main"))[1]
if parents != [MAIN, FEATURE]:
    fail(f"main's commit has parents {parents}, not main's tip then feature's tip")
""",
            MAIN=main_tip,
            FEATURE=feature_tip,
        ),
        _tree_check("merged_content", "refs/heads/main", merged_files),
        _work_check(merged_files),
    )
    resolve = "\n".join(write_cmd(p, merged_files[p]) for p in ("app.conf", "CHANGELOG.md"))
    solution = (
        "git merge --no-edit feature || true\n" + resolve + "\ngit add -A\ngit commit --no-edit -q"
    )
    return repo, ours, instruction, checks, solution


def _revert(rng, difficulty: str):
    later = {"easy": 1, "medium": 3, "hard": 5}[difficulty]
    keys = rng.sample(WORDS, 20)
    values = {k: rng.randint(10, 99) for k in keys}
    notes = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(8)]
    files = {"app.conf": _conf(values), "NOTES.md": _text(notes)}
    repo = GitRepo()
    tip = repo.commit(files, [], "Initial version", 0)
    # Early good commits, then the bad one, then `later` good ones: each good
    # commit changes one key of the upper half or a note; the bad one two keys
    # of the lower half (and on hard a note too), so it reverts cleanly.
    upper, lower = keys[:9], keys[12:]
    steps = ["good", "good", "bad"] + ["good"] * later
    bad_id = before_bad = None
    touched = rng.sample(lower, 2)
    for n, step in enumerate(steps, start=1):
        files = dict(files)
        if step == "bad":
            before_bad = dict(files)
            for k in touched:
                values[k] = 0
            subject = f"Set {touched[0]} and {touched[1]} to 0"
            if difficulty == "hard":
                notes[7] = f"{touched[0]} disabled"
                files["NOTES.md"] = _text(notes)
        elif rng.random() < 0.7 or difficulty == "easy":
            k = upper[(n * 2) % len(upper)]
            values[k] += rng.randint(1, 50)
            subject = f"Raise {k} to {values[k]}"
        else:
            notes[n % 4] = f"{rng.choice(WORDS)} {rng.choice(WORDS)} reviewed"
            files["NOTES.md"] = _text(notes)
            subject = f"Note on {notes[n % 4].split()[0]}"
        files["app.conf"] = _conf(values)
        tip = repo.commit(files, [tip], subject, n)
        if step == "bad":
            bad_id, bad_subject = tip, subject
    repo.branch("main", tip)
    assert bad_id is not None and before_bad is not None
    want = dict(files)
    restored = dict(values)
    for k in touched:
        restored[k] = int(before_bad["app.conf"].split(f"\n{k} = ")[1].split("\n")[0])
    want["app.conf"] = _conf(restored)
    if difficulty == "hard":
        want["NOTES.md"] = _text(notes[:7] + [before_bad["NOTES.md"].splitlines()[7]])
        named = f'the commit whose subject is "{bad_subject}"'
    else:
        named = f"commit {bad_id[:12]}"
    instruction = (
        f"This is a git repository on branch main. {named[0].upper() + named[1:]} broke the "
        f"service; {later} good commit(s) came after it. Undo it on main with a new commit "
        "that reverts it, keeping the history (do not rewrite or drop commits) and every "
        "later change; leave the work tree clean."
    )
    checks = (
        git_check(
            "reverted",
            """
tip = ref("refs/heads/main")
if tip == TIP:
    fail("main has no new commit")
seen = ancestors(tip)
if TIP not in seen or BAD not in seen:
    fail("main's history no longer holds the original commits: it was rewritten")
same_files(tree_files(commit(tip)[0]), WANT, "the tree of main")
""",
            TIP=tip,
            BAD=bad_id,
            WANT=want,
        ),
        _work_check(want),
    )
    solution = f"git revert --no-edit {bad_id}"
    return repo, files, instruction, checks, solution


def _bisect(rng, difficulty: str):
    n = releases.COUNTS[difficulty]
    tax, bulk, off = rng.randint(5, 25), rng.randint(3, 9), rng.randint(10, 40)
    bad = rng.randint(2, n)  # 1-based index of the first bad commit
    good_line, bad_line = rng.choice(releases.BUGS)
    calc = releases.CALC.format(version="", tax=tax, bulk=bulk, off=off)
    broken = releases._buggy(calc, good_line, bad_line)
    cases = []
    while len(cases) < 4:
        lines = [(rng.randint(1, 12), rng.randint(150, 5000)) for _ in range(rng.randint(2, 4))]
        lines[0] = (bulk, lines[0][1] + 137)
        want = releases._order_total(lines, tax, bulk, off)
        if broken(lines) != want:
            cases.append((lines, want))
    test = releases.TEST.format(cases=[[list(map(list, c[0])), c[1]] for c in cases])
    repo, tip, changes, ids = GitRepo(), None, "", []
    for i in range(1, n + 1):
        source = releases.CALC.format(version=f"1.{i}.0", tax=tax, bulk=bulk, off=off)
        if i >= bad:
            source = source.replace(good_line, bad_line)
        word = f"{rng.choice(WORDS)} {rng.choice(WORDS)}"
        changes += f"# 1.{i}.0: {word}\n"
        files = {"calc.py": source + changes, "test_calc.py": test}
        tip = repo.commit(files, [tip] if tip else [], f"Release 1.{i}.0: {word}", i)
        ids.append(tip)
    repo.branch("main", tip)
    first_bad = ids[bad - 1]
    tagged = difficulty != "easy"
    instruction = (
        f"This is a git repository on branch main with {n} commits, one a release of calc.py. "
        "`python3 test_calc.py` exits 0 where the code is right. The first commit passes, "
        "the last fails: some commit broke it and every later one stays broken. Find the "
        "first bad commit (git bisect helps) and write its full 40-character id to "
        "first_bad.txt"
        + (", and put a tag named regression on it" if tagged else "")
        + ". Leave main pointing where it does now."
    )
    checks = [
        git_check(
            "first_bad",
            """
got = read("first_bad.txt").strip()
if len(got) != 40 or any(c not in HEX for c in got):
    fail("first_bad.txt does not hold a full 40-character commit id")
if got != FIRST_BAD:
    fail(f"{got} is not the first bad commit")
if ref("refs/heads/main") != TIP:
    fail("main no longer points at its original commit")
""",
            FIRST_BAD=first_bad,
            TIP=tip,
        ),
    ]
    solution = (
        f"git bisect start {tip} {ids[0]}\n"
        "git bisect run python3 test_calc.py > /dev/null\n"
        "bad=$(git rev-parse refs/bisect/bad)\n"
        "git bisect reset > /dev/null\n"
        'echo "$bad" > first_bad.txt\n'
    )
    if tagged:
        checks.append(
            git_check(
                "tag",
                """
if ref("refs/tags/regression") != FIRST_BAD:
    fail("the tag regression does not point at the first bad commit")
""",
                FIRST_BAD=first_bad,
            )
        )
        solution += 'git tag regression "$bad"\n'
    return repo, files, instruction, tuple(checks), solution


def kind_of(seed: int, difficulty: str) -> str:
    """Which of `KINDS` the task of ``seed`` at ``difficulty`` is."""
    return KINDS[rng_for(FAMILY, seed, difficulty).randrange(len(KINDS))]


def make_task(seed: int, difficulty: str) -> TerminalTask:
    kind = kind_of(seed, difficulty)
    rng = rng_for(FAMILY, seed, difficulty)
    rng.randrange(len(KINDS))  # the draw kind_of made: the rest follows it
    repo, checkout, instruction, checks, solution = {
        "merge": _merge,
        "revert": _revert,
        "bisect": _bisect,
    }[kind](rng, difficulty)
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files=repo.files("main", checkout),
        checks=checks,
        solution=solution,
        vocabulary=VOCABULARY,
    )
