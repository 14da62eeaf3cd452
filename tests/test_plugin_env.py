"""An env package from outside the repository, as docs/guides/plugin-env.md
writes it: installed with pip (offline, into a folder put on PYTHONPATH), it is
in ``envgym list``, plays with ``envgym eval``, passes the contract suite, has
baselines, and the leaderboard verifies and tickets it. A broken plugin warns
and leaves envgym's own ids alone.

The package's files are the guide's code blocks, so the guide cannot drift
from what this test installs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guides" / "plugin-env.md"
ENV_ID = "parity/Parity-v0"
#: A code block the guide names its file in: `envgym-parity/path`:, a blank line, the block.
FILE_BLOCK = re.compile(r"^`(envgym-parity/[^`]+)`:\n\n```\w+\n(.*?)^```", re.M | re.S)


def guide_files() -> dict[str, str]:
    """The files of the guide's package: path -> text, as the guide shows them."""
    return dict(FILE_BLOCK.findall(GUIDE.read_text()))


def pip_install(package: Path, target: Path) -> None:
    """Install `package` into the folder `target`, offline, with this venv's setuptools."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "--quiet", "--target", str(target), str(package)],
        check=True,
        capture_output=True,
        text=True,
    )


def with_path(folder: Path) -> dict[str, str]:
    """The environment of a process that sees what was installed into `folder`."""
    paths = [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of processes that have envgym-parity installed."""
    root = tmp_path_factory.mktemp("plugin")
    for name, text in guide_files().items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    pip_install(root / "envgym-parity", root / "site")
    return with_path(root / "site")


def run(env: dict[str, str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def envgym(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run(env, "-m", "envgym", *args)


def test_the_guide_shows_every_file_of_the_package():
    files = guide_files()
    assert sorted(files) == [
        "envgym-parity/parity_env/__init__.py",
        "envgym-parity/parity_env/cli.py",
        "envgym-parity/parity_env/env.py",
        "envgym-parity/pyproject.toml",
    ]
    assert (
        '[project.entry-points."envgym.envs"]\nparity = "parity_env:SPEC"'
        in files["envgym-parity/pyproject.toml"]
    )


def test_the_guides_other_python_blocks_run_with_the_plugin_installed(plugin_env):
    files = set(guide_files().values())
    blocks = re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(), flags=re.M | re.S)
    snippets = [block for block in blocks if block not in files]
    assert len(snippets) == 2
    check = "assert {'parity/Parity-v0', 'mine/Parity-v0'} <= {s.id for s in envgym.list_envs()}"
    ran = run(plugin_env, "-c", "\n".join([*snippets, check, "print(obs)"]))
    assert ran.returncode == 0, ran.stderr
    assert re.fullmatch(r"Is \d+ even or odd\?\n", ran.stdout)


def test_envgym_lists_the_plugin_shows_its_manual_and_runs_its_command(plugin_env):
    listed = envgym(plugin_env, "list")
    assert listed.returncode == 0, listed.stderr
    assert ENV_ID in listed.stdout and "envgym/Sokoban-v0" in listed.stdout
    assert "Warning" not in listed.stderr
    info = envgym(plugin_env, "info", ENV_ID)
    assert "Say whether a number is even or odd" in info.stdout
    shown = envgym(plugin_env, "parity", "show", "--seed", "3")
    assert shown.returncode == 0, shown.stderr
    assert re.fullmatch(r"Is \d+ even or odd\?\n", shown.stdout)
    helped = envgym(plugin_env, "eval", "--help")
    assert "even," in " ".join(helped.stdout.split())  # its own agent, in the help text


def test_eval_plays_the_plugin_with_random_oracle_and_its_own_agent(plugin_env, tmp_path):
    out = tmp_path / "random.json"
    played = envgym(
        plugin_env, "eval", ENV_ID, "--agent", "random", "--episodes", "6", "--out", str(out)
    )
    assert played.returncode == 0, played.stderr
    results = json.loads(out.read_text())
    assert results["env_id"] == ENV_ID and len(results["episodes"]) == 6
    assert all(e["turns"] == 1 for e in results["episodes"])  # an answer ends it
    for agent, rate in (("oracle", "100%"), ("even", "%")):
        played = envgym(plugin_env, "eval", ENV_ID, "--agent", agent, "--episodes", "4")
        assert played.returncode == 0, played.stderr
        row = next(line for line in played.stdout.splitlines() if line.startswith(ENV_ID))
        assert row.split()[2:4] == [agent, "4"] and rate in row
    refused = envgym(plugin_env, "eval", "envgym/FrozenLake-v0", "--agent", "even")
    assert refused.returncode == 2 and f"{ENV_ID}'s own" in refused.stderr


@pytest.mark.slow  # about 35 s: the whole contract suite, on three difficulties
def test_the_contract_suite_runs_on_the_plugin_and_passes(plugin_env):
    suite = run(
        plugin_env,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not docker"),
        *("tests/test_env_contract.py", "-k", "Parity-v0"),
    )
    assert suite.returncode == 0, suite.stdout[-3000:]
    passed = re.search(r"(\d+) passed", suite.stdout)
    assert passed and int(passed[1]) >= 20, suite.stdout[-1000:]


def test_baselines_and_the_leaderboard_know_the_plugin(plugin_env, tmp_path):
    made = envgym(
        plugin_env, "baselines", "--env", ENV_ID, "--episodes", "3", "--out-dir", str(tmp_path)
    )
    assert made.returncode == 0, made.stderr
    rows = {tuple(line.split()[:3]) for line in made.stdout.splitlines() if line.startswith(ENV_ID)}
    assert rows == {
        (ENV_ID, level, agent)
        for level in ("easy", "medium", "hard")
        for agent in ("random", "oracle")
    }
    oracle_file = next(tmp_path.glob("*Parity-v0_hard_oracle.json"))
    script = textwrap.dedent(
        f"""
        import json, sys
        from envgym.leaderboard.db import Database
        from envgym.leaderboard.tickets import issue_ticket
        from envgym.leaderboard.tokens import check_token, create_token
        from envgym.leaderboard.worker import verify_text

        outcome = verify_text(open({str(oracle_file)!r}).read())
        db = Database("sqlite:///" + {str(tmp_path / "lb.db")!r})
        submitter = check_token(db, create_token(db, "alice")).submitter_id
        ticket = issue_ticket(db, submitter, {ENV_ID!r}, "hard")
        verdict = {{"accepted": outcome.accepted, "reason": outcome.reason}}
        print(json.dumps({{**verdict, "ticket": ticket}}))
        """
    )
    checked = run(plugin_env, "-c", script)
    assert checked.returncode == 0, checked.stderr
    verdict = json.loads(checked.stdout.splitlines()[-1])
    assert verdict["accepted"] is True, verdict["reason"]
    assert verdict["ticket"]["env_id"] == ENV_ID and verdict["ticket"]["difficulty"] == "hard"


BROKEN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "envgym-broken"
version = "0.0.1"

[project.entry-points."envgym.envs"]
broken = "broken_env:SPEC"
wrong = "wrong_env:SPEC"
pair = "wrong_env:pair"

[tool.setuptools]
packages = ["broken_env", "wrong_env"]
"""


def test_a_broken_plugin_warns_naming_itself_and_envgym_still_works(tmp_path):
    """Entry points of one distribution: one that does not import, one naming
    an int, and a function returning two good specs."""
    package = tmp_path / "envgym-broken"
    (package / "broken_env").mkdir(parents=True)
    (package / "pyproject.toml").write_text(BROKEN_PYPROJECT)
    (package / "broken_env" / "__init__.py").write_text("import no_such_dependency_here\n")
    (package / "wrong_env").mkdir()
    (package / "wrong_env" / "__init__.py").write_text(
        textwrap.dedent(
            """\
            from envgym import EnvSpec

            SPEC = 42


            def pair():
                guess = "envgym.envs.guess_number:GuessNumberEnv"
                return [
                    EnvSpec(id=f"pair/Guess{n}-v0", entry_point=guess, description="", tags=())
                    for n in "AB"
                ]
            """
        )
    )
    pip_install(package, tmp_path / "site")
    listed = envgym(with_path(tmp_path / "site"), "list")
    assert listed.returncode == 0, listed.stderr
    warned = sorted(line for line in listed.stderr.splitlines() if "EnvPluginWarning" in line)
    assert len(warned) == 2, listed.stderr
    assert "'broken' of envgym-broken 0.0.1" in warned[0] and "no_such_dependency_here" in warned[0]
    assert "'wrong' of envgym-broken 0.0.1" in warned[1] and "got int" in warned[1]
    assert "envgym/Sokoban-v0" in listed.stdout and "envgym/Search-v0" in listed.stdout
    assert "pair/GuessA-v0" in listed.stdout and "pair/GuessB-v0" in listed.stdout


class AlwaysSeven:
    """An env's own random agent (it guesses 7, seeded or not)."""

    name = "random"

    def __init__(self, env, seed=None):
        self.env, self.seed = env, seed

    def reset(self):
        pass

    def act(self, observation, info):
        return "<answer>7</answer>"


def test_an_env_may_name_its_own_random_agent_and_eval_uses_it():
    """An env whose random play means something other than random text (SQL-v0's
    random grammar queries) names it as its spec's ``random_agent``; `make_agent` and
    evaluation play it wherever ``random`` is asked for."""
    from envgym import EnvSpec, register, unregister
    from envgym.agents import RandomAgent, make_agent
    from envgym.evaluation import evaluate

    spec = EnvSpec(
        id="test/OwnRandom-v0",
        entry_point="envgym.envs.guess_number:GuessNumberEnv",
        description="GuessNumber with its own random agent",
        tags=(),
        random_agent="test_plugin_env:AlwaysSeven",
    )
    register(spec)
    try:
        agent = make_agent("random", gym.make("test/OwnRandom-v0"), seed=3)
        assert isinstance(agent, AlwaysSeven) and agent.seed == 3
        assert isinstance(make_agent("random", gym.make("envgym/GuessNumber-v0")), RandomAgent)
        results = evaluate("test/OwnRandom-v0", "random", episodes=2, seed=0)
        assert results["agent"]["name"] == "random"
        assert all(set(e["actions"]) == {"<answer>7</answer>"} for e in results["episodes"])
    finally:
        unregister("test/OwnRandom-v0")
