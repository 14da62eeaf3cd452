"""The `envgym` command, run as a user would: subprocesses with piped input,
plus in-process runs of `main()` against the test-only guessing env."""

from __future__ import annotations

import argparse
import importlib
import inspect
import io
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from rich.console import Console
from test_evaluation import GUESS_ID, GUESS_SPEC, GuessEnv, registered

from envgym.agents import make_agent
from envgym.cli import main
from envgym.cli.arguments import parse_kwarg
from envgym.cli.output import EpisodeProgress, print_table
from envgym.evaluation import load_results
from envgym.parsing import parse_answer
from envgym.registry import get_spec, list_envs
from envgym.version import __version__

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def guess_env() -> Iterator[str]:
    with registered(GUESS_SPEC):
        yield GUESS_ID


def envgym_cli(*args: str, input: str | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "envgym", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd or REPO,
    )


def _oracle_lines(env_id: str, seed: int, **kwargs) -> list[str]:
    """The oracle's moves for one episode, as a person would type them (no tags)."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    oracle = make_agent("oracle", env)
    oracle.reset()
    lines, done = [], False
    while not done:
        reply = oracle.act(obs, info)
        lines.append(parse_answer(reply).value)
        obs, _, terminated, truncated, info = env.step(reply)
        done = terminated or truncated
    assert info["success"]
    return lines


# -------------------------------------------------------------------- list
def test_list_shows_every_registered_id():
    result = envgym_cli("list")
    assert result.returncode == 0, result.stderr
    for spec in list_envs():
        assert spec.id in result.stdout
        assert spec.description in result.stdout  # not cut when piped
    header, rule = result.stdout.splitlines()[:2]
    assert header.split() == ["id", "difficulties", "tags", "description"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert "\x1b" not in result.stdout  # no escape codes in a pipe
    assert all(line == line.rstrip() for line in result.stdout.splitlines())


def test_list_by_tag_and_unknown_tag(guess_env, capsys):
    assert main(["list", "--tag", "test"]) == 0
    out = capsys.readouterr().out
    assert GUESS_ID in out and "envgym/Sokoban-v0" not in out
    assert main(["list", "--tag", "no-such-tag"]) == 2
    assert "tags in use" in capsys.readouterr().err


# -------------------------------------------------------------------- info
def test_info_prints_the_sokoban_manual():
    result = envgym_cli("info", "envgym/Sokoban-v0")
    assert result.returncode == 0, result.stderr
    module, _, name = get_spec("envgym/Sokoban-v0").entry_point.partition(":")
    manual = inspect.cleandoc(getattr(importlib.import_module(module), name).__doc__)
    assert manual in result.stdout
    assert "easy, medium, hard" in result.stdout
    assert "puzzle" in result.stdout


def test_info_accepts_the_short_id(guess_env, capsys):
    assert main(["info", "Guess-v0"]) == 2  # only envgym/ ids have a short form
    assert main(["info", GUESS_ID]) == 0
    out = capsys.readouterr().out
    assert inspect.cleandoc(GuessEnv.__doc__) in out
    assert "oracle agent  yes" in out


# -------------------------------------------------------------------- play
def test_play_frozenlake_with_piped_moves_reaches_the_goal():
    lines = _oracle_lines("envgym/FrozenLake-v0", seed=4, difficulty="medium")
    result = envgym_cli(
        "play",
        "envgym/FrozenLake-v0",
        "--seed",
        "4",
        "--difficulty",
        "medium",
        input="\n".join(lines) + "\n",
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"Episode over: return +1, success yes, turns {len(lines)}" in result.stdout
    assert "seed 4" in result.stdout


def test_play_quit_and_end_of_input_stop_the_game():
    quit_run = envgym_cli("play", "envgym/FrozenLake-v0", "--seed", "1", input="Jump\nquit\nUp\n")
    assert quit_run.returncode == 0, quit_run.stderr
    assert "[invalid action]" in quit_run.stdout  # "Jump" was sent and rejected
    assert "Stopped after 1 turn: return -0.1, success no, turns 1" in quit_run.stdout
    eof_run = envgym_cli("play", "envgym/FrozenLake-v0", "--seed", "1", input="")
    assert eof_run.returncode == 0, eof_run.stderr
    assert "Stopped after 0 turns" in eof_run.stdout


def test_play_in_process_wraps_bare_lines_in_answer_tags(guess_env, monkeypatch, capsys):
    env = gym.make(GUESS_ID)
    env.reset(seed=2)
    secret = env.unwrapped.secret
    wrong = 1 if secret != 1 else 2
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{wrong}\n\n<answer>{secret}</answer>\n"))
    assert main(["play", GUESS_ID, "--seed", "2", "--kwarg", "max_turns=5"]) == 0
    out = capsys.readouterr().out
    assert f"{wrong} is wrong" in out  # the bare line was read as an answer
    assert "Correct!" in out
    assert "Episode over: return +0.9, success yes, turns 2" in out


def test_play_runs_out_of_turns(guess_env, monkeypatch, capsys):
    env = gym.make(GUESS_ID)
    env.reset(seed=0)
    wrong = 1 if env.unwrapped.secret != 1 else 2
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{wrong}\n" * 5))
    assert main(["play", GUESS_ID, "--seed", "0", "--kwarg", "max_turns=2"]) == 0
    assert "Episode over (turn limit reached)" in capsys.readouterr().out


# -------------------------------------------------------------------- eval
def test_eval_writes_a_valid_results_file_and_prints_a_table(tmp_path):
    out = tmp_path / "runs" / "f.json"
    result = envgym_cli(
        "eval",
        "envgym/FrozenLake-v0",
        "--agent",
        "oracle",
        "--episodes",
        "4",
        "--seed",
        "10",
        "--difficulty",
        "hard",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    results = load_results(out)
    assert [ep["seed"] for ep in results["episodes"]] == [10, 11, 12, 13]
    assert results["env_kwargs"] == {"difficulty": "hard"}
    header, _, row = result.stdout.splitlines()[:3]
    assert header.split()[:4] == ["env", "difficulty", "agent", "episodes"]
    assert row.split()[:4] == ["envgym/FrozenLake-v0", "hard", "oracle", "4"]
    assert f"wrote {out}" in result.stdout
    assert "4/4 episodes" in result.stderr  # progress goes to stderr, not into the table
    assert "episodes" not in result.stdout.split("\n", 1)[1]
    assert "\x1b" not in result.stdout + result.stderr  # no escape codes in a pipe


def test_eval_in_process_with_kwargs(guess_env, tmp_path, capsys):
    out = tmp_path / "guess.json"
    argv = ["eval", GUESS_ID, "--episodes", "6", "--kwarg", "max_turns=3", "--out", str(out)]
    assert main(argv) == 0
    results = load_results(out)
    assert results["env_kwargs"] == {"max_turns": 3}
    assert max(ep["turns"] for ep in results["episodes"]) <= 3
    summary = results["summary"]
    assert f"{summary['success_rate']:.0%}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "envgym/Sokobn-v0"], "Did you mean envgym/Sokoban-v0"),
        (["info", "envgym/Nope-v0"], "envgym list"),
        (["play", "envgym/Nope-v0"], "envgym list"),
        (["eval", "envgym/FrozenLake-v0", "--agent", "gpt-9"], "unknown agent 'gpt-9'"),
        (["eval", "envgym/FrozenLake-v0", "--difficulty", "nightmare"], "choose one of"),
        (["eval", "envgym/FrozenLake-v0", "--episodes", "0"], "must be at least 1"),
        (["eval", "envgym/FrozenLake-v0", "--kwarg", "novalue"], "expected key=value"),
    ],
)
def test_user_errors_exit_2_with_a_message_and_no_traceback(argv, message):
    result = envgym_cli(*argv)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_eval_refuses_an_unwritable_out_before_running(guess_env, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["eval", GUESS_ID, "--out", str(blocker / "r.json")]) == 2
    captured = capsys.readouterr()
    assert "cannot create the folder" in captured.err
    assert "episodes" not in captured.err  # no progress: nothing ran
    assert captured.out == ""


# --------------------------------------------------------------- baselines
def test_baselines_covers_every_difficulty_and_agent(guess_env, tmp_path, capsys):
    argv = ["baselines", "--env", GUESS_ID, "--episodes", "3", "--out-dir", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(GUESS_ID)]
    assert {(r[1], r[2]) for r in rows} == {
        (d, a) for d in ("easy", "medium", "hard") for a in ("random", "oracle")
    }
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 6
    oracle_hard = load_results(tmp_path / "Guess-v0_hard_oracle.json")
    assert oracle_hard["summary"]["success_rate"] == 1.0
    assert oracle_hard["env_kwargs"] == {"difficulty": "hard"}


def test_baselines_table_and_exported_pages_come_from_the_same_files(tmp_path, capsys):
    files, site = tmp_path / "files", tmp_path / "site"
    argv = ["baselines", "--env", "GuessNumber-v0", "--agent", "oracle", "--episodes", "2"]
    assert main([*argv, "--out-dir", str(files)]) == 0
    table = capsys.readouterr().out
    assert main(["leaderboard", "export", "--baselines", str(files), "--out", str(site)]) == 0
    page = (site / "env" / "GuessNumber-v0.html").read_text(encoding="utf-8")
    stems = sorted(p.stem for p in files.glob("*.json"))
    assert stems == [f"GuessNumber-v0_{d}_oracle" for d in ("easy", "hard", "medium")]
    for stem in stems:
        results = load_results(files / f"{stem}.json")
        assert stem in page
        row = next(line for line in table.splitlines() if f" {results['difficulty']} " in line)
        assert f"{results['summary']['success_rate']:.0%}" in row


def test_export_of_a_baselines_folder_that_is_not_there_says_how_to_make_it(tmp_path, capsys):
    argv = ["leaderboard", "export", "--baselines", str(tmp_path / "none"), "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "envgym baselines --out-dir" in capsys.readouterr().err


def test_baselines_on_the_real_envs():
    result = envgym_cli("baselines", "--episodes", "2")
    assert result.returncode == 0, result.stderr
    rows = {tuple(line.split()[:3]) for line in result.stdout.splitlines()}
    for spec in list_envs():
        for difficulty in spec.difficulties:
            for agent in ("random", "oracle") if spec.oracle else ("random",):
                assert (spec.id, difficulty, agent) in rows


# ----------------------------------------------------------- building blocks
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max_turns=5", ("max_turns", 5)),
        ("p=0.25", ("p", 0.25)),
        ("slippery=true", ("slippery", True)),
        ("name=hello world", ("name", "hello world")),
        ("size=[4, 4]", ("size", [4, 4])),
        ("empty=", ("empty", "")),
    ],
)
def test_parse_kwarg_reads_json_values(text, expected):
    assert parse_kwarg(text) == expected


@pytest.mark.parametrize("text", ["novalue", "=3", "bad key=1"])
def test_parse_kwarg_rejects_malformed(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_kwarg(text)


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_table_aligns_numbers_and_shows_every_cell_as_written(capsys):
    long = "word " * 100
    rows = [["a", "1.5", "[b]bold?[/b] :smile:"], ["longer", "10.25", long]]
    print_table(["name", "score", "note"], rows, right={"score"})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "score", "note"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    # numbers right-aligned: both end in the same column
    assert lines[2].index("1.5") + 3 == lines[3].index("10.25") + 5
    assert lines[2].endswith("[b]bold?[/b] :smile:")  # not read as markup or emoji
    assert lines[3].endswith(long.strip())  # never cut or wrapped in a pipe
    assert len(lines) == 4


def test_table_on_a_narrow_terminal_wraps_without_losing_a_word():
    screen = _FakeTerminal()
    console = Console(file=screen, force_terminal=True, width=40, color_system=None)
    description = "Push every box onto a target; procedural, always-solvable levels"
    print_table(["id", "description"], [["envgym/Sokoban-v0", description]], console=console)
    lines = screen.getvalue().splitlines()
    assert all(len(line) <= 40 for line in lines)
    assert " ".join(" ".join(lines).split()).count("envgym/Sokoban-v0") == 1
    for word in description.split():
        assert word in screen.getvalue()


def test_progress_in_a_log_prints_a_line_per_tenth_and_reaches_the_total():
    log = io.StringIO()
    with EpisodeProgress(100, "run", console=Console(file=log), log_every_s=0.0) as progress:
        for done in range(101):
            progress.update(done)
    lines = log.getvalue().splitlines()
    assert len(lines) == 10
    assert [int(re.search(r"(\d+)/100 episodes", line)[1]) for line in lines] == [
        10,
        20,
        30,
        40,
        50,
        60,
        70,
        80,
        90,
        100,
    ]
    assert all(line.startswith("run ") for line in lines)
    assert "\x1b" not in log.getvalue() and "\r" not in log.getvalue()


def test_progress_in_a_log_waits_between_lines():
    log = io.StringIO()
    with EpisodeProgress(100, "run", console=Console(file=log), log_every_s=3600.0) as progress:
        for done in range(101):
            progress.update(done)
    assert log.getvalue().count("episodes") == 1  # only the end
    assert "100/100 episodes" in log.getvalue()


def test_progress_on_a_terminal_redraws_and_ends_at_the_total():
    screen = _FakeTerminal()
    console = Console(file=screen, force_terminal=True, width=100, color_system=None)
    with EpisodeProgress(4, "run", console=console) as progress:
        for done in range(5):
            progress.update(done)
    assert "4/4 episodes" in screen.getvalue()


def test_progress_shows_nothing_for_a_run_that_never_started():
    log = io.StringIO()
    with pytest.raises(ValueError):
        with EpisodeProgress(4, "run", console=Console(file=log)):
            raise ValueError("refused before the first episode")
    assert log.getvalue() == ""


def test_python_dash_m_and_version():
    result = envgym_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"envgym {__version__}"
