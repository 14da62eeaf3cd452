"""Turn a domain, a bug and a seeded generator into a `TerminalTask`.

The expected value of every test comes from running the correct package (this
module's own templates, never model code) in the host, in fresh modules per
test group; the buggy package runs the same way to prove, per task, that the
hidden tests of the bug fail on the untouched tree and that a hard task's
visible tests all pass on it.
"""

from __future__ import annotations

import builtins
import itertools
import random
import re
import sys
import types
from string import Template

from envgym.envs.terminal.repofix.probe import ENCODE, check_source
from envgym.envs.terminal.repofix.spec import Bug, Domain, pick
from envgym.envs.terminal.task import Check, TerminalTask

ALIASES = ("U", "C", "R")
BUG_LABEL = "hidden tests of the issue's behaviour"
#: Tries at drawing tests that tell the bug apart before the generator gives up.
DRAWS = 40
_encode_namespace: dict = {}
exec(ENCODE, _encode_namespace)  # noqa: S102 - our own encoder, shared with the probe
encode = _encode_namespace["encode"]
_counter = itertools.count()


def evaluate(sources: dict[str, str], exprs: list[str]) -> list[tuple[str, object]]:
    """Each expression's outcome on a fresh in-memory copy of the package:
    ``("ok", value)`` or ``("raise", exception)``. ``sources`` maps module
    names to source, in import order."""
    root = f"_envgym_repofix_{next(_counter)}"
    package = types.ModuleType(root)
    package.__path__ = []
    sys.modules[root] = package
    names = {}
    try:
        for name, source in sources.items():
            module = types.ModuleType(f"{root}.{name}")
            module.__package__ = root
            sys.modules[module.__name__] = module
            exec(compile(source, f"<{name}.py>", "exec"), module.__dict__)  # noqa: S102
            names[name] = module
        outcomes: list[tuple[str, object]] = []
        for expr in exprs:
            try:
                outcomes.append(("ok", eval(expr, dict(names))))  # noqa: S307
            except Exception as exc:
                outcomes.append(("raise", exc))
        return outcomes
    finally:
        # A copy: another thread's import (a vector env's thread workers generate
        # tasks side by side) may change sys.modules while this loop looks at it.
        for key in [k for k in list(sys.modules) if k == root or k.startswith(root + ".")]:
            del sys.modules[key]


def tagged(outcome: tuple[str, object]) -> list:
    kind, value = outcome
    return ["ok", encode(value)] if kind == "ok" else ["raise", type(value).__name__]


def differs(a: tuple[str, object], b: tuple[str, object]) -> bool:
    return tagged(a) != tagged(b)


def fill(template: str, names: dict[str, str]) -> str:
    return Template(template).substitute(names)


def draw_names(domain: Domain, rng: random.Random) -> dict[str, str]:
    names = {key: pick(rng, options) for key, options in sorted(domain.names.items())}
    modules = [names[a] for a in ALIASES]
    if len(set(modules)) != len(modules):
        raise ValueError(f"domain {domain.key}: two modules drew one name: {modules}")
    return names


def plant(domain: Domain, bug: Bug, names: dict[str, str]) -> tuple[dict, dict]:
    """The correct and the buggy sources, by module name, in import order."""
    good = {names[a]: fill(domain.sources[a], names) for a in ALIASES}
    bad = dict(good)
    for fix in bug.fixes:
        module = names[fix.module]
        right, wrong = fill(fix.good, names), fill(fix.bad, names)
        if bad[module].count(right) != 1 or right == wrong:
            raise ValueError(f"bug {bug.key}: {right!r} is not once in {module}.py")
        bad[module] = bad[module].replace(right, wrong)
        if bad[module].count(wrong) != 1:
            raise ValueError(f"bug {bug.key}: {wrong!r} would not be once in {module}.py")
    return good, bad


def module_of(expr: str) -> str:
    """The module an expression calls first (``(core.f(1), ...)`` -> core)."""
    return re.match(r"\W*(\w+)\.", expr).group(1)


def show(outcome: tuple[str, object], expected: bool) -> str:
    kind, value = outcome
    if kind == "ok":
        return repr(value)
    if expected:
        return f"a {type(value).__name__}"
    return f"Traceback (most recent call last):\n  ...\n{type(value).__name__}: {value}"


def issue_text(domain, bug, names, examples, good, bad) -> str:
    package = names["pkg"]
    lines = [f"# {fill(bug.title, names)}", ""]
    lines.append(f"I'm using `{package}`, the {domain.about} library in this repository.")
    for expr, right, wrong in zip(examples, good, bad, strict=True):
        module = module_of(expr)
        lines += ["", "```python", f">>> from {package} import {module}", f">>> {expr}"]
        lines += [show(wrong, expected=False), "```", "", "I expected:", "", "```"]
        lines += [show(right, expected=True), "```"]
    if bug.note:
        lines += ["", fill(bug.note, names)]
    lines += ["", "Please fix the package (not the tests) so that it behaves as documented."]
    return "\n".join(lines) + "\n"


def unit_tests(package: str, exprs: list[str], outcomes: list) -> dict[str, str]:
    """Visible unittest files, one per module the expressions call."""
    by_module: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for expr, (kind, value) in zip(exprs, outcomes, strict=True):
        module = module_of(expr)
        function = re.findall(r"\.(\w+)\(", expr)[-1]
        counts[function] = counts.get(function, 0) + 1
        head = f"    def test_{function}_{counts[function]}(self):"
        if kind == "ok":
            body = f"        self.assertEqual({expr}, {value!r})"
        else:
            name = type(value).__name__
            body = f"        with self.assertRaises({name}):\n            {expr}"
        by_module.setdefault(module, []).append(f"{head}\n{body}\n")
    files = {"tests/__init__.py": ""}
    for module, tests in sorted(by_module.items()):
        title = "".join(part.title() for part in module.split("_"))
        text = f"import unittest\n\nfrom {package} import {module}\n\n\n"
        text += f"class {title}Test(unittest.TestCase):\n" + "\n".join(tests)
        text += '\n\nif __name__ == "__main__":\n    unittest.main()\n'
        files[f"tests/test_{module}.py"] = text
    return files


def solution_script(bug: Bug, names: dict[str, str]) -> str:
    fixes = [
        (f"{names['pkg']}/{names[f.module]}.py", fill(f.bad, names), fill(f.good, names))
        for f in bug.fixes
    ]
    return (
        "python3 - <<'REPOFIX_PATCH'\n"
        "from pathlib import Path\n"
        f"for path, bad, good in {fixes!r}:\n"
        "    text = Path(path).read_text()\n"
        "    assert text.count(bad) == 1, f'{path} has changed: the fix does not apply'\n"
        "    Path(path).write_text(text.replace(bad, good))\n"
        "REPOFIX_PATCH\n"
    )


def _bug_tests(bug, names, rng, good, bad, shown) -> tuple[list[str], list, list]:
    """Expressions whose outcomes show the bug, and their outcomes (good, bad)."""
    for _ in range(DRAWS):
        exprs = [fill(e, names) for e in bug.hidden(rng)]
        exprs = [e for e in dict.fromkeys(exprs) if e not in shown]
        if not exprs:
            continue
        right, wrong = evaluate(good, exprs), evaluate(bad, exprs)
        if any(map(differs, right, wrong)):
            return exprs, right, wrong
    raise RuntimeError(f"bug {bug.key}: no hidden test drawn tells it apart")


def build_task(domain: Domain, bug: Bug, seed: int, rng: random.Random) -> TerminalTask:
    names = draw_names(domain, rng)
    package = names["pkg"]
    good, bad = plant(domain, bug, names)
    modules = list(good)
    for _ in range(DRAWS):
        examples = [fill(e, names) for e in bug.examples(rng)]
        shown_good, shown_bad = evaluate(good, examples), evaluate(bad, examples)
        if all(map(differs, shown_good, shown_bad)):
            break
    else:
        raise RuntimeError(f"bug {bug.key}: no issue example shows it")
    hidden, hidden_good, _ = _bug_tests(bug, names, rng, good, bad, set(examples))
    visible = list(dict.fromkeys(fill(e, names) for e in domain.visible(rng)))
    visible = [e for e in visible if e not in hidden]
    visible_good, visible_bad = evaluate(good, visible), evaluate(bad, visible)
    if bug.level == "hard":  # no visible test fails: the bug is uncovered
        keep = [not differs(g, b) for g, b in zip(visible_good, visible_bad, strict=True)]
        visible = [e for e, k in zip(visible, keep, strict=True) if k]
        visible_good = [o for o, k in zip(visible_good, keep, strict=True) if k]
    else:  # the issue's first example is a failing visible test
        visible.append(examples[0])
        visible_good = evaluate(good, visible)
    for expr, outcome in zip(visible, visible_good, strict=True):
        if outcome[0] == "raise" and not hasattr(builtins, type(outcome[1]).__name__):
            raise RuntimeError(f"visible test {expr} raises a non-builtin exception")
    regression = list(dict.fromkeys(fill(e, names) for e in domain.regression(rng)))
    regression = [e for e in regression if e not in hidden and e not in examples]
    regression_good = evaluate(good, regression)

    def cases(exprs: list[str], outcomes: list) -> list[tuple[str, list]]:
        return [(e, tagged(o)) for e, o in zip(exprs, outcomes, strict=True)]

    # The other checks count only once the issue's behaviour is right: a
    # package left as it was earns nothing.
    bug_cases = cases(hidden, hidden_good)
    checks = (
        Check("hidden_bug", check_source(package, modules, BUG_LABEL, bug_cases)),
        Check(
            "hidden_regressions",
            check_source(
                package,
                modules,
                "hidden tests of the rest",
                cases(regression, regression_good),
                gate=bug_cases,
            ),
        ),
        Check(
            "visible_tests",
            check_source(
                package,
                modules,
                "the original visible tests",
                cases(visible, visible_good),
                gate=bug_cases,
            ),
        ),
    )
    files: dict[str, str | bytes] = {
        f"{package}/__init__.py": f'"""{package}: {domain.about}."""\n\n__version__ = "1.0"\n',
        **{f"{package}/{m}.py": source for m, source in bad.items()},
        **unit_tests(package, visible, visible_good),
        "README.md": (
            f"# {package}\n\nA small {domain.about} library.\n\n"
            f"Modules: {', '.join(f'`{package}.{m}`' for m in modules)}.\n\n"
            "Run the tests with `python3 -m unittest` from this folder.\n"
        ),
    }
    vocabulary = (
        "ls -R",
        "cat README.md",
        "python3 -m unittest",
        *(f"cat {package}/{m}.py" for m in modules),
        *(f"cat tests/test_{m}.py" for m in modules),
        f"grep -rn def {package}",
    )
    return TerminalTask(
        task_id=f"repofix-{bug.level}-{seed}",
        family="repofix",
        difficulty=bug.level,
        instruction=issue_text(domain, bug, names, examples, shown_good, shown_bad),
        files=files,
        checks=checks,
        solution=solution_script(bug, names),
        vocabulary=vocabulary,
    )
