"""Games against built-in opponents, self-play rollouts, and role baselines."""

from __future__ import annotations

import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import envgym  # noqa: F401
from envgym.agents import RandomAgent
from envgym.envs.games import kuhn_poker_v0, tictactoe_v0
from envgym.selfplay import GameLoop, RoleBaseline, Trajectory, draw_seats, play_episode, self_play

LEVELS = {"easy": "random", "medium": "mixed", "hard": "optimal"}


def play_versus(env, agent, seed):
    obs, info = env.reset(seed=seed)
    agent.reset()
    total = 0.0
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        total += reward
        if terminated or truncated:
            return total, info


def test_perfect_tictactoe_never_loses_to_random_in_1000_games():
    env = gym.make("envgym/TicTacToe-v0", difficulty="hard")
    agent = RandomAgent(seed=0)
    results = [play_versus(env, agent, seed)[0] for seed in range(1000)]
    seats = [env.reset(seed=s)[1]["player"] for s in range(1000)]
    assert max(results) <= 0.0, "the random agent must never beat perfect play"
    assert results.count(-1.0) > 800
    assert {"player_0", "player_1"} == set(seats), "the seed should vary the agent's seat"


def test_perfect_play_draws_against_itself():
    game = tictactoe_v0.env()
    rng = np.random.default_rng(0)

    def perfect(obs, info):
        player = int(info["player"][-1])
        return f"<answer>{game.unwrapped.optimal_action(player, rng)}</answer>"

    for seed in range(20):
        trajectories = play_episode(game, perfect, seed=seed)
        assert [t.episode_return for t in trajectories.values()] == [0.0, 0.0]


def test_random_opponent_is_beatable_and_seat_kwarg_holds():
    env = gym.make("envgym/TicTacToe-v0", difficulty="easy", seat=0)
    oracle = tictactoe_v0.raw_env()
    wins = 0
    for seed in range(50):
        obs, info = env.reset(seed=seed)
        assert info["player"] == "player_0"
        while True:
            oracle.board = list(env.unwrapped.game.board)
            move = oracle.optimal_action(0, np.random.default_rng(seed))
            obs, reward, terminated, truncated, info = env.step(f"<answer>{move}</answer>")
            if terminated or truncated:
                wins += info["success"]
                break
    assert wins >= 40


def test_callable_opponent_sees_its_own_observation():
    seen = []

    def opponent(obs, info):
        seen.append((obs, info["player"]))
        return f"<answer>{info['admissible_actions'][0]}</answer>"

    env = gym.make("envgym/TicTacToe-v0", opponent=opponent, seat=0)
    env.reset(seed=0)
    env.step("<answer>5</answer>")
    assert seen and seen[0][1] == "player_1"
    assert "You are O" in seen[0][0]


def test_a_callable_opponent_stays_out_of_snapshots():
    env = gym.make(
        "envgym/TicTacToe-v0",
        opponent=lambda obs, info: f"<answer>{info['admissible_actions'][-1]}</answer>",
        seat=0,
    ).unwrapped
    env.reset(seed=1)
    env.step("<answer>5</answer>")
    snap = pickle.loads(pickle.dumps(env.snapshot()))  # a lambda cannot be pickled
    first = env.step("<answer>1</answer>")
    env.restore(snap)
    assert env.step("<answer>1</answer>")[:4] == first[:4]
    assert callable(env.opponent)


def test_presets_pick_the_opponent_and_arguments_override_them():
    levels = {level: gym.make("envgym/TicTacToe-v0", difficulty=level) for level in LEVELS}
    assert {level: env.unwrapped.opponent for level, env in levels.items()} == LEVELS
    env = gym.make("envgym/TicTacToe-v0", difficulty="easy", opponent="optimal", max_turns=7)
    env.reset(seed=0, options={"difficulty": "medium"})
    assert (env.unwrapped.opponent, env.unwrapped.max_turns) == ("optimal", 7)


def test_invalid_reply_gets_one_retry_then_loses():
    env = gym.make("envgym/TicTacToe-v0", seat=0)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("I pick the middle")
    assert not terminated and info["action_valid"] is False and "answer" in obs
    obs, reward, terminated, truncated, info = env.step("<answer>10</answer>")
    assert terminated and reward == -1.0 and info["success"] is False


def test_task_id_replays_the_game_and_bad_options_are_clear():
    env = gym.make("envgym/TicTacToe-v0", difficulty="medium")
    obs, info = env.reset(seed=3)
    again = gym.make("envgym/TicTacToe-v0", difficulty="medium")
    obs2, info2 = again.reset(options={"task_id": info["task_id"]})
    assert (obs2, info2["player"]) == (obs, info["player"])
    with pytest.raises(ValueError, match="not a task id"):
        env.reset(options={"task_id": "seat9-1"})
    with pytest.raises(ValueError, match="opponent must be one of"):
        gym.make("envgym/TicTacToe-v0", opponent="grandmaster")
    with pytest.raises(ValueError, match="seat must be an integer from 0 to 1"):
        gym.make("envgym/TicTacToe-v0", seat=2)


def test_play_episode_trajectories_carry_zero_sum_returns():
    game = tictactoe_v0.env()
    policy = RandomAgent(seed=1)
    for seed in range(30):
        trajectories = play_episode(game, policy, seed=seed)
        returns = {agent: t.episode_return for agent, t in trajectories.items()}
        assert sum(returns.values()) == 0.0
        x, o = trajectories["player_0"], trajectories["player_1"]
        assert len(x.actions) in (len(o.actions), len(o.actions) + 1)
        assert all(len(t.observations) == len(t.actions) == len(t.rewards) for t in (x, o))
        assert all(info["player"] == "player_0" for info in x.infos)
        # The whole reward lands on each player's last move.
        assert all(r == 0.0 for r in x.rewards[:-1] + o.rewards[:-1])


def test_self_play_mixes_in_the_pool_and_rotates_seats():
    calls = {"self": 0, "past": 0}

    def learner(obs, info):
        calls["self"] += 1
        return f"<answer>{info['admissible_actions'][0]}</answer>"

    def past(obs, info):
        calls["past"] += 1
        return f"<answer>{info['admissible_actions'][-1]}</answer>"

    episodes = self_play(tictactoe_v0.env, learner, episodes=40, seed=0, pool=[past])
    names = [sorted(t.policy for t in ep.values()) for ep in episodes]
    assert ["pool[0]", "self"] in names and ["self", "self"] in names
    learner_seats = {
        agent for ep in episodes for agent, t in ep.items() if t.policy == "self" and len(ep) == 2
    }
    assert learner_seats == {"player_0", "player_1"}
    assert calls["past"] > 0
    with pytest.raises(ValueError):
        self_play(tictactoe_v0.env, learner, episodes=0)


def test_each_game_draws_its_seats_from_its_own_key():
    """A game's seats depend on its key alone (the trainer's [seed, step, game],
    self_play's [seed, episode]), never on the games drawn before it: a resumed
    run, or another rank, draws exactly the seats an uninterrupted run would."""
    agents = ["player_0", "player_1", "player_2"]
    keys = [[7, step, game] for step in range(30) for game in range(4)]
    in_order = [draw_seats(agents, 3, 0.5, key) for key in keys]
    resumed = [draw_seats(agents, 3, 0.5, key) for key in keys[60:]]
    assert resumed == in_order[60:]
    assert all(list(m.values()).count("self") >= 1 for m in in_order)
    assert {a for m in in_order for a in agents if m[a] == "self"} == set(agents)
    assert {name for m in in_order for name in m.values()} == {
        "self",
        "pool[0]",
        "pool[1]",
        "pool[2]",
    }
    assert all(set(draw_seats(agents, 0, 1.0, [0, g]).values()) == {"self"} for g in range(10))
    with pytest.raises(ValueError, match="pool_prob"):
        draw_seats(agents, 2, 1.5, 0)

    # A numpy integer is a key as its int is (what default_rng accepted before the tag).
    assert draw_seats(agents, 3, 0.5, np.int64(7)) == draw_seats(agents, 3, 0.5, 7)
    assert draw_seats(agents, 3, 0.5, (np.int64(7), 2)) == draw_seats(agents, 3, 0.5, [7, 2])

    # self_play plays episode e with the seats of the key [seed, e].
    def first(obs, info):
        return f"<answer>{info['admissible_actions'][0]}</answer>"

    played = self_play(tictactoe_v0.env, first, episodes=12, seed=5, pool=[first], pool_prob=0.5)
    names = [{agent: t.policy for agent, t in ep.items()} for ep in played]
    assert names == [draw_seats(["player_0", "player_1"], 1, 0.5, [5, e]) for e in range(12)]


def test_the_game_loop_steps_one_reply_at_a_time_and_says_when_it_is_over():
    game = tictactoe_v0.raw_env()
    seats = {agent: Trajectory(agent, "self") for agent in game.possible_agents}
    loop = GameLoop(game, seats, seed=0)
    # X plays the top row; O answers nonsense once (and moves again), then the middle row.
    script = ["<answer>1</answer>", "no", "<answer>4</answer>"]
    script += ["<answer>2</answer>", "<answer>5</answer>", "<answer>3</answer>"]
    movers = []
    while not loop.over:
        agent, observation, info = loop.to_move
        assert info["player"] == agent and observation
        movers.append(agent)
        loop.reply(script.pop(0))
    assert movers == ["player_0", "player_1", "player_1", "player_0", "player_1", "player_0"]
    x, o = seats["player_0"], seats["player_1"]
    assert x.rewards == [0.0, 0.0, 1.0] and x.valid == [True] * 3 and not x.forfeit
    assert o.valid == [False, True, True] and o.rewards == [0.0, 0.0, -1.0]
    assert len(o.observations) == 3 and "Invalid move" in o.observations[1]
    with pytest.raises(RuntimeError, match="game is over"):
        loop.reply("<answer>9</answer>")
    with pytest.raises(ValueError, match="player_1"):
        GameLoop(game, {"player_0": Trajectory("player_0", "self")}, seed=0)


def test_role_baseline_gives_role_conditioned_advantages():
    baseline = RoleBaseline(decay=0.5)
    for _ in range(20):
        baseline.update("player_0", 1.0)
        baseline.update("player_1", -1.0)
    assert baseline.advantage("player_0", 1.0) == pytest.approx(0.0, abs=1e-5)
    assert baseline.advantage("player_1", 1.0) == pytest.approx(2.0, abs=1e-5)
    with pytest.raises(ValueError):
        RoleBaseline(decay=1.0)


def test_a_person_can_play_the_optimal_opponent_in_the_terminal():
    moves = "\n".join(str(c) for c in range(1, 10)) + "\n" * 3
    result = subprocess.run(
        [sys.executable, "-m", "envgym", "play", "envgym/TicTacToe-v0", "--seed", "4"],
        input=moves,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "---+---+---" in result.stdout
    assert "Game over" in result.stdout


def test_episode_zeros_seats_do_not_follow_its_cards():
    """The key [seed, 0] (self_play's episode 0, the trainer's [seed, 0, 0]
    too) once drew from the stream that deals game `seed`: the learner then sat
    second exactly when player_0 held a Queen against a King, or a King. Its
    seat must be a coin flip whatever the cards."""
    game = kuhn_poker_v0.env()
    second = {card: [] for card in "JQK"}
    for seed in range(600):
        game.reset(seed=seed)
        card = game.privileged_info()["cards"]["player_0"]
        for key in ([seed, 0], [seed, 0, 0]):
            second[card].append(draw_seats(game.possible_agents, 1, 1.0, key)["player_1"] == "self")
    for card, sat in second.items():
        assert 0.38 < sum(sat) / len(sat) < 0.62, (
            f"the learner sits second {sum(sat)}/{len(sat)} with {card}"
        )
