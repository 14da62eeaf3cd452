"""envgym/SQL-v0 played whole: the oracle always matches, random grammar queries
almost never do, hostile queries harm nothing, and the same holds on
PostgreSQL (when ENVGYM_TEST_POSTGRES_URL names a server: CI starts one with
scripts/postgres.sh)."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from postgres_server import postgres_url

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent

LEVELS = ("easy", "medium", "hard")


def play(env: gym.Env, agent_name: str, seed: int) -> tuple[float, dict]:
    obs, info = env.reset(seed=seed)
    agent = make_agent(agent_name, env, seed=seed)
    agent.reset()
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        total += reward
        done = terminated or truncated
    return total, info


@pytest.mark.parametrize("level", LEVELS)
def test_the_oracle_matches_and_random_queries_do_not_over_200_seeds(level):
    env = gym.make("envgym/SQL-v0", difficulty=level)
    oracle = [play(env, "oracle", seed)[1]["success"] for seed in range(200)]
    assert all(oracle), [seed for seed, ok in enumerate(oracle) if not ok][:10]
    randoms = [play(env, "random", seed)[1]["success"] for seed in range(200)]
    assert sum(randoms) < 10, sum(randoms)  # below 5%


def test_a_query_runs_and_the_answer_is_graded_by_its_rows():
    env = gym.make("envgym/SQL-v0", difficulty="easy")
    obs, info = env.reset(seed=3)
    assert "Question:" in obs and info["tools"][0]["function"]["name"] == "execute_sql"
    table = env.unwrapped.database.schema.tables[0].name
    obs, reward, terminated, _, info = env.step(f'<sql>SELECT COUNT(*) FROM "{table}"</sql>')
    assert obs.startswith("<result>") and not terminated and reward == 0
    assert info["cost"]["queries"] == 1
    gold = info["privileged"]["gold_sql"]
    call = '<tool_call>{"name": "execute_sql", "arguments": {"query": "SELECT 1"}}</tool_call>'
    obs, *_ = env.step(call)
    assert "1" in obs and obs.startswith("<result>")
    obs, reward, terminated, _, info = env.step(f"<answer>{gold}</answer>")
    assert (
        terminated
        and reward == 1.0
        and info["grade"]
        == {
            "parses": True,
            "executes": True,
            "matches": True,
        }
    )
    assert gold not in env.unwrapped._first_observation()


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM {t}",
        "DROP TABLE {t}",
        "INSERT INTO {t} DEFAULT VALUES",
        "ATTACH DATABASE '/tmp/x.db' AS x",
        "SELECT load_extension('/tmp/evil')",
        "SELECT readfile('/etc/passwd')",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r",
        "PRAGMA writable_schema = 1",
        "SELECT 1; DROP TABLE {t}",
    ],
)
def test_hostile_queries_get_a_message_and_harm_nothing(query):
    env = gym.make("envgym/SQL-v0", difficulty="easy")
    env.reset(seed=5)
    t = f'"{env.unwrapped.database.schema.tables[0].name}"'
    obs, reward, terminated, truncated, info = env.step(f"<sql>{query.format(t=t)}</sql>")
    assert reward == 0 and not terminated and info["action_valid"]
    assert "error" in obs.lower() or "not allowed" in obs.lower() or "refused" in obs.lower()
    # The database is unchanged: the oracle still matches, here and in the next episode.
    for seed in (5, 6):
        assert play(env, "oracle", seed)[1]["success"]


def test_every_row_of_every_table_or_a_union_of_guesses_does_not_match():
    env = gym.make("envgym/SQL-v0", difficulty="easy")
    for seed in range(10):
        env.reset(seed=seed)
        tables = [t.name for t in env.unwrapped.database.schema.tables]
        dump = "<answer>" + f'SELECT * FROM "{tables[0]}"' + "</answer>"
        *_, reward, terminated, _, info = env.step(dump)
        assert terminated and reward == 0, seed


def test_snapshot_restore_and_pickling_mid_episode():
    env = gym.make("envgym/SQL-v0", difficulty="medium").unwrapped
    env.reset(seed=11)
    env.step("<sql>SELECT 1</sql>")
    state = env.snapshot()
    gold = env.question.gold_sql
    first = env.step(f"<answer>{gold}</answer>")
    env.reset(seed=12)  # another task, maybe another database
    env.restore(pickle.loads(pickle.dumps(copy.deepcopy(state))))
    again = env.step(f"<answer>{gold}</answer>")
    assert first[:4] == again[:4] and again[1] == 1.0


def test_the_env_passes_gymnasiums_check_and_a_bad_task_id_says_what_to_use():
    env = gym.make("envgym/SQL-v0")
    check_env(env.unwrapped, skip_render_check=True)
    with pytest.raises(ValueError, match="hospital-medium-123"):
        env.reset(options={"task_id": "nonsense"})
    obs, info = env.reset(options={"task_id": "library-hard-42"})
    assert info["task_id"] == "library-hard-42" and env.unwrapped.difficulty == "hard"
    assert env.reset(options={"task_id": "library-hard-42"})[0] == obs


@pytest.mark.parametrize("level", LEVELS)
def test_on_postgresql_the_oracle_matches_snapshots_work_and_hostile_queries_fail(level):
    env = gym.make("envgym/SQL-v0", difficulty=level, engine=postgres_url())
    try:
        check_env(env.unwrapped, skip_render_check=True)
        for seed in range(20):
            assert play(env, "oracle", seed)[1]["success"], seed
        assert sum(play(env, "random", seed)[1]["success"] for seed in range(20)) <= 2
        env.reset(seed=1)
        t = f'"{env.unwrapped.database.schema.tables[0].name}"'
        for hostile in (
            f"DELETE FROM {t}",
            "SELECT pg_sleep(30)",
            "SELECT pg_read_file('/etc/passwd')",
            f"COPY {t} TO PROGRAM 'id'",
            "RESET ROLE",
        ):
            env.reset(seed=1)
            obs, reward, terminated, *_ = env.step(f"<sql>{hostile}</sql>")
            assert reward == 0 and not terminated and "error" in obs.lower(), (hostile, obs)
        env.reset(seed=1)
        state = env.unwrapped.snapshot()
        gold = env.unwrapped.question.gold_sql
        from envgym.envs.sql.engine import gold_sql_for

        answer = f"<answer>{gold_sql_for('postgresql', gold)}</answer>"
        first = env.step(answer)
        env.unwrapped.restore(state)
        assert env.step(answer)[:4] == first[:4] and first[1] == 1.0
    finally:
        env.close()


@pytest.mark.parametrize("dataset", ["spider", "bird"])
def test_spider_and_bird_files_play_through_the_env(dataset, tmp_path):
    """Small files in each dataset's own layout (tests/sql_files.py): every
    answerable question plays, the oracle matches it, BIRD's evidence is shown."""
    from sql_files import write_bird, write_spider

    folder = (write_spider if dataset == "spider" else write_bird)(tmp_path / dataset)
    played = 0
    for level in LEVELS:
        try:
            env = gym.make("envgym/SQL-v0", dataset=dataset, data_dir=str(folder), difficulty=level)
            obs, _ = env.reset(seed=0)
        except ValueError as exc:  # a level these few questions do not have
            assert "has no" in str(exc)
            continue
        assert "Question:" in obs and env.unwrapped.task_id.startswith(f"{dataset}-dev-")
        if dataset == "bird" and env.unwrapped.question.evidence:
            assert "Evidence:" in obs
        for seed in range(4):
            assert play(env, "oracle", seed)[1]["success"], (level, seed)
            played += 1
        task_id = env.unwrapped.task_id
        assert env.reset(options={"task_id": task_id})[1]["task_id"] == task_id
        for bad in (f"{dataset}-dev-x", f"{dataset}-dev-1 ", "other-dev-0", 7):
            with pytest.raises(ValueError, match=f"use an id from info.*e.g. {dataset}-dev-0"):
                env.reset(options={"task_id": bad})
        with pytest.raises(ValueError, match="no question 99999"):
            env.reset(options={"task_id": f"{dataset}-dev-99999"})
    assert played
    with pytest.raises(ValueError, match="data_dir"):
        gym.make("envgym/SQL-v0", dataset=dataset)
