"""envgym ids through the installed skyrl-gym package (``envgym[skyrl]``).

Every env is made with ``skyrl_gym.make`` from skyrl_gym's own registry and
played through its ``BaseTextEnv`` interface (``init``, ``step`` returning a
``BaseTextEnvStepOutput``). The contract (per-turn rewards, turns, ending,
success and metrics equal to ``gym.make(id)`` stepped with the same replies,
the seed's task, nothing privileged in the chat or the metadata, truncation
kept apart from termination) is checked for every adapter in
tests/test_integration_contract.py, with tests/integration_drivers.py's
``play_skyrl``. Here: the registry, the tools, the dataset rows, env_config,
the missing extra and the example.
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
from envgym.extras import MissingExtra  # noqa: E402
from envgym.registry import list_envs  # noqa: E402


def test_every_envgym_id_is_in_skyrl_gyms_registry():
    ids = {spec.id for spec in list_envs()}
    assert ids <= set(skyrl_gym.registry)
    assert skyrl_gym.spec("envgym/Retail-v0").entry_point == adapter.ENTRY_POINT
    # Registering again leaves the registry as it was (skyrl_gym refuses duplicates).
    adapter.register_envs()
    assert ids <= set(skyrl_gym.registry)


def test_the_tool_env_passes_its_tools_and_answers_a_call_in_a_user_message():
    # The seed read from verl-style rows' extra_info, as SkyRL's datasets may hold it.
    env = skyrl_gym.make("envgym/Retail-v0", env_config={}, extras={"extra_info": {"seed": 2}})
    assert isinstance(env, BaseTextEnv)
    chat, metadata = env.init([])
    obs, info = gym.make("envgym/Retail-v0").reset(seed=2)
    assert metadata["tools"] == info["tools"] and chat[-1]["content"] == obs
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
