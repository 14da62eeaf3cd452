"""envgym ids through the installed skyrl-gym package (``envgym[skyrl]``).

Every env is made with ``skyrl_gym.make`` from skyrl_gym's own registry and
played through its ``BaseTextEnv`` interface (``init``, ``step`` returning a
``BaseTextEnvStepOutput``). Each episode replays the replies of an episode of
envgym's own evaluation (`envgym.evaluation.evaluate`, its random and oracle
agents) and must earn the same rewards turn by turn, end after as many turns
and the same way (terminated vs truncated), and report the same success, on a
puzzle (Sokoban), a multi-turn tool env (Retail, Household) and a game
against the built-in opponent (TicTacToe).
"""

from __future__ import annotations

import importlib
import json
import sys

import gymnasium as gym
import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402

import envgym.integrations.skyrl as adapter  # noqa: E402
from envgym.evaluation import evaluate  # noqa: E402
from envgym.extras import MissingExtra  # noqa: E402
from envgym.registry import list_envs  # noqa: E402

#: (id, agent of envgym's evaluation, env kwargs): a puzzle played to its turn
#: limit (truncated) and solved (terminated), a tool world and an embodied
#: tool-style env solved over several turns, a game lost to the opponent.
CASES = [
    ("envgym/Sokoban-v0", "random", {}),
    ("envgym/Sokoban-v0", "oracle", {"difficulty": "medium"}),
    ("envgym/Retail-v0", "oracle", {}),
    ("envgym/Household-v0", "oracle", {}),
    ("envgym/TicTacToe-v0", "random", {"difficulty": "hard"}),
]
SEED = 11


def play_in_skyrl(env_id: str, seed: int, env_kwargs: dict, actions: list[str]) -> dict:
    """Make `env_id` through skyrl_gym as SkyRL's generator does and play `actions`."""
    env = skyrl_gym.make(
        env_id,
        env_config={},
        extras={"seed": seed, "env_kwargs": json.dumps(env_kwargs), "max_turns": 100},
    )
    assert isinstance(env, BaseTextEnv)
    chat, metadata = env.init([{"role": "user", "content": "placeholder"}])
    outputs = []
    for action in actions:
        out = env.step(action)
        outputs.append(out)
        if out["done"]:
            break
    metrics = env.get_metrics()
    env.close()
    return {"chat": chat, "metadata": metadata, "outputs": outputs, "metrics": metrics}


def test_every_envgym_id_is_in_skyrl_gyms_registry():
    ids = {spec.id for spec in list_envs()}
    assert ids <= set(skyrl_gym.registry)
    assert skyrl_gym.spec("envgym/Retail-v0").entry_point == adapter.ENTRY_POINT
    # Registering again leaves the registry as it was (skyrl_gym refuses duplicates).
    adapter.register_envs()
    assert ids <= set(skyrl_gym.registry)


@pytest.mark.parametrize(("env_id", "agent", "env_kwargs"), CASES)
def test_an_episode_equals_envgyms_own_evaluation(env_id, agent, env_kwargs):
    results = evaluate(env_id, agent, episodes=2, seed=SEED, env_kwargs=env_kwargs)
    for episode in results["episodes"]:
        seed = episode["seed"]
        played = play_in_skyrl(env_id, seed, env_kwargs, episode["actions"])

        # Seeds: the first conversation is the task gym.make(id).reset(seed=seed) gives.
        obs, info = gym.make(env_id, **env_kwargs).reset(seed=seed)
        expected_chat = [{"role": "system", "content": info["system_prompt"]}] * bool(
            info.get("system_prompt")
        ) + [{"role": "user", "content": obs}]
        assert played["chat"] == expected_chat
        assert played["metadata"]["seed"] == seed
        assert played["metadata"].get("task_id") == episode.get("task_id", info.get("task_id"))

        # Per-turn rewards, turns, the ending and success equal envgym's evaluation.
        outputs = played["outputs"]
        assert [out["reward"] for out in outputs] == pytest.approx(episode["rewards"])
        assert len(outputs) == episode["turns"]
        assert [out["done"] for out in outputs] == [False] * (len(outputs) - 1) + [True]
        last = outputs[-1]["metadata"]
        assert last["terminated"] == episode["terminated"]
        assert last["truncated"] == episode["truncated"]
        assert last["success"] == episode["success"]
        assert outputs[-1]["observations"] == []  # done: nothing more to answer
        assert played["metrics"] == {
            "return": pytest.approx(episode["return"]),
            "success": float(episode["success"]),
            "turns": episode["turns"],
            "truncated": float(episode["truncated"]),
        }
        for out in outputs:
            meta = out["metadata"]
            assert sum(meta["reward_components"].values()) == pytest.approx(out["reward"])
            assert "privileged" not in meta
            for message in out["observations"]:
                assert message["role"] == "user" and isinstance(message["content"], str)
        assert "privileged" not in played["metadata"]


def test_the_tool_env_passes_its_tools_and_keeps_the_gold_answer_out():
    env = skyrl_gym.make("envgym/Retail-v0", env_config={}, extras={"extra_info": {"seed": 2}})
    chat, metadata = env.init([])
    gym_env = gym.make("envgym/Retail-v0")
    _, info = gym_env.reset(seed=2)
    assert metadata["tools"] == info["tools"]
    assert "privileged" not in metadata
    gold = info["privileged"]["gold_actions"]
    text = json.dumps(chat)
    for action in gold:
        assert json.dumps(action["arguments"]) not in text
    # A tool call is answered in the next observation, a user message.
    call = {"name": "get_order_details", "arguments": {"order_id": "#W1"}}
    out = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
    assert not out["done"] and out["observations"][0]["role"] == "user"
    assert out["metadata"]["action_valid"] in (True, False)
    env.close()


def test_dataset_rows_round_trip_through_parquet_into_skyrl_gym(tmp_path):
    pd = pytest.importorskip("pandas")
    rows = adapter.dataset_rows("envgym/TicTacToe-v0", [5, 6], {"difficulty": "easy"})
    path = tmp_path / "train.parquet"
    pd.DataFrame(rows).to_parquet(path)
    for record in pd.read_parquet(path).to_dict("records"):
        # SkyRL passes every column but the prompt and env_class as the env's extras.
        extras = {k: v for k, v in record.items() if k not in ("prompt", "env_class")}
        env = skyrl_gym.make(record["env_class"], env_config={}, extras=extras)
        chat, _ = env.init(list(record["prompt"]))
        assert chat == [dict(m) for m in record["prompt"]]
        obs, _ = gym.make("envgym/TicTacToe-v0", difficulty="easy").reset(seed=record["seed"])
        assert chat[-1]["content"] == obs
        env.close()


def test_env_config_kwargs_apply_and_the_rows_win():
    env = skyrl_gym.make(
        "envgym/Sokoban-v0",
        env_config={"env_kwargs": {"difficulty": "hard", "max_turns": 3}},
        extras={"seed": 1, "env_kwargs": {"max_turns": 2}},
    )
    assert env.env_kwargs == {"difficulty": "hard", "max_turns": 2}
    assert env.max_turns == 2
    env.init([])
    first = env.step("<answer>Up</answer>")
    second = env.step("<answer>Up</answer>")
    assert not first["done"] and second["done"]
    assert second["metadata"]["truncated"] and not second["metadata"]["terminated"]
    env.close()


def test_without_skyrl_gym_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "skyrl_gym", None)
    monkeypatch.delitem(sys.modules, "envgym.integrations.skyrl")
    with pytest.raises(MissingExtra) as caught:
        importlib.import_module("envgym.integrations.skyrl")
    assert caught.value.extra == "skyrl"
    assert "pip install 'envgym[skyrl]'" in str(caught.value)


def test_the_example_plays_its_rows(tmp_path, capsys, monkeypatch):
    import runpy
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "skyrl_rollout.py"
    out = tmp_path / "rows.json"
    argv = [str(example), "--env", "envgym/TicTacToe-v0", "--seeds", "0", "1", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    runpy.run_path(str(example), run_name="__main__")
    printed = capsys.readouterr().out
    assert printed.count("terminated True") == 2 and "averaged as SkyRL logs them" in printed
    assert [row["seed"] for row in json.loads(out.read_text())] == [0, 1]
