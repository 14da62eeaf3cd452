"""Find the release that introduced a regression without git (the history is
a folder per release; family ``git`` bisects a real repository): a test
script in each of 8 releases (easy), 24 releases (medium), or 60 releases with
no test, only the expected behaviour, and the guilty line to name (hard)."""

from __future__ import annotations

from envgym.envs.terminal.families._common import WORDS, make, rng_for, text_check
from envgym.envs.terminal.task import TerminalTask

FAMILY = "bisect"
COUNTS = {"easy": 8, "medium": 24, "hard": 60}
VOCABULARY = (
    "ls releases",
    "cat releases/r01/calc.py",
    "cd releases",
    "python3 test_calc.py",
    "diff",
    "cat first_bad.txt",
    "for r in releases/*; do echo $r; done",
)

CALC = '''"""Order totals in cents."""

import sys

VERSION = "{version}"
TAX_RATE = {tax}  # percent
BULK_MIN = {bulk}  # a line of this many items or more is discounted
BULK_OFF = {off}  # percent off such a line


def line_total(qty, price):
    total = qty * price
    if qty >= BULK_MIN:
        total = total * (100 - BULK_OFF) // 100
    return total


def order_total(lines):
    subtotal = sum(line_total(qty, price) for qty, price in lines)
    return subtotal + subtotal * TAX_RATE // 100


def main(argv):
    nums = [int(x) for x in argv[1:]]
    print(order_total(list(zip(nums[::2], nums[1::2]))))


if __name__ == "__main__":
    main(sys.argv)

# Changes:
'''

BUGS = (
    ("    if qty >= BULK_MIN:", "    if qty > BULK_MIN:"),
    ("total * (100 - BULK_OFF) // 100", "total * (100 - BULK_OFF) // 1000 * 10"),
    ("subtotal * TAX_RATE // 100", "subtotal * TAX_RATE // 10"),
    ("for qty, price in lines)", "for qty, price in lines[1:])"),
    ("total = qty * price\n", "total = (qty - 1) * price + price // 2\n"),
)

TEST = """import sys

import calc

CASES = {cases!r}
for lines, want in CASES:
    got = calc.order_total([tuple(line) for line in lines])
    if got != want:
        print(f"FAIL: order_total({{lines}}) = {{got}}, expected {{want}}")
        sys.exit(1)
print("all", len(CASES), "cases pass")
"""


#: Binary search over the releases: the first passes, the last fails.
BISECT = """good() {{ {good}; }}
rs=(releases/r*)
lo=0
hi=$((${{#rs[@]}} - 1))
while [ $((hi - lo)) -gt 1 ]; do
  mid=$(((lo + hi) / 2))
  if good "${{rs[$mid]}}"; then lo=$mid; else hi=$mid; fi
done
last=${{rs[$lo]}}
bad=${{rs[$hi]}}
"""


def _order_total(lines, tax, bulk, off):
    subtotal = 0
    for qty, price in lines:
        total = qty * price
        if qty >= bulk:
            total = total * (100 - off) // 100
        subtotal += total
    return subtotal + subtotal * tax // 100


def _buggy(source: str, good: str, bad: str):
    """The broken release's order_total (our own generated code, run here to
    make sure each test case tells it from the correct one)."""
    namespace: dict = {"__name__": "calc_broken"}
    exec(compile(source.replace(good, bad), "calc_broken", "exec"), namespace)
    return namespace["order_total"]


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    n = COUNTS[difficulty]
    tax, bulk, off = rng.randint(5, 25), rng.randint(3, 9), rng.randint(10, 40)
    bad = rng.randint(2, n - 1)  # 1-based index of the first bad release
    good_line, bad_line = rng.choice(BUGS)
    names = [f"r{i:02d}" for i in range(1, n + 1)]
    broken = _buggy(CALC.format(version="", tax=tax, bulk=bulk, off=off), good_line, bad_line)
    cases = []
    while len(cases) < 4:
        lines = [(rng.randint(1, 12), rng.randint(150, 5000)) for _ in range(rng.randint(2, 4))]
        lines[0] = (bulk, lines[0][1] + 137)
        want = _order_total(lines, tax, bulk, off)
        if broken(lines) != want:  # every case shows the regression
            cases.append((lines, want))
    files = {}
    changes = ""
    for i, name in enumerate(names, start=1):
        source = CALC.format(version=f"1.{i}.0", tax=tax, bulk=bulk, off=off)
        if i >= bad:
            source = source.replace(good_line, bad_line)
        changes += f"# {name}: {rng.choice(WORDS)} {rng.choice(WORDS)}\n"
        files[f"releases/{name}/calc.py"] = source + changes
        if difficulty != "hard":
            files[f"releases/{name}/test_calc.py"] = TEST.format(
                cases=[[list(map(list, c[0])), c[1]] for c in cases]
            )
    first_bad, last_good = names[bad - 1], names[bad - 2]
    order = " ".join(names[:3]) + " ... " + names[-1]
    if difficulty == "hard":
        lines, want = cases[0]
        broken_source = files[f"releases/{first_bad}/calc.py"]
        guilty = next(line for line in broken_source.splitlines() if bad_line.strip() in line)
        args = " ".join(f"{q} {p}" for q, p in lines)
        instruction = (
            f"releases/ holds {n} releases of calc.py, oldest first ({order}). The first "
            f"release is correct: `python3 calc.py {args}` prints {want} there. Some release "
            "broke that, and every release after it is broken too. Write the name of the "
            "first broken release (like r07) to first_bad.txt. Write to bad_line.txt the one "
            "line of code whose change broke it, as it reads in that first broken release "
            "(indentation aside; the VERSION line and the '# Changes' comments change in "
            "every release and are not it)."
        )
        checks = (
            text_check("first_bad", "first_bad.txt", first_bad),
            text_check("bad_line", "bad_line.txt", guilty),
        )
        good = f'[ "$(python3 "$1/calc.py" {args})" = {want} ]'
        solution = BISECT.format(good=good) + (
            'basename "$bad" > first_bad.txt\n'
            "diff \"$last/calc.py\" \"$bad/calc.py\" | grep '^> ' | grep -v 'VERSION\\|^> #' "
            "| sed 's/^> //' > bad_line.txt\n"
        )
    else:
        instruction = (
            f"releases/ holds {n} releases of a module, oldest first ({order}), each with "
            "calc.py and test_calc.py (run it inside the release's folder: "
            "`python3 test_calc.py`, exit status 0 when it passes). The first release passes; "
            "some release broke it, and every later release fails too. Write the name of the "
            "first failing release (like r07) to first_bad.txt and the name of the release "
            "just before it to last_good.txt."
        )
        checks = (
            text_check("first_bad", "first_bad.txt", first_bad),
            text_check("last_good", "last_good.txt", last_good),
        )
        good = '(cd "$1" && python3 test_calc.py > /dev/null)'
        solution = BISECT.format(good=good) + (
            'basename "$bad" > first_bad.txt\nbasename "$last" > last_good.txt\n'
        )
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files=files,
        checks=checks,
        solution=solution,
        vocabulary=VOCABULARY,
    )
