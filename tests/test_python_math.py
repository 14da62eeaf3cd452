"""PythonMath-v0: exact answers at every kind and level, answer reading, code runs."""

from __future__ import annotations

import ast
import itertools
import math
import operator
import pickle
import re
from fractions import Fraction

import pytest
from gymnasium.utils.env_checker import check_env

from envgym.envs.python_math import PythonMathEnv
from envgym.envs.python_math.answers import AnswerError, read_answer
from envgym.envs.python_math.generators import DIFFICULTIES, KINDS, make_problem, problem_from_id
from envgym.envs.python_math.oracle import PythonMathOracle
from envgym.sandbox import SandboxPool
from envgym.sandbox import pool as pool_module


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(size=2, backend="bwrap") as pool:
        yield pool


def _play(env: PythonMathEnv, task_id: str, reply: str):
    env.reset(options={"task_id": task_id})
    return env.step(reply)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_oracle_solves_every_kind_and_level(kind: str, difficulty: str) -> None:
    env = PythonMathEnv(difficulty=difficulty)
    oracle = PythonMathOracle(env)
    for seed in range(25):
        obs, info = env.reset(options={"task_id": f"{kind}-{difficulty}-{seed}"})
        answer = env.problem.answer
        assert isinstance(answer, int | Fraction) and not isinstance(answer, bool)
        assert str(answer) not in ("", "0/1")
        oracle.reset()
        _, reward, terminated, _, info = env.step(oracle.act(obs, info))
        assert (reward, terminated, info["success"]) == (1.0, True, True), env.task_id


def test_random_resets_cover_the_kinds_and_the_oracle_wins() -> None:
    before = pool_module._shared  # another test may have started this process's pool
    env = PythonMathEnv(difficulty="medium")
    oracle = PythonMathOracle(env)
    kinds = set()
    for seed in range(120):
        obs, info = env.reset(seed=seed)
        kinds.add(env.problem.kind)
        assert env.step(oracle.act(obs, info))[1] == 1.0
    assert kinds == set(KINDS)
    assert pool_module._shared is before, "no sandbox starts without a code run"


def test_wrong_answers_score_zero_and_end_the_episode() -> None:
    env = PythonMathEnv(difficulty="hard")
    for seed in range(20):
        env.reset(seed=seed)
        wrong = env.problem.answer + 1
        obs, reward, terminated, _, info = env.step(f"\\boxed{{{wrong}}}")
        assert (reward, terminated, info["success"]) == (0.0, True, False)
        assert info["reward_components"] == {"correct": 0.0}
        assert "not correct" in obs


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,000", 1000),
        ("1000.0", 1000),
        ("3/4", Fraction(3, 4)),
        ("0.75", Fraction(3, 4)),
        ("-17", -17),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("-\\tfrac{3}{4}", Fraction(-3, 4)),
        ("\\dfrac{-3}{4}", Fraction(-3, 4)),
        ("1\\,000", 1000),
        ("-3/4", Fraction(-3, 4)),
        ("\\frac{3}{4}", Fraction(3, 4)),
        ("-\\dfrac{7}{2}", Fraction(-7, 2)),
        ("x = 12", 12),
        ("$1,234,567$", 1234567),
    ],
)
def test_answers_are_read_exactly(text: str, value: int | Fraction) -> None:
    assert read_answer(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "abc",
        "",
        "1/0",
        "9^9^9",
        "10^100000",
        "__import__('os')",
        "0.3333",
        "1e5",
        "x",
        # Expressions are not answers, however simply they evaluate.
        "2^10",
        "3/4 + 1/4",
        "2 \\cdot 3^2",
        "(3/4)",
        "1,00",
        "--5",
    ],
)
def test_unreadable_or_inexact_answers(text: str) -> None:
    if text == "0.3333":  # a decimal is read exactly: it is not 1/3
        assert read_answer(text) != Fraction(1, 3)
        return
    with pytest.raises(AnswerError):
        read_answer(text)


def test_normalised_forms_score_in_the_env() -> None:
    env = PythonMathEnv()
    task = "dice-easy-0"  # two dice sum to 5: 1/9
    assert problem_from_id(task).answer == Fraction(1, 9)
    for reply in (
        "\\boxed{1/9}",
        "<answer>4/36</answer>",
        "\\boxed{\\frac{1}{9}}",
        "\\boxed{2/18}",
    ):
        assert _play(env, task, reply)[1] == 1.0, reply
    assert _play(env, task, "\\boxed{0.111}")[1] == 0.0
    task = "binomial-easy-0"  # C(7, 5) = 21
    for reply in ("\\boxed{21}", "\\boxed{21.0}", "The answer is \\boxed{21}."):
        assert _play(env, task, reply)[1] == 1.0, reply
    assert _play(env, task, "\\boxed{2^4 + 5}")[1] == pytest.approx(-0.1)


def test_boxing_the_questions_own_expression_earns_nothing() -> None:
    # Arithmetic asks for an expression's value and polynomial for p at a point:
    # the expression itself, or the polynomial with the point put in, is not an answer.
    env = PythonMathEnv()
    copied = 0
    for difficulty in DIFFICULTIES:
        for seed in range(30):
            for kind in ("arithmetic", "polynomial"):
                problem = make_problem(kind, difficulty, seed)
                if (
                    kind == "arithmetic"
                    and problem.text.startswith("Compute ")
                    and "sum" not in problem.text
                ):
                    echo = problem.text[len("Compute ") :].split(".")[0]
                elif kind == "polynomial":
                    poly, at = re.match(
                        r"Let p\(x\) = (.*)\. What is p\((.*?)\)\?", problem.text
                    ).groups()
                    echo = re.sub(r"x", f"({at})", re.sub(r"(\d)x", r"\1*x", poly))
                else:
                    continue
                assert _evaluate(echo) == problem.answer  # the echo has the answer's value
                _, reward, terminated, _, info = _play(env, problem.task_id, f"\\boxed{{{echo}}}")
                assert reward <= 0 and not info["success"] and not terminated, echo
                copied += 1
    assert copied > 60


def test_no_problem_pays_for_a_number_copied_from_its_text() -> None:
    # "7 of 8 people chosen" has 8 ways: such draws are drawn again, so boxing
    # any number the question shows is never the answer.
    env = PythonMathEnv()
    numbers = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")
    for kind, difficulty, seed in itertools.product(sorted(KINDS), DIFFICULTIES, range(40)):
        problem = make_problem(kind, difficulty, seed)
        for number in set(numbers.findall(problem.text)):
            _, reward, *_ = _play(env, problem.task_id, f"\\boxed{{{number}}}")
            assert reward <= 0, (problem.text, number)


def test_an_unparsable_reply_costs_the_format_penalty_and_a_turn() -> None:
    env = PythonMathEnv()
    env.reset(seed=0)
    for reply in ("I think it is 5", "\\boxed{five}", "<python></python>"):
        obs, reward, terminated, _, info = env.step(reply)
        assert reward == pytest.approx(-0.1) and not terminated
        assert info["action_valid"] is False and info["reward_components"]["format"] == -0.1
    assert env.turn == 3
    _, reward, terminated, truncated, _ = env.step("nothing")
    assert truncated and not terminated  # easy: 4 turns


def test_python_runs_return_output_and_count_cost(pool: SandboxPool) -> None:
    env = PythonMathEnv(difficulty="hard", sandbox_pool=pool)
    obs, info = env.reset(options={"task_id": "modular_power-hard-7"})
    assert info["cost"] == {"executions": 0, "sandbox_seconds": 0.0}
    assert info["tools"][0]["function"]["name"] == "run_python"
    obs, reward, terminated, _, info = env.step("<python>print(6 * 7)</python>")
    assert "<output>" in obs and "42" in obs and "exit status: 0" in obs
    assert (reward, terminated, info["sandbox_error"]) == (0.0, False, None)
    assert info["cost"]["executions"] == 1 and info["cost"]["sandbox_seconds"] > 0
    # The agent can compute the hard answer with code, then box it.
    a, e, m = (int(t) for t in _numbers(env.problem.text))
    call = (
        '<tool_call>{"name": "run_python", "arguments": {"code": '
        f'"import sys\\nprint(pow({a}, {e}, {m})); print(1/0)"}}}}</tool_call>'
    )
    obs, _, _, _, info = env.step(call)
    assert str(env.problem.answer) in obs and "ZeroDivisionError" in obs and "exit status: 1" in obs
    assert info["sandbox_error"] is None and info["cost"]["executions"] == 2
    fenced = "<python>\n```python\nprint('fenced')\n```\n</python>"
    assert "fenced" in env.step(fenced)[0]
    answer = _numbers(obs.split("stdout:")[1])[0]
    assert env.step(f"\\boxed{{{answer}}}")[1] == 1.0


def _numbers(text: str) -> list[str]:
    import re

    return re.findall(r"\d+", text)


def test_timeout_and_memory_bomb_are_feedback_and_the_next_run_works(pool: SandboxPool) -> None:
    env = PythonMathEnv(difficulty="hard", timeout_s=1.0, memory_mb=128, sandbox_pool=pool)
    env.reset(seed=1)
    obs, reward, terminated, _, info = env.step("<python>while True: pass</python>")
    assert info["sandbox_error"] == "timeout" and "time limit" in obs and not terminated
    bomb = "<python>x = []\nwhile True:\n    x.append(bytearray(10**7))</python>"
    obs, _, _, _, info = env.step(bomb)
    assert info["sandbox_error"] == "memory" and "memory" in obs
    obs, _, _, _, info = env.step("<python>print('still here')</python>")
    assert "still here" in obs and info["sandbox_error"] is None
    assert info["cost"]["executions"] == 3


def test_no_working_sandbox_is_feedback_not_an_exception() -> None:
    class BrokenPool:
        def lease(self):
            raise RuntimeError("all sandboxes are gone")

    env = PythonMathEnv(sandbox_pool=BrokenPool())
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("<python>print(1)</python>")
    assert info["sandbox_error"] == "sandbox" and "all sandboxes are gone" in obs
    assert not terminated and reward == 0.0


def test_task_ids_replay_and_bad_ids_are_refused() -> None:
    env = PythonMathEnv(difficulty="hard")
    obs, info = env.reset(seed=11)
    other = PythonMathEnv()  # another level: the id says which problem
    again, info2 = other.reset(options={"task_id": info["task_id"]})
    assert again == obs and info2["privileged"] == info["privileged"]
    assert make_problem("urn", "hard", 5) == make_problem("urn", "hard", 5)
    for bad in (
        "urn-hard",
        "urn-extreme-1",
        "nosuch-easy-1",
        "urn-hard-99999999999",
        12,
        "x" * 10**6,
    ):
        with pytest.raises(ValueError):
            env.reset(options={"task_id": bad})


def test_same_seed_same_problem_and_snapshots_pickle() -> None:
    a, b = PythonMathEnv(difficulty="hard"), PythonMathEnv(difficulty="hard")
    assert a.reset(seed=5)[0] == b.reset(seed=5)[0]
    a.step("no answer here")
    snap = pickle.loads(pickle.dumps(a.unwrapped.snapshot()))
    a.step(f"\\boxed{{{a.problem.answer}}}")
    a.restore(snap)
    assert a.turn == 1 and not a._episode_over
    assert a.step(f"\\boxed{{{a.problem.answer}}}")[1] == 1.0


def test_check_env_passes() -> None:
    check_env(PythonMathEnv().unwrapped, skip_render_check=True)


def test_long_output_comes_back_cut_to_a_few_kilobytes(pool: SandboxPool) -> None:
    env = PythonMathEnv(sandbox_pool=pool)
    env.reset(seed=2)
    obs, _, _, _, info = env.step("<python>print('y' * 10**6)\nprint('END')</python>")
    assert len(obs) < 5000 and "characters cut" in obs and obs.rstrip().endswith("</output>")
    assert "END" in obs and info["sandbox_error"] is None
    snap = pickle.loads(pickle.dumps(env.unwrapped.snapshot()))  # the pool is not state
    env.restore(snap)
    assert env.sandbox_pool is pool and env.executions == 1


# Independent checks: each answer recomputed from the problem's text alone, by another route.
def _evaluate(expression: str) -> Fraction:
    """A test-side evaluator of + - * / ^ over exact fractions (the env reads values only)."""
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}
    ops |= {ast.Div: operator.truediv, ast.Pow: operator.pow}

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant):
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp):
            return -value(node.operand) if isinstance(node.op, ast.USub) else value(node.operand)
        left, right = value(node.left), value(node.right)
        return ops[type(node.op)](left, int(right) if isinstance(node.op, ast.Pow) else right)

    return value(ast.parse(expression.replace("^", "**"), mode="eval").body)


def _substitute(expression: str, value: str) -> Fraction:
    expression = re.sub(r"(\d)([xk])", r"\1*\2", expression)
    return _evaluate(re.sub(r"[xk]", f"({value})", expression))


def _check_by_text(kind: str, text: str, answer: int | Fraction) -> bool | None:
    nums = [int(n) for n in re.findall(r"-?\d+", text)]
    if kind == "arithmetic" and text.startswith("Compute ") and "sum" not in text:
        return _evaluate(text[len("Compute ") :].split(".")[0]) == answer
    if kind == "polynomial":
        poly, at = re.match(r"Let p\(x\) = (.*)\. What is p\((.*?)\)\?", text).groups()
        return _substitute(poly, at) == answer
    if kind == "linear_equation":
        left, right = re.match(r"Solve for x: (.*) = (.*?)\.", text).groups()
        value = (
            f"{answer.numerator}/{answer.denominator}"
            if isinstance(answer, Fraction)
            else str(answer)
        )
        return _substitute(left, value) == _substitute(right, value)
    if kind == "modular_power":
        return pow(nums[0], nums[1], nums[2]) == answer
    if kind == "prime_count" and nums[-1] < 10_000:
        low = 2 if len(nums) == 1 else nums[0]
        primes = [
            p for p in range(low, nums[-1] + 1) if all(p % d for d in range(2, math.isqrt(p) + 1))
        ]
        return len(primes) == answer
    if kind == "digit_sum":
        value = nums[0] * nums[1] if " * " in text else nums[0] ** nums[1]
        return sum(int(d) for d in str(value)) == answer
    if kind == "dice" and text.startswith(("Two", "Three")):
        n = 2 if text.startswith("Two") else 3
        rolls = list(itertools.product(range(1, 7), repeat=n))
        target = nums[-1]
        hit = [r for r in rolls if (sum(r) >= target if "at least" in text else sum(r) == target)]
        return Fraction(len(hit), len(rolls)) == answer
    if kind == "urn" and "red and" in text:
        red, blue, draw = nums[0], nums[1], 2 if "Two are" in text else nums[2]
        balls = ["r"] * red + ["b"] * blue
        draws = list(itertools.combinations(range(red + blue), draw))
        want = draw if "both" in text else nums[3]
        hits = sum(1 for d in draws if sum(balls[i] == "r" for i in d) == want)
        return Fraction(hits, len(draws)) == answer
    if kind == "counting" and "subsets" in text and nums[2] <= 18:
        n, r, m = nums[2], nums[3], nums[4]
        subsets = itertools.chain.from_iterable(
            itertools.combinations(range(1, n + 1), size) for size in range(n + 1)
        )
        return sum(1 for s in subsets if sum(s) % m == r) == answer
    if kind == "binomial" and "remainder" not in text:
        n, k = (nums[1], nums[0]) if "chosen" in text else (nums[0], nums[1])
        return math.factorial(n) // (math.factorial(k) * math.factorial(n - k)) == answer
    if kind == "counting" and "divisible" in text:  # inclusion-exclusion
        n, a, b = nums[1], nums[2], nums[3]
        return n // a + n // b - n // math.lcm(a, b) == answer
    if kind == "gcd_lcm" and "greatest" in text:
        return math.gcd(nums[0], nums[1]) == answer
    return None  # no second route for this one


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_answers_agree_with_a_second_computation_from_the_text(difficulty: str) -> None:
    checked = set()
    for kind in sorted(KINDS):
        for seed in range(15):
            problem = make_problem(kind, difficulty, seed)
            verdict = _check_by_text(kind, problem.text, problem.answer)
            if verdict is not None:
                assert verdict, problem.task_id
                assert not _check_by_text(kind, problem.text, problem.answer + 1), problem.task_id
                checked.add(kind)
    assert len(checked) >= {"easy": 11, "medium": 9, "hard": 5}[difficulty], checked


def test_no_sandbox_backend_at_all_is_feedback(monkeypatch: pytest.MonkeyPatch) -> None:
    import envgym.sandbox

    def refuse(*args, **kwargs):
        raise envgym.sandbox.SandboxError("no isolating sandbox works here")

    monkeypatch.setattr(envgym.sandbox.pool, "SandboxPool", refuse)
    monkeypatch.setattr(envgym.sandbox.pool, "_shared", None)
    env = PythonMathEnv()
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("<python>print(1)</python>")
    assert info["sandbox_error"] == "unavailable" and "no isolating sandbox" in obs
    assert not terminated and env.step(f"\\boxed{{{env.problem.answer}}}")[1] == 1.0
