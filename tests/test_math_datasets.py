"""PythonMath-v0 on loaded problems: each public layout read from a file the test
writes in it, the oracle to success and a wrong answer to failure; math-verify's
equivalences and the refusals (hedges, several answers, echoes, undone
arithmetic, huge and pathological answers)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.agents import make_agent
from envgym.envs.python_math.datasets import load_problems
from envgym.envs.python_math.latex_answers import MAX_LATEX_ANSWER_CHARS, check_latex_answer
from envgym.sandbox import SandboxPool

MATH_ID = "envgym/PythonMath-v0"
_DAPO_PROMPT = (
    "Solve the following math problem step by step. The last line of your response should be "
    "of the form Answer: $Answer (without quotes) where $Answer is the answer to the problem."
    '\n\n{}\n\nRemember to put your answer on its own line after "Answer:".'
)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _json(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps(rows, indent=1))
    return path


def _parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=1)
    return path


def _gzip_jsonl(path: Path, rows: list[dict]) -> Path:
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return path


#: Per layout: the file (name, writer, rows), then (task id, gold, a wrong answer) per row.
LAYOUTS = {
    "gsm8k": (
        "gsm8k-test.jsonl",
        _jsonl,
        [
            {
                "question": "Ann has 3 boxes of 12 pens and gives away 5 pens. How many are left?",
                "answer": "She has 3 * 12 = <<3*12=36>>36 pens.\n36 - 5 = <<36-5=31>>31\n#### 31",
            }
        ],
        [("gsm8k-test:1", "31", "36")],
    ),
    "math": (
        "math-train.jsonl",
        _jsonl,
        [
            {
                "problem": "Rationalize the denominator of $\\frac{1}{\\sqrt{2}}$.",
                "solution": "Multiply by $\\frac{\\sqrt2}{\\sqrt2}$: "
                "$\\boxed{\\frac{\\sqrt{2}}{2}}$.",
                "level": "Level 2",
                "type": "Algebra",
            },
            {
                "problem": "Solve $|x - 3| \\le 2$; give an interval.",
                "solution": "So $1 \\le x \\le 5$, that is $x \\in \\fbox{[1,5]}$.",
                "level": "Level 3",
                "type": "Algebra",
            },
        ],
        [("math-train:1", "\\frac{\\sqrt{2}}{2}", "\\sqrt{2}"), ("math-train:2", "[1,5]", "(1,5)")],
    ),
    "math500": (
        "math500.json",
        _json,
        [
            {
                "problem": "What is $\\dbinom{6}{3}$?",
                "solution": "$\\dbinom{6}{3} = \\boxed{20}$.",
                "answer": "20",
                "subject": "Counting & Probability",
                "level": 1,
                "unique_id": "test/counting_and_probability/9.json",
            }
        ],
        [("math500:test/counting_and_probability/9.json", "20", "120")],
    ),
    "dapo": (
        "dapo-math-17k.parquet",
        _parquet,
        [
            {
                "data_source": "math_dapo",
                "prompt": [{"role": "user", "content": _DAPO_PROMPT.format("What is $7^2 - 1$?")}],
                "ability": "MATH",
                "reward_model": {"ground_truth": "48", "style": "rule-lighteval/MATH_v2"},
                "extra_info": {"index": "a1b2"},
            },
            {
                "data_source": "math_dapo",
                "prompt": [{"role": "user", "content": _DAPO_PROMPT.format("What is $2^5$?")}],
                "ability": "MATH",
                "reward_model": {"ground_truth": "32", "style": "rule-lighteval/MATH_v2"},
                "extra_info": {"index": "c3d4"},
            },
        ],
        [("dapo-math-17k:a1b2", "48", "49"), ("dapo-math-17k:c3d4", "32", "16")],
    ),
    "aime": (
        "aime_2024.jsonl.gz",
        _gzip_jsonl,
        [
            {
                "ID": "2024-I-1",
                "Problem": "Find the number of positive divisors of $2024$.",
                "Solution": "$2024 = 2^3 \\cdot 11 \\cdot 23$, so $4 \\cdot 2 \\cdot 2 = 16$.",
                "Answer": 16,
            }
        ],
        [("aime_2024:2024-I-1", "16", "15")],
    ),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_layout_loads_and_the_oracle_succeeds_where_a_wrong_answer_fails(tmp_path, layout):
    name, write, rows, expected = LAYOUTS[layout]
    path = write(tmp_path / name, rows)
    env = gym.make(MATH_ID, problems=str(path))
    loaded = env.unwrapped._loaded
    assert [(p.task_id, p.answer) for p in loaded] == [(t, g) for t, g, _ in expected]
    assert {p.source_format for p in loaded} == {"math" if layout == "math500" else layout}
    oracle = make_agent("oracle", env)
    for task_id, _, wrong in expected:
        obs, info = env.reset(options={"task_id": task_id})
        assert info["task_id"] == task_id and "Answer:" not in obs  # DAPO's own format dropped
        assert "LaTeX" not in obs and "simplest form" in info["system_prompt"]
        _, reward, terminated, _, info = env.step(oracle.act(obs, info))
        assert (reward, terminated, info["success"]) == (1.0, True, True)
        env.reset(options={"task_id": task_id})
        _, reward, terminated, _, info = env.step(f"\\boxed{{{wrong}}}")
        assert (reward, terminated, info["success"]) == (0.0, True, False)


def test_metadata_ids_and_sources(tmp_path):
    for layout in ("gsm8k", "math", "dapo"):
        name, write, rows, _ = LAYOUTS[layout]
        write(tmp_path / name, rows)
    math = load_problems(tmp_path / "math-train.jsonl")
    assert [(p.level, p.subject) for p in math] == [("2", "Algebra"), ("3", "Algebra")]
    folder = load_problems(tmp_path)
    assert len(folder) == 5 and load_problems(str(tmp_path / "*.jsonl")) == folder[2:]
    both = [tmp_path / "gsm8k-test.jsonl", tmp_path / "dapo-math-17k.parquet"]
    assert [p.task_id for p in load_problems(both)][0] == "gsm8k-test:1"
    # An AIME file that numbers the problem in "problem" and words it in "question".
    numbered = _jsonl(
        tmp_path / "aime25.jsonl",
        [{"id": "AIME25I-1", "year": 2025, "problem": 1, "question": "Find 3+4.", "answer": "7"}],
    )
    (aime,) = load_problems(numbered)
    assert (aime.task_id, aime.text) == ("aime25:AIME25I-1", "Find 3+4.")
    numbered.unlink()
    # Draws are seeded; the same seed gives the same problem.
    env = gym.make(MATH_ID, problems=str(tmp_path))
    assert env.reset(seed=4)[0] == env.reset(seed=4)[0]
    with pytest.raises(ValueError, match=r"unknown task_id 'nope'.*FILESTEM:ID"):
        env.reset(options={"task_id": "nope"})


def test_math_as_published_one_indented_json_file_per_problem(tmp_path):
    """Hendrycks' MATH: ``{split}/{subject}/{n}.json``, each one object; ids keep the path."""
    for split, subject, answer in (("train", "algebra", "4"), ("test", "geometry", "\\pi")):
        folder = tmp_path / "MATH" / split / subject
        folder.mkdir(parents=True)
        row = {
            "problem": f"A {subject} problem.",
            "level": "Level 1",
            "type": subject.title(),
            "solution": f"So it is $\\boxed{{{answer}}}$.",
        }
        (folder / "1.json").write_text(json.dumps(row, indent=4))
    problems = load_problems(tmp_path / "MATH")
    assert [(p.task_id, p.answer, p.subject) for p in problems] == [
        ("test/geometry/1:1", "\\pi", "Geometry"),
        ("train/algebra/1:1", "4", "Algebra"),
    ]
    # JSON lines in a file named .json (some exports do this) read as JSONL.
    lines = tmp_path / "lines.json"
    lines.write_text('{"problem": "p1", "answer": "1"}\n{"problem": "p2", "answer": "2"}\n')
    assert [p.task_id for p in load_problems(lines)] == ["lines:1", "lines:2"]


def test_unknown_layouts_and_bad_rows_are_clear_errors(tmp_path):
    odd = _jsonl(tmp_path / "odd.jsonl", [{"prompt_text": "2+2?", "label": "4"}])
    with pytest.raises(ValueError, match=r"odd.jsonl, line 1: not a math problem layout.*"):
        load_problems(odd)
    with pytest.raises(ValueError, match=r"fields: \['label', 'prompt_text'\].*gsm8k.*format="):
        load_problems(odd)
    gsm = _jsonl(tmp_path / "g.jsonl", [{"question": "1+1?", "answer": "2"}])
    with pytest.raises(ValueError, match=r'not a gsm8k row: the "answer" has no "#### ANSWER"'):
        load_problems(gsm, format="gsm8k")
    boxless = _jsonl(tmp_path / "m.jsonl", [{"problem": "p", "solution": "no box", "level": 1}])
    with pytest.raises(ValueError, match=r"m.jsonl, line 1: not a math row.*no \\boxed"):
        load_problems(boxless)
    twice = _jsonl(tmp_path / "t.jsonl", [{"id": 1, "problem": "p", "answer": "1"}] * 2)
    with pytest.raises(ValueError, match=r"task id 't:1' is also the id of .*t.jsonl, line 1"):
        load_problems(twice)
    broken = tmp_path / "b.jsonl"
    broken.write_text('{"question": "1+1?", "answer": "#### 2"}\n{oops\n')
    with pytest.raises(ValueError, match=r"b.jsonl, line 2: not a JSON line"):
        load_problems(broken)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        load_problems(str(tmp_path / "none-*.parquet"))
    with pytest.raises(ValueError, match="unknown math data format 'csv'"):
        gym.make(MATH_ID, problems=str(gsm), format="csv")
    with pytest.raises(ValueError, match="format= names the layout of problems="):
        gym.make(MATH_ID, format="gsm8k")


#: (gold, answer) pairs math-verify must find equal.
EQUAL = [
    ("\\frac{1}{2}", "0.5"),
    ("0.5", "\\dfrac12"),
    ("\\frac{3}{4}", "3/4"),
    ("-\\frac{3}{4}", "-0.75"),
    ("2\\sqrt{2}", "2 \\sqrt 2"),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"),
    ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}"),
    ("[2, 5)", "[2,5)"),
    ("(-\\infty, 3]", "(-\\infty,3]"),
    ("\\{1, 2\\}", "\\{2, 1\\}"),
    ("5", "5 \\text{ cm}"),
    ("18", "\\$18"),
    ("50", "50\\%"),
    ("12.5\\%", "12.5"),
    ("30", "30^\\circ"),
    ("1000", "1,000"),
    ("1234567", "1{,}234{,}567"),
    ("-3", "-3"),
    ("1500", "1.5 \\times 10^{3}"),
    ("0.00012", "1.2e-4"),
    ("5", "x = 5"),
    ("x^2+2x+1", "1+2x+x^2"),
    ("\\frac{\\pi}{6}", "\\frac{1}{6}\\pi"),
    ("72", "72.0"),
    ("\\text{Monday}", "\\text{Monday}"),
]
#: Pairs that must not be equal.
UNEQUAL = [
    ("-3", "3"),
    ("[2,5)", "[2,5]"),
    ("\\frac13", "0.333"),
    ("50", "0.5"),
    ("2\\sqrt2", "2\\sqrt3"),
    ("1000", "100"),
    ("\\text{Monday}", "\\text{Tuesday}"),
    ("x^2+2x+1", "x^2+2x+2"),
]
#: (gold, answer, what the refusal says): never paid, whatever their value.
REFUSED = [
    ("5", "5 or 6", "hedges"),
    ("5", "5 \\pm 1", "hedges"),
    ("5", "\\approx 5", "hedges"),
    ("5", "4, 5", "several values"),
    ("5", "\\{4, 5\\}", "several values"),
    ("5", "4 \\\\ 5", "several values"),
    ("5", "4 = 5", "an equation"),
    ("5", "x = 4 = 5", "an equation"),
    ("\\frac{5}{6}", "\\frac{2}{4}+\\frac{1}{3}", "arithmetic undone"),
    ("1024", "2^{10}", "arithmetic undone"),
    ("2\\sqrt{2}", "\\sqrt{8}", "arithmetic undone"),
    ("x+1", "\\frac{(x-1)(x+1)}{x-1}", "no simpler than the question"),
    ("3", "\\log_2 8", "expression to evaluate"),
    ("10", "\\binom{5}{2}", "expression to evaluate"),
    ("120", "5!", "expression to evaluate"),
    ("5", "\\boxed{5}", "no \\$, \\\\boxed"),
    ("5", "5$ or $6", "no \\$, \\\\boxed"),
    ("42", "the answer is clearly 42", "words, not a value"),
    ("5", "5" * (MAX_LATEX_ANSWER_CHARS + 1), "longer than"),
]


def test_equivalent_answers_match_and_others_do_not():
    question = "Compute the value."
    for gold, answer in EQUAL:
        assert check_latex_answer(answer, gold, question).correct is True, (gold, answer)
    for gold, answer in UNEQUAL:
        assert check_latex_answer(answer, gold, question).correct is False, (gold, answer)


def test_checks_run_from_threads():
    """math-verify's own timeouts are signals, which only the main thread may set; the
    env checks in a worker process, so envs stepped on threads (the remote server's,
    a vector env's) check answers too."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        verdicts = list(pool.map(lambda a: check_latex_answer(a, "\\frac{1}{2}", "q"), EQ_HALF))
    assert [v.correct for v in verdicts] == [True, True, False, None]


EQ_HALF = ["0.5", "\\dfrac{2}{4}", "0.6", "0.5 or 0.6"]


def test_hedges_lists_and_unevaluated_answers_are_refused():
    for gold, answer, why in REFUSED:
        verdict = check_latex_answer(answer, gold, "Compute the value.")
        assert verdict.correct is None and why.replace("\\", "") in verdict.reason.replace(
            "\\", ""
        ), (gold, answer, verdict)


def test_echoing_the_question_earns_nothing_but_the_gold_may_stand_in_it():
    question = "Expand $(x + 1)^2$."
    for echo in ("(x+1)^2", "(x + 1)^{2}", "y = (x+1)^2"):
        verdict = check_latex_answer(echo, "x^2+2x+1", question)
        assert verdict.correct is None and "copies the question" in verdict.reason
    # Where the gold is an equation, one side copied from the question is an echo too.
    verdict = check_latex_answer("y = (x+1)^2", "y = x^2+2x+1", "Expand $y = (x+1)^2$.")
    assert verdict.correct is None and "copies the question" in verdict.reason
    verdict = check_latex_answer("(x+1)^2 = x^2+2x+1", "x^2+2x+1", question)
    assert verdict.correct is None and "equation" in verdict.reason
    assert check_latex_answer("x^2+2x+1", "x^2+2x+1", question).correct is True
    # A number the question mentions may be the answer.
    assert check_latex_answer("-2", "-2", "Solve $x + 2 = 0$; is $x = -2$?").correct is True


def test_a_pathological_answer_is_refused_in_time_and_the_next_check_works(tmp_path):
    path = _jsonl(tmp_path / "p.jsonl", [{"problem": "What is $3^3$?", "answer": "27"}])
    env = gym.make(MATH_ID, problems=str(path), answer_timeout_s=1.0)
    env.reset(seed=0)
    # A power of plain numbers with a nine-digit exponent: sympy's big integers, in C.
    obs, reward, terminated, _, info = env.step("\\boxed{3^{123456789}}")
    assert not terminated and reward == pytest.approx(-0.1) and info["action_valid"] is False
    assert "not read" in obs
    _, reward, terminated, _, info = env.step("\\boxed{27}")
    assert (reward, terminated, info["success"]) == (1.0, True, True)
    verdict = check_latex_answer("9^{98765432}", "27", "q", timeout_s=0.5)
    assert verdict.correct is None and "took over 0.5 s" in verdict.reason


def test_the_python_tool_still_runs_on_loaded_problems(tmp_path):
    name, write, rows, expected = LAYOUTS["dapo"]
    path = write(tmp_path / name, rows)
    with SandboxPool(size=1, backend="bwrap") as pool:
        env = gym.make(MATH_ID, problems=str(path), sandbox_pool=pool)
        obs, info = env.reset(options={"task_id": expected[0][0]})
        assert info["tools"][0]["function"]["name"] == "run_python"
        obs, reward, terminated, _, info = env.step("<python>print(7**2 - 1)</python>")
        assert "48" in obs and (reward, terminated, info["sandbox_error"]) == (0.0, False, None)
        _, reward, _, _, info = env.step("<answer>48</answer>")
        assert reward == 1.0 and info["privileged"] == {"answer": "48"}


def test_without_math_verify_the_error_names_the_math_extra(tmp_path):
    path = _jsonl(tmp_path / "p.jsonl", [{"problem": "What is $3^3$?", "answer": "27"}])
    code = (
        "import sys; sys.modules['math_verify'] = None\n"
        "import gymnasium as gym, envgym\n"
        "from envgym.extras import MissingExtra\n"
        "gym.make('envgym/PythonMath-v0')\n"  # generated problems need no extra
        f"try:\n    gym.make('envgym/PythonMath-v0', problems={str(path)!r})\n"
        "except MissingExtra as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "install the math extra: pip install 'envgym[math]'" in out.stdout
