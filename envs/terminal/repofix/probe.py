"""The hidden tests' code: what a check runs in its sandbox job.

A check never imports the agent's package itself (the package's code could end
the check's interpreter with status 0, or patch what it compares). It starts
the package in a child ``python3 -I`` (the probe), hands it the expressions on
stdin, and reads back plain data: each expression's value, encoded with type
tags, or the name of the exception it raised. The expected values never enter
the child; the comparison, types included, happens in the check.
"""

from __future__ import annotations

import re

#: Encodes a value as type-tagged JSON data. Shared by the host (expected
#: values) and the probe (the agent's values), so both encode alike.
ENCODE = r"""
def encode(value, depth=0):
    kind = type(value)
    if depth > 30:
        return ["?", "too deep"]
    if value is None:
        return ["n"]
    if kind is bool:
        return ["b", value]
    if kind is int:
        return ["i", str(value)]
    if kind is float:
        return ["f", repr(value)]
    if kind is str:
        return ["s", value]
    if kind is list or kind is tuple:
        return ["l" if kind is list else "t", [encode(v, depth + 1) for v in value]]
    if kind is dict:
        return ["d", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]]
    return ["?", kind.__name__]
"""

# The child: reads the job, appends the tree to sys.path (after the standard
# library, so a json.py in the tree shadows nothing), imports the package's
# modules and evaluates each expression in order.
PROBE = (
    "import importlib, json, sys\n"
    "job = json.loads(sys.stdin.read())\n"
    + ENCODE
    + r"""
sys.path.append(job["root"])
names = {}
try:
    for module in job["modules"]:
        names[module] = importlib.import_module(job["package"] + "." + module)
except BaseException as exc:
    sys.stdout.write("\n" + job["nonce"] + json.dumps({"import": type(exc).__name__}) + "\n")
    sys.stdout.flush()
    sys.exit(0)
results = []
for expr in job["exprs"]:
    try:
        results.append(["ok", encode(eval(expr, dict(names)))])
    except BaseException as exc:
        results.append(["raise", type(exc).__name__])
sys.stdout.write("\n" + job["nonce"] + json.dumps({"results": results}) + "\n")
sys.stdout.flush()
"""
)

# The check: runs the probe on the final tree, compares on its own side.
CHECK = r"""
import json, math, os, secrets, subprocess, sys

PACKAGE = __PACKAGE__
MODULES = __MODULES__
LABEL = __LABEL__
CASES = __CASES__
GATE = __GATE__
PROBE = __PROBE__
nonce = secrets.token_hex(16)
job = {"root": os.getcwd(), "package": PACKAGE, "modules": MODULES, "nonce": nonce,
       "exprs": [expr for expr, _ in CASES]}
env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp/home", "LANG": "C.UTF-8"}
try:
    done = subprocess.run(["/usr/bin/python3", "-I", "-c", PROBE], input=json.dumps(job),
                          capture_output=True, text=True, timeout=__TIMEOUT__, env=env,
                          cwd="/tmp", errors="replace")
except subprocess.TimeoutExpired:
    print(f"{LABEL}: the package did not finish them in time")
    sys.exit(1)
lines = [line[len(nonce):] for line in done.stdout.splitlines() if line.startswith(nonce)]
if len(lines) != 1:
    print(f"{LABEL}: the package ended the test run before it finished")
    sys.exit(1)
try:
    reply = json.loads(lines[0])
except ValueError:
    print(f"{LABEL}: the test run's reply was garbled")
    sys.exit(1)
if not isinstance(reply, dict) or "import" in reply:
    print(f"{LABEL}: the package {PACKAGE} does not import ({reply.get('import')})")
    sys.exit(1)


def same(want, got):
    if not isinstance(got, list) or not got or got[0] != want[0] or len(got) != len(want):
        return False
    tag = want[0]
    if tag == "f":
        x, y = float(want[1]), float(got[1])
        return x == y or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
    if tag in ("l", "t"):
        return len(want[1]) == len(got[1]) and all(map(same, want[1], got[1]))
    if tag == "d":
        if len(want[1]) != len(got[1]):
            return False
        key = lambda pair: json.dumps(pair[0], sort_keys=True)
        return all(same(w[0], g[0]) and same(w[1], g[1])
                   for w, g in zip(sorted(want[1], key=key), sorted(got[1], key=key)))
    return want == got


def right(want, got):
    if not isinstance(got, list) or len(got) != 2 or got[0] != want[0]:
        return False
    return same(want[1], got[1]) if want[0] == "ok" else want[1] == got[1]


results = reply.get("results")
if not isinstance(results, list) or len(results) != len(CASES):
    print(f"{LABEL}: the test run's reply was incomplete")
    sys.exit(1)
wrong = []
for (_, want), got in zip(CASES, results):
    try:
        wrong.append(not right(want, got))
    except Exception:
        wrong.append(True)
if any(wrong[:GATE]):
    print(f"{LABEL}: not counted while the issue's behaviour is still wrong")
    sys.exit(1)
if any(wrong):
    print(f"{LABEL}: {sum(wrong)} of {len(CASES) - GATE} give a wrong result")
    sys.exit(1)
"""


def check_source(
    package: str,
    modules: list[str],
    label: str,
    cases: list[tuple[str, list]],
    gate: list[tuple[str, list]] = (),
    timeout_s: float = 5.0,
) -> str:
    """The source of one check: ``cases`` are (expression, expected) pairs, the
    expected value ``["ok", encoded]`` or ``["raise", exception name]``. The
    check fails without counting ``cases`` while a ``gate`` case is wrong."""
    fill = {
        "__PACKAGE__": repr(package),
        "__MODULES__": repr(list(modules)),
        "__LABEL__": repr(label),
        "__CASES__": repr([[expr, want] for expr, want in [*gate, *cases]]),
        "__GATE__": repr(len(gate)),
        "__PROBE__": repr(PROBE),
        "__TIMEOUT__": repr(timeout_s),
    }
    return re.sub("|".join(fill), lambda match: fill[match.group(0)], CHECK)
