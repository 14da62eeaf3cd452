"""envgym/Shop-v0: pages, actions, rewards, info, the oracle and the random agent."""

from __future__ import annotations

import pickle
import re

import gymnasium as gym
import numpy as np
import pytest

import envgym
from envgym.agents import RandomAgent, make_agent
from envgym.envs.shop import ShopEnv
from envgym.envs.shop.catalogue import GeneratedCatalogue
from envgym.envs.shop.oracle import ShopOracle

SMALL = 3000  # products in the catalogues of the quick tests


@pytest.fixture(scope="module")
def env():
    return ShopEnv(num_products=SMALL)


def _play(env, agent, seed):
    obs, info = env.reset(seed=seed)
    agent.reset()
    total, actions = 0.0, []
    while True:
        action = agent.act(obs, info)
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            return total, info, actions


def test_a_whole_episode_by_hand(env):
    obs, info = env.reset(seed=3)
    goal = info["privileged"]["goal"]
    assert obs.startswith("Instruction: [SEP] ") and obs.endswith(" [SEP] Search")
    assert goal["instruction"] in obs
    assert info["admissible_actions"] == [info["admissible_actions"][0]]
    assert info["admissible_actions"][0].startswith("search[")
    # The target product is always among those that satisfy the goal.
    assert goal["asin"] in info["privileged"]["satisfying_asins"]

    obs, reward, terminated, _, info = env.step(info["admissible_actions"][0])
    assert "Page 1 (Total results: " in obs and reward == 0.0 and not terminated
    assert "click[Back to Search]" in info["admissible_actions"]
    target = goal["asin"]
    # Find the target on the results pages (it is a BM25 hit for its own words).
    while f"click[{target}]" not in info["admissible_actions"]:
        assert "click[Next >]" in info["admissible_actions"], "target not in the results"
        obs, _, _, _, info = env.step("click[Next >]")
    obs, _, _, _, info = env.step(f"<answer>click[{target.lower()}]</answer>")
    assert "click[Buy Now]" in info["admissible_actions"]
    assert f"{target}|" in info["state_key"]
    for _group, value in goal["options"]:
        obs, _, _, _, info = env.step(f"click[{value}]")
        assert info["action_valid"]
    assert all(f"{g}={v}" in info["state_key"] for g, v in goal["options"])
    obs, _, _, _, sub = env.step("click[Features]")
    assert "click[< Prev]" in sub["admissible_actions"]
    obs, _, _, _, info = env.step("click[< Prev]")
    obs, reward, terminated, truncated, info = env.step("click[Buy Now]")
    assert terminated and not truncated
    assert reward == pytest.approx(1.0) and info["success"]
    assert sum(info["reward_components"].values()) == pytest.approx(reward)
    assert info["purchase"]["asin"] == target
    assert "Your score (min 0.0, max 1.0): 1.0000" in obs


def test_invalid_replies_use_a_turn_and_say_what_to_do(env):
    obs, info = env.reset(seed=1)
    obs, reward, _, _, info = env.step("click[Buy Now]")
    assert not info["action_valid"] and reward == 0.0
    assert "There is no button 'Buy Now' on this page" in obs
    assert info["turn"] == 1
    obs, _, _, _, info = env.step("i would like the red one")
    assert not info["action_valid"] and "search[your query]" in obs
    obs, _, _, _, info = env.step(info["admissible_actions"][0])
    obs, _, _, _, info = env.step("search[again]")
    assert not info["action_valid"] and "click[Back to Search] first" in obs


def test_privileged_data_never_reaches_the_observation(env):
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        privileged = info["privileged"]
        others = [a for a in privileged["satisfying_asins"] if a != privileged["goal"]["asin"]]
        assert privileged["goal"]["asin"] not in obs
        assert not any(a in obs for a in others)


def test_truncated_after_fifteen_turns(env):
    env.reset(seed=0)
    for turn in range(1, 16):
        _, _, terminated, truncated, info = env.step("nothing")
        assert not terminated
        assert truncated == (turn == 15)


def test_snapshot_restore_replays_the_same_future(env):
    env.reset(seed=5)
    _, _, _, _, info = env.step(env.unwrapped._task_info()["admissible_actions"][0])
    snap = pickle.loads(pickle.dumps(env.snapshot()))
    first = env.step(info["admissible_actions"][-1])
    env.restore(snap)
    again = env.step(info["admissible_actions"][-1])
    assert first[0] == again[0] and first[1] == again[1]


def test_html_mode_shows_the_same_page():
    text_env = ShopEnv(num_products=SMALL)
    html_env = ShopEnv(num_products=SMALL, observation="html")
    t_obs, t_info = text_env.reset(seed=2)
    h_obs, h_info = html_env.reset(seed=2)
    assert h_obs.lstrip().lower().startswith("<!doctype html>")
    assert t_info["privileged"] == h_info["privileged"]
    action = t_info["admissible_actions"][0]
    t_obs, _, _, _, t_info = text_env.step(action)
    h_obs, _, _, _, h_info = html_env.step(action)
    assert t_info["admissible_actions"] == h_info["admissible_actions"]
    for asin in re.findall(r"click\[(B[0-9A-Z]{9})\]", " ".join(t_info["admissible_actions"])):
        assert asin in h_obs


def test_difficulty_sets_how_much_the_instruction_asks():
    for level, count in (("easy", 1), ("medium", 2), ("hard", 3)):
        env = ShopEnv(num_products=SMALL, difficulty=level)
        for seed in range(5):
            _, info = env.reset(seed=seed)
            assert len(info["privileged"]["goal"]["attributes"]) == count
            assert 1 <= len(info["privileged"]["goal"]["options"]) <= count


def test_bad_arguments_say_what_is_allowed():
    with pytest.raises(ValueError, match="num_products"):
        ShopEnv(num_products=10)
    with pytest.raises(ValueError, match="observation must be 'text' or 'html'"):
        ShopEnv(num_products=SMALL, observation="pdf")
    with pytest.raises(ValueError, match="attributes"):
        ShopEnv(num_products=SMALL, attributes=9)


def test_oracle_succeeds_on_at_least_95_percent_of_500_instructions():
    """The acceptance bar, on the default 50,000-product catalogue at every level."""
    successes, episodes = 0, 0
    for level in ("easy", "medium", "hard"):
        env = gym.make("envgym/Shop-v0", difficulty=level)
        oracle = make_agent("oracle", env)
        assert isinstance(oracle, ShopOracle)
        count = 168 if level != "hard" else 164
        for seed in range(count):
            _, info, _ = _play(env, oracle, seed)
            successes += info["success"]
            episodes += 1
    assert episodes == 500
    assert successes / episodes >= 0.95, f"{successes}/{episodes}"


def test_random_agent_is_far_below_the_oracle(env):
    rewards = []
    agent = RandomAgent(seed=0)
    for seed in range(100):
        total, _, _ = _play(env, agent, seed)
        rewards.append(total)
    assert 0.0 <= float(np.mean(rewards)) < 0.5


def test_catalogue_is_shared_by_every_env_of_a_process():
    a, b = ShopEnv(num_products=SMALL), ShopEnv(num_products=SMALL)
    a.reset(seed=0)
    b.reset(seed=0)
    assert a.catalogue is b.catalogue and a.index is b.index
    assert isinstance(a.catalogue, GeneratedCatalogue)


def test_registered_ids():
    assert "envgym/Shop-v0" in [s.id for s in envgym.list_envs()]
    assert "envgym/WebShop-v0" in [s.id for s in envgym.list_envs()]


def test_oracle_reads_html_pages_too():
    env = ShopEnv(num_products=SMALL, difficulty="medium", observation="html")
    oracle = ShopOracle()
    wins = sum(_play(env, oracle, seed)[1]["success"] for seed in range(20))
    assert wins >= 18
