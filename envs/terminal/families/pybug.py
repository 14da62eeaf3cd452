"""Fix a failing Python script with planted bugs: one bug (easy), two
(medium), three across a script and the module it imports (hard). The checks
run the fixed script on the visible input and on inputs the agent never sees,
so printing the expected answer does not pass."""

from __future__ import annotations

from envgym.envs.terminal.families._common import check, lines, make, rng_for, write_cmd
from envgym.envs.terminal.task import TerminalTask

FAMILY = "pybug"
VOCABULARY = (
    "ls",
    "cat stats.py",
    "python3 stats.py numbers.txt",
    "head numbers.txt",
    "sed -n 1,40p stats.py",
    "grep -n def stats.py",
    "wc -l numbers.txt",
)

LIB = """def load(path):
    with open(path) as f:
        return [int(line) for line in f if line.strip()]


def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    s = sorted(xs)
    mid = len(s) // 2
    if len(s) % 2:
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2


def spread(xs):
    return max(xs) - min(xs)
"""

MAIN = """import sys

{imports}


def main():
    xs = load(sys.argv[1] if len(sys.argv) > 1 else "numbers.txt")
    print(f"count {{len(xs)}}")
    print(f"mean {{mean(xs):.2f}}")
    print(f"median {{median(xs):.1f}}")
    print(f"spread {{spread(xs)}}")


if __name__ == "__main__":
    main()
"""

#: (correct fragment, planted bug); each shows on every input `_numbers` makes.
BUGS = (
    ("return sum(xs) / len(xs)", "return sum(xs[1:]) / len(xs)"),
    ("return (s[mid - 1] + s[mid]) / 2", "return (s[mid] + s[mid + 1]) / 2"),
    ("    s = sorted(xs)", "    s = list(xs)"),
    ("return max(xs) - min(xs)", "return max(xs) - xs[0]"),
    ("for line in f if line.strip()]", "for line in f]"),
    ('print(f"count {{len(xs)}}")', 'print(f"count {{len(set(xs))}}")'),
)


def _numbers(rng) -> tuple[str, list[int]]:
    """An input every bug above shows on: even count with distinct middle
    neighbours, unsorted, a duplicate, a blank line, the first not the minimum."""
    while True:
        xs = [rng.randint(-50, 200) for _ in range(2 * rng.randint(3, 7))]
        xs.append(xs[1])
        xs.append(rng.randint(-50, 200))
        s = sorted(xs)
        mid = len(s) // 2
        shows = (
            xs[0] not in (0, min(xs)),  # mean skipping it, spread from it
            s[mid + 1] != s[mid - 1],  # the wrong middle pair
            xs[mid - 1] + xs[mid] != s[mid - 1] + s[mid],  # no sort
        )
        if all(shows):
            break
    body = [str(x) for x in xs]
    body.insert(rng.randint(1, len(body) - 1), "")
    return lines(body), xs


def _expected(xs: list[int]) -> str:
    s = sorted(xs)
    mid = len(s) // 2
    median = s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
    return lines(
        [
            f"count {len(xs)}",
            f"mean {sum(xs) / len(xs):.2f}",
            f"median {median:.1f}",
            f"spread {max(xs) - min(xs)}",
        ]
    )


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    k = {"easy": 1, "medium": 2, "hard": 3}[difficulty]
    bugs = rng.sample(BUGS, k)
    split = difficulty == "hard"
    imports = "from statlib import load, mean, median, spread" if split else LIB
    main = MAIN.format(imports=imports.rstrip("\n"))
    good = {"statlib.py": LIB, "stats.py": main} if split else {"stats.py": main}
    if split and all(right not in LIB for right, _ in bugs):
        bugs[0] = BUGS[3]  # one bug in the imported module
    files = dict(good)
    for right, wrong in bugs:
        right, wrong = (b.replace("{{", "{").replace("}}", "}") for b in (right, wrong))
        files = {path: text.replace(right, wrong) for path, text in files.items()}
    visible, xs = _numbers(rng)
    files["numbers.txt"] = visible
    hidden = [_numbers(rng) for _ in range(2)]
    instruction = (
        "`python3 stats.py FILE` reads FILE (default numbers.txt): one integer a line, blank "
        "lines ignored. It must print exactly four lines: 'count N' (how many integers), "
        "'mean M' (their mean, two decimals), 'median D' (the middle value of the sorted "
        "integers, or the mean of the two middle ones for an even count, one decimal), "
        "'spread S' (maximum minus minimum). It prints wrong results now. Fix the code"
        + (" (stats.py and the module statlib.py it imports)" if split else "")
        + "; it will be run on other files of the same kind too."
    )
    run = """
import tempfile
folder = tempfile.mkdtemp()
data = os.path.join(folder, "input.txt")
Path(data).write_text(INPUT)
try:
    done = subprocess.run(["/usr/bin/python3", "stats.py", data], capture_output=True,
                          text=True, timeout=10, stdin=subprocess.DEVNULL)
except subprocess.TimeoutExpired:
    fail("stats.py ran for more than 10 s")
if norm(done.stdout) != norm(WANT):
    fail(f"stats.py printed {done.stdout.strip()[:80]!r} for {LABEL}")
"""
    checks = [check("visible_input", run, INPUT=visible, WANT=_expected(xs), LABEL="numbers.txt")]
    for i, (text, ys) in enumerate(hidden):
        checks.append(
            check(
                f"other_input_{i + 1}", run, INPUT=text, WANT=_expected(ys), LABEL="another input"
            )
        )
    solution = "\n".join(write_cmd(path, text) for path, text in good.items())
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files=files,
        checks=tuple(checks),
        solution=solution,
        vocabulary=VOCABULARY,
    )
