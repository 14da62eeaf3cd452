"""Code-v0's loaders of the standard code datasets (envs/code/loaders.py): each
format read from a small file written in its layout (`code_format_files`),
its oracle paid and a wrong solution not, through ``gym.make("envgym/Code-v0",
problems=PATH)`` on bwrap and on docker; bad files refused with the file,
the line and what to do; parquet streamed; LiveCodeBench's pickles read
without unpickling."""

from __future__ import annotations

import base64
import importlib.util
import json
import pickle
import zlib

import gymnasium as gym
import pytest
from code_format_files import DATA, FILES, RIGHT, WRONG, lcb_compress, write_format
from sandbox_backends import require_backend

from envgym.envs.code.lcb_private import decode_private_cases, pickled_string
from envgym.envs.code.loaders import LoadReport, load_problems
from envgym.envs.code.oracle import CodeOracle
from envgym.sandbox import Limits, SandboxPool

#: Whether this Code-v0 grades stdin/stdout programs (the stdio kind's grader).
GRADES_STDIO = importlib.util.find_spec("envgym.envs.code.stdio") is not None
FORMAT_OF = {
    "apps.jsonl": "apps",
    "taco.json": "apps",
    "codecontests.parquet": "codecontests",
    "livecodebench.jsonl": "livecodebench",
    "mbpp.jsonl": "mbpp",
    "mbpp-sanitized.parquet": "mbpp",
    "humaneval.jsonl": "humaneval",
    "mbppplus.jsonl.gz": "evalplus",
    "humanevalplus.jsonl": "evalplus",
}


def _load(path, **kwargs):
    return list(load_problems(path, **kwargs))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formats")
    return {name: write_format(name, folder / name) for name in FILES}


# ------------------------------------------------------------------- loading
def test_each_format_loads_with_its_fields_mapped(written):
    by_id = {}
    for name, path in written.items():
        report = LoadReport()
        problems = _load(path, report=report)
        assert len(problems) == len(FILES[name]), name
        assert dict(report.loaded) == {FORMAT_OF[name]: len(problems)}
        by_id |= {p.task_id: p for p in problems}
    apps = by_id["apps/1"]
    assert apps.kind == "stdio" and apps.difficulty == "medium"
    cases = apps.public_io + apps.hidden_io
    assert [c.input for c in cases] == ["1\n-5", "3\n1 2 3"]  # lists of lines joined
    # APPS grades its first case and shows it: graded, it would pay a program that
    # prints the example's output (check_problem drops shown cases from grading).
    assert len(apps.public_io) == 1 and not set(apps.public_io) & set(apps.hidden_io)
    call = by_id["apps/2"]
    assert call.kind == "function" and call.entry_point == "min_max"
    assert len(call.public_tests + call.tests) == 2 and not set(call.public_tests) & set(call.tests)
    taco = by_id["taco/taco-0"]
    assert "def countEven(nums: List[int]) -> int:" in taco.prompt and "self" not in taco.prompt
    assert "Solution().countEven(*args)" in taco.reference_code
    reverse = by_id["taco/taco-1"]
    assert reverse.solution == "print(input()[::-1])\n"  # the Python 2 one passed over
    assert (reverse.time_limit_s, reverse.memory_mb, reverse.difficulty) == (2.0, 64, "hard")
    contest = by_id["codecontests/1000_A"]
    assert contest.solution == "a, b = map(int, input().split())\nprint(a * b)"  # not Python 2
    assert (contest.time_limit_s, contest.memory_mb, contest.difficulty) == (2.5, 256, "easy")
    assert len(contest.public_io) == 1 and len(contest.hidden_io) == 3
    assert by_id["codecontests/1001_B"].solution == ""  # no Python 3 solution: no oracle
    lcb = by_id["livecodebench/abc001_a"]
    assert [c.output for c in lcb.hidden_io] == ["16\n", "-18\n"] and lcb.solution == ""
    assert by_id["livecodebench/3000"].entry_point == "maxSum"
    mbpp = by_id["mbpp/17"]
    assert mbpp.setup == "SIDE = 4" and "\r" not in by_id["mbpp/11"].solution
    assert len(by_id["mbpp/11"].tests) == 3  # the challenge test too; not the shown first assert
    sanitized = by_id["mbpp/2"]
    assert sanitized.entry_point == "similar_elements" and sanitized.setup.startswith("import math")
    human = by_id["HumanEval/34"]
    assert len(human.tests) == 2 and human.tests[1].startswith("candidate = unique\nassert")
    assert len(by_id["HumanEval/53"].tests) == 1  # a check with a loop runs whole
    assert human.reference_code == human.prompt + human.solution
    plus = by_id["humanevalplus/0"]
    assert plus.solution.startswith(plus.prompt) and len(plus.tests) == 4  # less the shown one
    assert "exec(" in plus.setup  # expected results come from the reference, in the sandbox


def test_folders_globs_lists_limits_and_splits(written, tmp_path):
    folder = next(iter(written.values())).parent
    everything = _load(folder)
    assert len(everything) == sum(len(r) for r in FILES.values())
    jsonl = [name for name in FILES if name.endswith(".jsonl")]
    assert len(_load(str(folder / "*.jsonl"))) == sum(len(FILES[name]) for name in jsonl)
    assert len(_load([written["mbpp.jsonl"], written["taco.json"]])) == 4
    assert len(_load(folder, limit=3)) == 3
    write_format("mbpp.jsonl", tmp_path / "hf" / "test-00000-of-00001.jsonl")
    write_format("apps.jsonl", tmp_path / "hf" / "train-00000-of-00001.jsonl")
    assert {p.split for p in _load(tmp_path / "hf", split="test")} == {"mbpp"}
    with pytest.raises(ValueError, match="no file of split 'validation'"):
        _load(tmp_path / "hf", split="validation")
    with pytest.raises(FileNotFoundError, match="no file matches"):
        load_problems(str(tmp_path / "*.parquet"))  # at the call, before any next()
    with pytest.raises(FileNotFoundError, match="no file, folder or glob match"):
        load_problems(tmp_path / "missing.jsonl")


def test_the_shipped_fixture_files_match_the_records(written):
    for name in FILES:
        stale = f"{DATA / name} is stale: run python tests/code_format_files.py"
        assert _load(DATA / name) == _load(written[name]), stale


def test_a_parquet_file_is_read_a_batch_at_a_time(tmp_path, monkeypatch):
    import envgym.records as reading

    monkeypatch.setattr(reading, "PARQUET_BATCH_ROWS", 2)
    records = [dict(FILES["codecontests.parquet"][0], name=f"{i}_A. P") for i in range(9)]
    path = write_format("codecontests.parquet", tmp_path / "big.parquet", records)
    read = []
    real = reading._parquet_rows

    def counting(p, extra):
        for record in real(p, extra):
            read.append(record.where)
            yield record

    monkeypatch.setattr(reading, "_parquet_rows", counting)
    problems = load_problems(path)
    first = next(problems)
    assert first.task_id == "codecontests/0_A" and len(read) == 1  # nothing read ahead
    assert len(list(problems)) == 8 and len(read) == 9


# ------------------------------------------------------------------ bad files
@pytest.mark.parametrize(
    "content, says",
    [
        ("", "holds no records"),
        (
            json.dumps(FILES["mbpp.jsonl"][0]) + '\n{"text": \n',
            r"bad\.jsonl, line 2: not a JSON line",
        ),
        ('{"question": "q", "input_output": "{}"}\n', "input_output must hold"),
        ('{"prompt": "p", "answer": 3}\n', "matches no problem format .*fields: answer, prompt"),
        ('{"text": "t", "code": 5, "test_list": []}\n', "'code' must be a non-empty string"),
        ('{"question": "q", "input_output": "{\\"inputs\\": [\\"1\\"]}"}\n', "not as many outputs"),
        ('{"question": "q", "input_output": "[1"}\n', "'input_output' is not valid JSON"),
        ("[1, 2]", "a record must be a JSON object"),
        (
            json.dumps(dict(FILES["humanevalplus.jsonl"][0], entry_point="f(); import os")),
            "entry_point must be a Python name",
        ),
    ],
)
def test_bad_files_are_refused_naming_the_file_and_line(tmp_path, content, says):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(ValueError, match=says) as raised:
        _load(path)
    assert str(path) in str(raised.value)


def test_an_unknown_layout_lists_the_layouts_with_an_example(tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text('{"id": 1}\n')
    with pytest.raises(ValueError) as raised:
        _load(path)
    for name in ("apps", "codecontests", "livecodebench", "mbpp", "evalplus", "humaneval"):
        assert name in str(raised.value)
    with pytest.raises(ValueError, match="unknown format 'apss'"):
        _load(path, format="apss")
    assert "format=" in str(raised.value)
    needs = "jsonl, line 1: a MBPP record needs code, test_list; it has id"
    with pytest.raises(ValueError, match=needs):
        _load(path, format="mbpp")


def test_a_record_that_cannot_be_mapped_is_skipped_counted_and_warned(tmp_path):
    records = [dict(FILES["apps.jsonl"][0]), dict(FILES["apps.jsonl"][0], problem_id=7)]
    records[1]["input_output"] = json.dumps({"inputs": [], "outputs": []})
    path = write_format("apps.jsonl", tmp_path / "apps.jsonl", records)
    report = LoadReport()
    with pytest.warns(UserWarning, match="skipped 1 records: 1 no input_output cases"):
        assert [p.task_id for p in load_problems(path, report=report)] == ["apps/0"]
    assert report.skipped == {(str(path), "no input_output cases"): 1}
    assert "skipped 1 in" in report.summary()


# ------------------------------------------------------- LiveCodeBench pickles
class Payload:
    def __reduce__(self):
        return (print, ("pwned",))


@pytest.mark.parametrize(
    "payload, says",
    [
        (pickle.dumps(Payload()), "STACK_GLOBAL|GLOBAL"),
        (pickle.dumps(["[]"]), "EMPTY_LIST"),
        (pickle.dumps(3), "BININT"),
        (b"not a pickle", "not a readable pickle|opcode"),
    ],
)
def test_a_pickle_that_is_not_one_string_is_refused_unread(payload, says, capsys):
    text = base64.b64encode(zlib.compress(payload)).decode()
    with pytest.raises(ValueError, match=says):
        decode_private_cases(text)
    assert "pwned" not in capsys.readouterr().out


def test_the_one_pickled_string_is_read_at_every_protocol():
    cases = [{"input": "1\n", "output": "1\n", "testtype": "stdin"}]
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickled_string(pickle.dumps(json.dumps(cases), protocol)) == json.dumps(cases)
    assert decode_private_cases(lcb_compress(cases)) == cases
    assert decode_private_cases(json.dumps(cases)) == cases
    with pytest.raises(ValueError, match="neither a JSON list nor base64"):
        decode_private_cases("%%%")


def test_a_refused_pickle_names_the_file_and_line(tmp_path):
    record = dict(FILES["livecodebench.jsonl"][0])
    record["private_test_cases"] = base64.b64encode(zlib.compress(pickle.dumps(Payload()))).decode()
    path = write_format("livecodebench.jsonl", tmp_path / "lcb.jsonl", [record])
    says = r"lcb\.jsonl, line 1: private_test_cases: the pickle holds"
    with pytest.raises(ValueError, match=says):
        _load(path)


# ---------------------------------------------------------------- episodes
def _submit(code: str) -> str:
    return f"<answer>\n```python\n{code.rstrip()}\n```\n</answer>"


def _play(env, task_id: str, reply: str | None = None):
    """One episode of ``task_id``: the oracle's reply, or ``reply``."""
    obs, info = env.reset(options={"task_id": task_id})
    if reply is None:
        oracle = CodeOracle(env)
        oracle.reset()
        reply = oracle.act(obs, info)
    _, reward, terminated, _, info = env.step(reply)
    assert terminated
    return reward, info["success"]


def _episodes(env, task_ids) -> list:
    """Each problem played right (the oracle, else `RIGHT`) and wrong; the ones
    that did not come out as they should."""
    wrong = []
    for task_id in task_ids:
        right = RIGHT.get(task_id)
        if right is not None or env.unwrapped._by_id[task_id].solution:
            reward, success = _play(env, task_id, right and _submit(right))
            if (reward, success) != (1.0, True):
                wrong.append(("right", task_id, reward))
        reward, success = _play(env, task_id, _submit(WRONG[task_id]))
        if success or reward >= 1.0:
            wrong.append(("wrong", task_id, reward))
    return wrong


@pytest.fixture(scope="module", params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def backend_pool(request):
    """One sandbox pool per backend, shared by the formats' episodes."""
    require_backend(request.param)
    limits = Limits(timeout_s=10, memory_mb=256)
    with SandboxPool(size=1, backend=request.param, limits=limits) as pool:
        yield request.param, pool


@pytest.mark.parametrize("name", list(FILES))
def test_oracle_succeeds_and_a_wrong_solution_fails_through_make(name, backend_pool, written):
    backend, pool = backend_pool
    problems = _load(written[name])
    ids = [p.task_id for p in problems if p.kind == "function" or GRADES_STDIO]
    if not ids:
        pytest.skip("this Code-v0 has no stdio grader yet (envs/code/stdio.py, issue 34's part)")
    env = gym.make("envgym/Code-v0", problems=str(written[name]), sandbox_pool=pool)
    # On docker each format's first problem; every problem on bwrap.
    assert _episodes(env, ids[: 1 if backend == "docker" else None]) == []
    env.close()
