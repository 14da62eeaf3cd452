"""PettingZoo AEC conformance for every envgym game, with text spaces.

PettingZoo's own `api_test` assumes array observations ('str' object has no
attribute 'dtype'), so this file checks the same contract for Text spaces:
spaces per agent, the agent_iter/last/step loop, step(None) for done agents,
bookkeeping dicts that track `agents`, rewards that sum to zero in zero-sum
games, seeded determinism, and illegal moves handled by the env.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import envgym
import envgym.envs.games as games_pkg
from envgym.multiagent import MultiAgentTextEnv

GAME_MODULES = sorted(
    name for _, name, _ in pkgutil.iter_modules(games_pkg.__path__) if name.endswith("_v0")
)
CASES = []
for _name in GAME_MODULES:
    _module = importlib.import_module(f"envgym.envs.games.{_name}")
    for _players in _module.raw_env.player_counts:
        CASES.append(pytest.param(_name, _players, id=f"{_name}-{_players}p"))


def make(name: str, players: int):
    module = importlib.import_module(f"envgym.envs.games.{name}")
    return module.env(num_players=players)


def random_game(env, seed: int, rng: np.random.Generator, junk_rate: float = 0.0) -> dict:
    """Play one game with random legal moves (and some junk); check the loop as we go."""
    env.reset(seed=seed)
    assert env.agents == env.possible_agents
    log = {"observations": [], "actions": [], "returns": dict.fromkeys(env.possible_agents, 0.0)}
    dead_steps = 0
    for agent in env.agent_iter(max_iter=10_000):
        assert agent in env.agents
        assert set(env.rewards) == set(env.agents) == set(env.terminations)
        assert set(env.truncations) == set(env.infos) == set(env._cumulative_rewards)
        obs, reward, terminated, truncated, info = env.last()
        assert isinstance(obs, str) and obs in env.observation_space(agent)
        assert isinstance(reward, float) and np.isfinite(reward)
        assert info["player"] == agent
        log["observations"].append(obs)
        log["returns"][agent] += reward
        if terminated or truncated:
            assert info["admissible_actions"] == []
            env.step(None)
            dead_steps += 1
            continue
        legal = info["admissible_actions"]
        assert legal, "a live agent to move must have a legal move"
        if rng.random() < junk_rate:
            action = rng.choice(["", "<answer>nonsense</answer>", "🙂", "\x00" * 3])
        else:
            action = f"<answer>{legal[int(rng.integers(len(legal)))]}</answer>"
        log["actions"].append(action)
        env.step(action)
    assert env.agents == [], "the loop must end with every agent removed"
    assert dead_steps == len(env.possible_agents)
    return log


@pytest.mark.parametrize("name,players", CASES)
def test_spaces_are_text_per_agent(name, players):
    env = make(name, players)
    env.reset(seed=0)
    assert env.num_agents == players == env.max_num_agents
    for agent in env.possible_agents:
        assert isinstance(env.observation_space(agent), spaces.Text)
        assert isinstance(env.action_space(agent), spaces.Text)
        assert env.observe(agent) in env.observation_space(agent)
    assert env.agent_selection in env.agents
    assert isinstance(env.unwrapped, MultiAgentTextEnv)


@pytest.mark.parametrize("name,players", CASES)
def test_five_hundred_random_games_follow_the_aec_contract(name, players):
    env = make(name, players)
    zero_sum = env.unwrapped.zero_sum
    rng = np.random.default_rng(0)
    for seed in range(500):
        log = random_game(env, seed, rng, junk_rate=0.05)
        if zero_sum:
            assert sum(log["returns"].values()) == pytest.approx(0.0, abs=1e-9), log["returns"]


@pytest.mark.parametrize("name,players", CASES)
def test_same_seed_and_moves_replay_the_same_game(name, players):
    first = random_game(make(name, players), 7, np.random.default_rng(3))
    second = random_game(make(name, players), 7, np.random.default_rng(3))
    assert first == second


@pytest.mark.parametrize("name,players", CASES)
def test_dead_agent_accepts_only_none(name, players):
    env = make(name, players)
    rng = np.random.default_rng(1)
    env.reset(seed=1)
    for _agent in env.agent_iter(max_iter=10_000):
        obs, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            with pytest.raises(ValueError, match="None"):
                env.step("<answer>anything</answer>")
            return
        legal = info["admissible_actions"]
        env.step(f"<answer>{legal[int(rng.integers(len(legal)))]}</answer>")
    pytest.fail("the game never ended")


@pytest.mark.parametrize("name,players", CASES)
def test_illegal_move_warns_once_then_forfeits(name, players):
    env = make(name, players)
    env.reset(seed=2)
    mover = env.agent_selection
    before = env.unwrapped._state_key()
    env.step("<answer>not a move</answer>")
    assert env.agent_selection == mover, "the player gets a second chance"
    assert env.infos[mover]["action_valid"] is False
    assert "Invalid move" in env.observe(mover)
    assert env.unwrapped._state_key() == before, "an invalid move changes nothing"
    env.step("still not a move")
    assert all(env.terminations.values())
    assert env._cumulative_rewards[mover] == env.unwrapped.illegal_move_penalty
    if env.unwrapped.zero_sum:
        assert sum(env._cumulative_rewards.values()) == pytest.approx(0.0)


@pytest.mark.parametrize("name,players", CASES)
def test_snapshot_restore_replays_the_rest_of_the_game(name, players):
    env = make(name, players).unwrapped
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    for _ in range(2):
        if env.game_over:
            break
        legal = env.legal_actions()
        env.step(f"<answer>{legal[int(rng.integers(len(legal)))]}</answer>")
    snap = env.snapshot()

    def rest():
        moves_rng = np.random.default_rng(11)
        seen = []
        while env.agents:
            agent = env.agent_selection
            obs, reward, terminated, truncated, info = env.last()
            seen.append((agent, obs, reward, terminated))
            if terminated or truncated:
                env.step(None)
            else:
                legal = info["admissible_actions"]
                env.step(f"<answer>{legal[int(moves_rng.integers(len(legal)))]}</answer>")
        return seen

    original = rest()
    env.restore(snap)
    assert rest() == original


@pytest.mark.parametrize("name,players", CASES)
def test_render_and_manual(name, players):
    module = importlib.import_module(f"envgym.envs.games.{name}")
    env = module.env(num_players=players, render_mode="ansi")
    env.reset(seed=0)
    assert isinstance(env.render(), str) and env.render()
    doc = module.raw_env.__doc__
    for section in ("Description", "Action Space", "Rewards", "Episode End", "Version History"):
        assert section in doc
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.close()


def test_wrong_player_count_is_a_clear_error():
    module = importlib.import_module("envgym.envs.games.tictactoe_v0")
    with pytest.raises(ValueError, match="is for 2 players"):
        module.env(num_players=3)


def test_unknown_render_mode_names_the_game_and_the_modes():
    module = importlib.import_module("envgym.envs.games.tictactoe_v0")
    with pytest.raises(ValueError, match=r"not supported by \w+; use one of \['ansi', 'human'\]"):
        module.env(render_mode="rgb_array")


@pytest.mark.parametrize("name,players", CASES)
def test_every_players_info_is_current_after_every_move(name, players):
    """All infos are rebuilt each step: none keeps a stale state key or turn."""
    env = make(name, players).unwrapped
    rng = np.random.default_rng(0)
    for seed in range(30):
        env.reset(seed=seed)
        while not env.game_over:
            for player, agent in enumerate(env.possible_agents):
                assert env.infos[agent]["state_key"] == env._information_key(player)
                assert env.infos[agent]["turn"] == env.moves
            legal = env.legal_actions()
            env.step(f"<answer>{legal[int(rng.integers(len(legal)))]}</answer>")


# --------------------------------------------------------- hostile arguments
GAME_IDS = sorted(s.id for s in envgym.list_envs() if "game" in s.tags)


@pytest.mark.parametrize("name", GAME_MODULES)
def test_hostile_move_caps_and_retries_are_refused(name):
    module = importlib.import_module(f"envgym.envs.games.{name}")
    with pytest.raises(ValueError, match="max_moves must be an integer from 1 to 100000"):
        module.env(max_moves=10**9)
    with pytest.raises(ValueError, match="illegal_retries must be an integer from 0 to 100"):
        module.env(illegal_retries=10**9)


@pytest.mark.parametrize(
    "name,kwargs,message",
    [
        ("connect_four_v0", {"search_depth": 40}, "search_depth must be an integer from 1 to 8"),
        ("kuhn_poker_v0", {"rounds": 10**9}, "rounds must be an integer from 1 to 1000"),
        ("simple_negotiation_v0", {"resources": ["Wood" * 10**5, "Stone"]}, "at most 20 each"),
    ],
)
def test_hostile_game_kwargs_are_refused(name, kwargs, message):
    module = importlib.import_module(f"envgym.envs.games.{name}")
    with pytest.raises(ValueError, match=message) as error:
        module.env(**kwargs)
    assert len(str(error.value)) < 400  # nothing huge is echoed back


def test_kuhn_poker_takes_at_most_one_fixed_deal_per_hand():
    game = importlib.import_module("envgym.envs.games.kuhn_poker_v0").env(rounds=2)
    with pytest.raises(ValueError, match="holds 100000 deals but the match has 2 hand"):
        game.reset(seed=0, options={"cards": ["KJ"] * 100_000})


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_hostile_task_ids_of_the_single_agent_games_are_refused(env_id):
    env = gym.make(env_id)
    for task_id, message in [
        ("seat0-" + "9" * 20, "seed must be an integer from 0 to 9223372036854775807"),
        ("seat0-" + "9" * 5000, "not a task id of this game"),
        ("seat7-1", "seat must be an integer from 0 to"),
        ("seat" + "1" * 5000 + "-1", "not a task id of this game"),
    ]:
        with pytest.raises(ValueError, match=message) as error:
            env.reset(options={"task_id": task_id})
        assert len(str(error.value)) < 400  # a huge id is not echoed back whole
    with pytest.raises(ValueError, match="max_turns must be an integer from 1 to 100000"):
        gym.make(env_id, max_turns=10**12)


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_a_seeded_reset_plays_that_seeds_game_with_the_seats_shared(env_id):
    """reset(seed=s) plays the game of seed s (the multi-agent game's own
    reset(seed=s)) at seat s % players; unseeded resets and seeds of 2**63 or
    more draw both from the env's generator, and a task id replays any of them."""
    env = gym.make(env_id, difficulty="easy")
    game = env.unwrapped.game
    players = game.num_players
    twin = type(game)()
    seats = Counter()
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        assert info["task_id"] == f"seat{seed % players}-{seed}"
        seats[seed % players] += 1
        twin.reset(seed=seed)
        assert game.privileged_info() == twin.privileged_info()  # the same deal
        assert obs == env.reset(options={"task_id": info["task_id"]})[0]
    assert set(seats.values()) == {12 // players}
    fixed = gym.make(env_id, seat=players - 1)
    assert fixed.reset(seed=4)[1]["task_id"] == f"seat{players - 1}-4"
    for _ in range(3):  # drawn: any seat, a seed below 2**62
        drawn = env.reset()[1]["task_id"]
        seat, game_seed = drawn.removeprefix("seat").split("-")
        assert int(seat) < players and int(game_seed) < 2**62
    assert env.reset(seed=2**63)[1]["task_id"] != f"seat0-{2**63}"
    # A seeded reset leaves the env's generator as Gymnasium seeds it.
    env.reset(seed=5)
    assert (
        env.unwrapped.np_random.bit_generator.state == np.random.default_rng(5).bit_generator.state
    )
