"""Loading terminal-bench and Harbor task folders (envs/terminal/taskdirs.py,
dockerfile.py): what a folder becomes, which environments are refused and why,
and the errors malformed folders give. Nothing here starts a sandbox; the
folders are played in tests/test_taskdirs_play.py."""

from __future__ import annotations

import gymnasium as gym
import pytest
from taskdir_builders import SHIPPED, harbor_task, tb_task

import envgym  # noqa: F401 - registers the ids
from envgym.envs.terminal.taskdirs import (
    EnvironmentRefused,
    TaskFolderError,
    find_task_dirs,
    load_task_dir,
    load_tasks,
)

SHIPPED_IDS = ("harbor-word-count", "tb-hello", "tb-sales-report")


def test_the_shipped_folders_load_in_both_formats():
    tasks = {t.task_id: t for t in load_tasks(SHIPPED)}
    assert tuple(tasks) == SHIPPED_IDS
    hello, sales, harbor = tasks["tb-hello"], tasks["tb-sales-report"], tasks["harbor-word-count"]
    assert (hello.family, hello.difficulty, hello.files) == ("terminal-bench", "easy", {})
    assert [c.name for c in hello.checks] == [
        "test_outputs.py::test_greeting_file",
        "test_outputs.py::test_notes_folder",
    ]
    # The work directory /app is /work in everything the agent sees and runs.
    assert "in /work that" in hello.instruction and "/app" not in hello.instruction
    # A multi-file starting tree: COPY of a folder and of a file, a mode, a RUN replayed.
    assert sorted(sales.files) == [
        "bin/summarise.py",
        "data/2023-12.csv",
        "data/2024/2024-01.csv",
        "data/2024/2024-02.csv",
    ]
    assert sales.modes == {"bin/summarise.py": 0o755}
    assert '"/work/data/*.csv"' in sales.files["bin/summarise.py"]
    assert "mkdir -p /work/out" in sales.setup and "apt-get" not in sales.setup
    assert len(sales.checks) == 3 and sales.difficulty == "medium"
    assert (harbor.family, harbor.difficulty) == ("harbor", "hard")
    assert sorted(harbor.files) == ["src/README.md", "src/wc.py"]
    assert "git init" in harbor.setup
    assert [c.name for c in harbor.checks] == [
        "test_outputs.py::TestWordCount::test_spaces_are_not_words",
        "test_outputs.py::TestWordCount::test_empty_file",
        "test_outputs.py::test_plain_text_still_counts",
    ]


def test_hidden_tests_and_solution_never_enter_the_starting_tree(tmp_path):
    folder = tb_task(
        tmp_path,
        {"Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\nCOPY . /app\n", "data.txt": "x\n"},
    )
    task = load_task_dir(folder)
    assert sorted(task.files) == ["data.txt"]
    assert all("assert" not in str(content) for content in task.files.values())
    # The tests reach the sandbox only inside the checks' sources, never the task's files.
    assert "test_answer" in task.checks[0].name


def test_a_glob_and_several_folders_load_and_a_name_twice_is_refused(tmp_path):
    tb_task(tmp_path / "a", name="one")
    harbor_task(tmp_path / "a", name="two")
    tb_task(tmp_path / "b", name="one")
    assert [t.task_id for t in load_tasks(str(tmp_path / "a" / "*"))] == ["one", "two"]
    assert [t.family for t in load_tasks(tmp_path / "a")] == ["terminal-bench", "harbor"]
    assert find_task_dirs(tmp_path / "a" / "two") == [tmp_path / "a" / "two"]
    with pytest.raises(TaskFolderError, match="two task folders are named 'one'"):
        load_tasks(str(tmp_path / "*" / "*"))


def test_seeds_draw_from_the_loaded_tasks_and_task_id_picks_one():
    env = gym.make("envgym/Terminal-v0", tasks=str(SHIPPED), sandbox="bwrap")
    drawn = set()
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        drawn.add(info["task_id"])
        assert env.reset(seed=seed)[1]["task_id"] == info["task_id"]
    assert drawn == set(SHIPPED_IDS)
    obs, info = env.reset(seed=0, options={"task_id": "tb-sales-report"})
    assert info["task_id"] == "tb-sales-report" and "/work/bin/summarise.py" in obs
    with pytest.raises(ValueError, match="loaded task folders are harbor-word-count, tb-hello"):
        env.reset(options={"task_id": "nope"})
    env.close()
    with pytest.raises(ValueError, match="not both"):
        gym.make("envgym/Terminal-v0", tasks=str(SHIPPED), family="logs")


# ------------------------------------------------------------------ refusals
REFUSED_DOCKERFILES = {
    "another base image": ("FROM nvidia/cuda:12.1.0-base-ubuntu22.04\nWORKDIR /app\n", "nvidia"),
    "build stages": ("FROM golang:1.22 AS b\nFROM ubuntu:24.04\nWORKDIR /app\n", "build stages"),
    "apt package": (
        "FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y postgresql\nWORKDIR /app\n",
        "installs postgresql",
    ),
    "pip package": (
        "FROM python:3.12\nWORKDIR /app\nRUN pip install requests==2.32.0 numpy\n",
        "installs requests",
    ),
    "requirements": (
        "FROM python:3.12\nWORKDIR /app\nRUN pip install -r requirements.txt\n",
        "requirements",
    ),
    "download": (
        "FROM ubuntu:24.04\nWORKDIR /app\nRUN curl -L https://example.com/x -o x\n",
        "network",
    ),
    "clone": (
        "FROM ubuntu:24.04\nWORKDIR /app\nRUN git clone https://example.com/r.git\n",
        "network",
    ),
    "unknown program": ("FROM ubuntu:24.04\nWORKDIR /app\nRUN npm install\n", "runs 'npm'"),
    "add url": ("FROM ubuntu:24.04\nWORKDIR /app\nADD https://example.com/f.txt .\n", "network"),
    "copy outside": ("FROM ubuntu:24.04\nWORKDIR /app\nCOPY ../secret .\n", "lacks|outside"),
    "copy elsewhere": ("FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt /etc/\n", "outside the"),
    "write elsewhere": (
        "FROM ubuntu:24.04\nWORKDIR /app\nRUN mkdir -p /opt/tool\n",
        "writes /opt/tool",
    ),
    "stage copy": ("FROM ubuntu:24.04\nWORKDIR /app\nCOPY --from=b /x .\n", "another build"),
    "volume": ("FROM ubuntu:24.04\nWORKDIR /app\nVOLUME /data\n", "uses VOLUME"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_DOCKERFILES))
def test_an_environment_the_image_cannot_serve_is_refused_clearly(tmp_path, case):
    dockerfile, why = REFUSED_DOCKERFILES[case]
    folder = tb_task(tmp_path, {"Dockerfile": dockerfile, "data.txt": "x\n"})
    with pytest.raises(EnvironmentRefused, match=why) as caught:
        load_task_dir(folder)
    message = str(caught.value)
    assert message.startswith("task tb-task:") and "envgym runs tasks" in message


def test_the_image_serves_what_it_has(tmp_path):
    dockerfile = (
        "# comment\nFROM python:3.13-slim-bookworm\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends git jq \\\n"
        "    && rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install --no-cache-dir pytest==8.4.1\nWORKDIR /app\nENV MODE=fast\n"
        'COPY --chmod=0700 data.txt notes/\nCMD ["sleep", "infinity"]\n'
    )
    task = load_task_dir(tb_task(tmp_path, {"Dockerfile": dockerfile, "data.txt": "x\n"}))
    assert task.files == {"notes/data.txt": "x\n"} and task.modes == {"notes/data.txt": 0o700}
    assert task.setup == "" and "MODE=fast" in task.solution


def test_compose_services_and_prebuilt_images_are_refused(tmp_path):
    two = "services:\n  client:\n    build: .\n  db:\n    image: postgres:16\n"
    with pytest.raises(EnvironmentRefused, match="starts the services client, db"):
        load_task_dir(tb_task(tmp_path, {"docker-compose.yaml": two}, name="a"))
    prebuilt = "services:\n  client:\n    image: example/tool:1\n"
    with pytest.raises(EnvironmentRefused, match="prebuilt image example/tool:1"):
        load_task_dir(tb_task(tmp_path, {"docker-compose.yaml": prebuilt}, name="b"))
    toml = '[environment]\ndocker_image = "example/tool:2"\n'
    folder = harbor_task(tmp_path, {"task.toml": toml, "environment/Dockerfile": None})
    with pytest.raises(EnvironmentRefused, match="prebuilt image example/tool:2"):
        load_task_dir(folder)


@pytest.mark.parametrize(
    "script, why",
    [
        ("#!/bin/bash\npython3 /app/server.py &\nuv run pytest $TEST_DIR/test_outputs.py\n", "py"),
        ("uvx -w pytest -w httpx==0.27 pytest /tests/test_outputs.py\n", "installs httpx"),
        ("apt-get install -y redis-server\npytest /tests/test_outputs.py\n", "redis-server"),
    ],
)
def test_a_test_script_that_needs_more_than_pytest_is_refused(tmp_path, script, why):
    folder = harbor_task(tmp_path, {"tests/test.sh": script})
    with pytest.raises(EnvironmentRefused, match=why) as caught:
        load_task_dir(folder)
    assert "tests/test.sh line" in str(caught.value)


# ----------------------------------------------------------------- malformed
MALFORMED = {
    "no instruction (terminal-bench)": (tb_task, {"task.yaml": "difficulty: easy\n"}, "no instr"),
    "no instruction (Harbor)": (harbor_task, {"instruction.md": None}, "instruction.md"),
    "bad YAML": (tb_task, {"task.yaml": "instruction: [unclosed\n"}, "not valid YAML"),
    "bad TOML": (harbor_task, {"task.toml": "[metadata\n"}, "not valid TOML"),
    "no tests": (tb_task, {"tests/test_outputs.py": None}, "no hidden tests"),
    "no test functions": (harbor_task, {"tests/test_outputs.py": "X = 1\n"}, "no test functions"),
    "test syntax": (tb_task, {"tests/test_outputs.py": "def test(:\n"}, "not valid Python"),
    "no solution": (harbor_task, {"solution/solve.sh": None}, "solution/solve.sh"),
    "no WORKDIR": (tb_task, {"Dockerfile": "FROM ubuntu:24.04\n"}, "WORKDIR"),
    "no Dockerfile": (harbor_task, {"environment/Dockerfile": None}, "no Dockerfile"),
    "bad solution.yaml": (
        tb_task,
        {"solution.sh": None, "solution.yaml": "command: x\n"},
        "list of steps",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_folder_says_what_is_wrong(tmp_path, case):
    build, changes, why = MALFORMED[case]
    with pytest.raises(ValueError, match=why) as caught:
        load_task_dir(build(tmp_path, changes))
    assert "task " in str(caught.value)


def test_paths_that_are_no_task_folders_say_what_to_pass(tmp_path):
    with pytest.raises(TaskFolderError, match="is not a folder"):
        load_tasks(tmp_path / "missing")
    with pytest.raises(TaskFolderError, match="holds no task folder"):
        load_tasks(tmp_path)
    with pytest.raises(TaskFolderError, match="matches no task folder"):
        load_tasks(str(tmp_path / "*"))
    with pytest.raises(TaskFolderError, match="neither task.yaml"):
        load_task_dir(tmp_path)
    with pytest.raises(TypeError, match="a glob, or a list of them, not int"):
        gym.make("envgym/Terminal-v0", tasks=7)
    assert [t.task_id for t in load_tasks([SHIPPED / "tb-hello", SHIPPED / "tb-sales-report"])] == [
        "tb-hello",
        "tb-sales-report",
    ]
