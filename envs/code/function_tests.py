"""Tests for the function problems of the standard datasets, as the Python
statements Code-v0's trusted harness runs (`harness.py`), and the setup code
that defines the comparisons they call.

Each dataset's own grader compares a call's result its own way, and these
helpers follow it: APPS's ``testing_util`` turns a returned tuple into a list
and also accepts the first item of a one-item expected list; LiveCodeBench's
turns a tuple into a list; EvalPlus's compares floats with ``atol`` (and a
relative 1e-7), compares some MBPP+ results as sets or as "is not None", and
checks HumanEval/32's root by evaluating the polynomial. The harness's
``==`` compares types as well (``True`` is not ``1``), as for every Code-v0
problem. The setup runs in the sandbox, never on the host: EvalPlus's
expected results are not in its files but come from running the canonical
solution (`evalplus_setup`), which happens there too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "FUNCTION_SETUP",
    "apps_call_tests",
    "as_function_prompt",
    "evalplus_setup",
    "evalplus_tests",
    "lcb_call_tests",
    "wrap_solution_class",
]

#: Comparisons the tests call; run (with strict ``==``) before each test.
FUNCTION_SETUP = """\
import copy as _copy
import math as _math
inf = float("inf")
nan = float("nan")


def _listed(value):
    return list(value) if type(value) is tuple else value


def _apps_same(got, expected):
    got = _listed(got)
    if got == expected:
        return True
    if type(expected) is list and expected:
        if got == expected[0]:
            return True
        if type(got) is list and got and type(got[0]) is tuple:
            return [list(x) for x in got] == expected[0]
    return False


def _close(got, expected, atol):
    if type(got) not in (int, float) or type(expected) not in (int, float):
        return False
    if _math.isnan(expected):
        return _math.isnan(got)
    return abs(got - expected) <= atol + 1e-07 * abs(expected)


def _plus_same(got, expected, atol, mode):
    if mode == "set":
        try:
            return set(got) == set(expected)
        except TypeError:
            return False
    if mode == "not_none":
        return (got is None) == (expected is None)
    if got == expected:
        return True
    floats = type(expected) is float or (
        type(expected) in (list, tuple) and expected and all(type(x) is float for x in expected)
    )
    if not (floats or atol):
        return False
    if type(expected) in (list, tuple):
        return (type(got) is type(expected) and len(got) == len(expected)
                and all(_close(g, e, atol) for g, e in zip(got, expected)))
    return _close(got, expected, atol)


def _poly_root(args, root, atol):
    xs = args[0]
    if type(root) not in (int, float):
        return False
    return abs(sum(c * root ** i for i, c in enumerate(xs))) <= max(atol, 1e-06)
"""

#: MBPP+ tasks whose results EvalPlus compares as sets, or only as "is not None"
#: (evalplus/eval/_special_oracle.py).
SET_RESULTS = frozenset(
    {"similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly",
     "larg_nnum", "intersection_array", "find_dissimilar", "Diff"}
)  # fmt: skip
NOT_NONE_RESULTS = frozenset({"check_str", "text_match_three", "text_starta_endb"})


def _literal(value: Any) -> str:
    """``value`` as Python source the harness can evaluate (JSON data only)."""
    text = repr(value)
    if len(text) > 4_000_000:
        raise ValueError("a test's arguments are over 4 MB of source")
    return text


def apps_call_tests(fn_name: str, inputs: Sequence[list], outputs: Sequence[Any]) -> tuple:
    """APPS/TACO's call-based cases: ``fn_name(*args)`` against each output."""
    return tuple(
        f"assert _apps_same({fn_name}(*{_literal(args)}), {_literal(expected)})"
        for args, expected in zip(inputs, outputs, strict=True)
    )


def lcb_call_tests(fn_name: str, cases: Sequence[dict]) -> tuple:
    """LiveCodeBench's functional cases: each input line one JSON argument,
    the output one JSON value; ValueError when one is not JSON."""
    tests = []
    for case in cases:
        try:
            args = [json.loads(line) for line in case["input"].split("\n") if line.strip()]
            expected = json.loads(case["output"])
        except json.JSONDecodeError as exc:
            raise ValueError(str(exc)) from None
        tests.append(f"assert _listed({fn_name}(*{_literal(args)})) == {_literal(expected)}")
    return tuple(tests)


def evalplus_tests(task_id: str, entry: str, inputs: Sequence[Any], atol: float) -> tuple:
    """EvalPlus's cases: ``entry(*args)`` against the canonical solution's
    result on the same arguments (each call gets its own copy)."""
    if isinstance(atol, bool) or not isinstance(atol, int | float) or atol < 0:
        raise ValueError(f"atol must be a non-negative number, got {atol!r}")
    mode = "set" if entry in SET_RESULTS else "not_none" if entry in NOT_NONE_RESULTS else "exact"
    tests = []
    for args in inputs:
        if not isinstance(args, list):
            raise ValueError(f"each input must be a list of arguments, got {_literal(args)[:80]}")
        call = f"_args = {_literal(args)}\n_got = {entry}(*_copy.deepcopy(_args))\n"
        if task_id == "HumanEval/32":
            tests.append(call + f"assert _poly_root(_args, _got, {float(atol)!r})")
        else:
            tests.append(
                call + f"assert _plus_same(_got, _reference(*_copy.deepcopy(_args)), "
                f"{float(atol)!r}, {mode!r})"
            )
    return tuple(tests)


def evalplus_setup(solution: str, entry: str) -> str:
    """Setup that defines ``_reference``: the canonical solution, run in a
    namespace of its own (compiled as written, not with the tests' strict
    ``==``)."""
    return (
        FUNCTION_SETUP
        + "\n_reference_scope = {'__name__': '__reference__'}\n"
        + f"exec({solution!r}, _reference_scope)\n"
        + f"_reference = _reference_scope[{entry!r}]\n"
    )


_DEF = re.compile(r"^([ \t]*)def[ \t]+(\w+)[ \t]*\((.*?)\)(.*?):", re.MULTILINE | re.DOTALL)


def as_function_prompt(question: str, starter: str, fn_name: str) -> str:
    """What the agent reads for a call-based problem: the statement as a
    docstring, then the signature of ``fn_name`` as a plain function (a
    LeetCode ``class Solution`` method loses its class and ``self``)."""
    statement = question.strip().replace('"""', "'''")
    signature = f"def {fn_name}(...):"
    for match in _DEF.finditer(starter or ""):
        if match[2] != fn_name:
            continue
        params = [p.strip() for p in match[3].split(",")]
        if params and params[0] in ("self", "cls"):
            params = params[1:]
        signature = f"def {fn_name}({', '.join(p for p in params if p)}){match[4]}:"
        break
    return (
        f'"""\n{statement}\n\nWrite it as a top-level function {fn_name}, not a method.\n"""\n'
        f"from typing import *\n\n{signature}\n"
    )


def wrap_solution_class(solution: str, fn_name: str) -> str:
    """A reference written as LeetCode's ``class Solution`` with a top-level
    ``fn_name`` that calls its method, so the harness can call it."""
    if "class Solution" not in solution or re.search(rf"^def {fn_name}\b", solution, re.M):
        return solution
    return (
        f"from typing import *\n\n{solution.rstrip()}\n\n\n"
        f"def {fn_name}(*args):\n    return Solution().{fn_name}(*args)\n"
    )
