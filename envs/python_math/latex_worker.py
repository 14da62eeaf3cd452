"""The math-verify side of checking a LaTeX answer, run in its own process.

`latex_answers.LatexChecker` starts ``python -m
envgym.envs.python_math.latex_worker`` and sends one JSON line per check,
``{"gold": ..., "answer": ...}`` (both already bounded and normalised by
`latex_answers`); this process answers ``{"verdict": "correct" | "wrong" |
"refused", "reason": ...}``. sympy can run for ever on a hostile expression
(a tower of powers is big-integer arithmetic in C, which no signal interrupts),
so the parent bounds each check by the clock and kills this process when it is
late; here the address space is capped too, so such an expression ends in a
MemoryError rather than in swap.

The rules applied here, on the parsed expressions:

- an answer must parse as math;
- a single value where the gold is a single value: a set, a tuple, an interval
  or a list of values answers a question with one answer only when the gold
  is one too (a hedge such as ``1, 2`` is several answers);
- no arithmetic on plain numbers left undone: an operation whose operands are
  all numbers (``2 + 3``, ``2^{10}``, ``\\sqrt{8}``, ``\\frac{1}{2} +
  \\frac{1}{3}``, ``\\binom{5}{2}``, ``\\log_2 8``) and that sympy would
  evaluate is not a final value; a fraction ``\\frac{p}{q}``, a sign, and a
  radical in simplest form (``2\\sqrt{2}``) are. The gold answer sets the bar:
  an answer may leave as many such operations as its gold does;
- no more than `EXTRA_OPERATIONS` operations beyond the gold's (sympy's
  ``count_ops``): an expression as large as the question's, reworked, is not
  its simplified value;
- then math-verify's ``verify(gold, answer)`` decides equivalence.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from functools import lru_cache
from typing import Any

#: Operations (sympy's ``count_ops``) an answer may have beyond its gold's: room to write
#: a value another way (``\\frac{1}{2}\\sqrt{3}`` for ``\\frac{\\sqrt{3}}{2}``), not to hand in
#: the question's expression reworked (``\\frac{(x-1)(x+1)}{x-1}`` for ``x + 1``).
EXTRA_OPERATIONS = 2
#: The most memory this process may map: room for sympy, not for a tower of powers.
MEMORY_LIMIT_BYTES = 2 * 1024**3


def _parse(text: str) -> Any:
    """The sympy value of a LaTeX answer, or None when math-verify reads none."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    configs = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
    parsed = parse(f"${text}$", extraction_config=configs, parsing_timeout=None)
    return parsed or None


@lru_cache(maxsize=4096)
def _gold(text: str) -> Any:
    return _parse(text)


def _is_collection(value: Any) -> bool:
    from sympy import FiniteSet, MatrixBase, Set, Tuple

    return isinstance(value, FiniteSet | MatrixBase | Set | Tuple | list | tuple)


def _undone(expr: Any) -> int:
    """How many operations on plain numbers in `expr` sympy would still evaluate."""
    from sympy import Basic, Integer, Number, Pow

    if not isinstance(expr, Basic):
        return 0
    count = 0
    stack = [expr]
    while stack:
        node = stack.pop()
        args = getattr(node, "args", ())
        if not args or not isinstance(node, Basic):
            continue
        stack.extend(a for a in args if isinstance(a, Basic))
        if not all(isinstance(a, Number) for a in args):
            continue
        if isinstance(node, Pow) and args[1] == -1 and isinstance(args[0], Integer):
            continue  # 1/q: a fraction's denominator
        if len(args) == 2 and -1 in args and node.is_Mul:
            continue  # -x: a sign
        try:
            evaluated = node.func(*args)
        except Exception:
            continue
        if evaluated != node:
            count += 1
    return count


def _operations(expr: Any) -> int:
    from sympy import Basic, count_ops

    if not isinstance(expr, Basic):
        return 0
    try:
        return int(count_ops(expr))
    except Exception:
        return 0


def judge(gold: str, answer: str) -> dict[str, str]:
    """The verdict on one answer against its gold, as the parent reads it."""
    from math_verify import verify

    gold_parsed = _gold(gold)
    if gold_parsed is None:
        # A gold math-verify cannot read (a name, a word): only its own text matches.
        same = " ".join(answer.split()) == " ".join(gold.split())
        return {"verdict": "correct" if same else "wrong", "reason": "compared as text"}
    parsed = _parse(answer)
    if parsed is None:
        return {"verdict": "refused", "reason": "it could not be read as math"}
    gold_value, value = gold_parsed[0], parsed[0]
    if _is_collection(value) and not _is_collection(gold_value):
        return {
            "verdict": "refused",
            "reason": "it holds several values (a set, a list, a tuple or an interval); "
            "give one final value",
        }
    if _undone(value) > _undone(gold_value):
        return {
            "verdict": "refused",
            "reason": "it leaves arithmetic undone (an expression, not its value); "
            "give the simplified value",
        }
    if _operations(value) > _operations(gold_value) + EXTRA_OPERATIONS:
        return {
            "verdict": "refused",
            "reason": "it is an expression no simpler than the question's; give the simplified "
            "value",
        }
    correct = verify(gold_parsed, parsed, timeout_seconds=None)
    return {"verdict": "correct" if correct else "wrong", "reason": "checked with math-verify"}


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    import logging

    logging.disable(logging.CRITICAL)  # math-verify logs every expression it cannot parse
    # Replies go to the pipe the parent reads; anything a library prints goes to stderr,
    # so a stray print cannot corrupt a reply.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _parse("1")  # import and warm math-verify before saying ready
    out.write('{"ready": true}\n')
    out.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            reply = judge(str(request["gold"]), str(request["answer"]))
        except MemoryError:
            reply = {"verdict": "refused", "reason": "checking it ran out of memory"}
        except Exception as exc:  # a sympy failure on a hostile expression is a refusal
            reply = {
                "verdict": "refused",
                "reason": f"it could not be checked ({type(exc).__name__})",
            }
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
