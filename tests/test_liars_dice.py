"""Liar's Dice: the rules, zero-sum rewards, hidden dice, the heuristic, the AEC loop."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.envs.games import liars_dice_v0
from envgym.envs.games.liars_dice import LiarsDice


def answer(move: str) -> str:
    return f"<answer>{move}</answer>"


def deal(game: LiarsDice, hands: list[list[int]]) -> None:
    """Replace the current round's dice (and dice counts) with `hands`."""
    game.dice = [sorted(hand) for hand in hands]
    game.counts = [len(hand) for hand in hands]
    game._version += 1  # the legal-move cache keys on it


def play_random_game(game: LiarsDice, rng: np.random.Generator, seed: int, heuristic_seat=None):
    """Play one game through the AEC loop; return the total reward per agent."""
    game.reset(seed=seed)
    totals = {agent: 0.0 for agent in game.possible_agents}
    for agent in game.agent_iter():
        _, reward, terminated, truncated, info = game.last()
        totals[agent] += reward
        if terminated or truncated:
            game.step(None)
            continue
        seat = game.possible_agents.index(agent)
        if seat == heuristic_seat:
            move = game.optimal_action(seat, rng)
        else:
            legal = info["admissible_actions"]
            move = legal[int(rng.integers(len(legal)))]
        game.step(answer(move))
    return totals


# ------------------------------------------------------------------ rules
def test_a_raise_needs_more_dice_or_the_same_number_of_a_higher_face():
    game = liars_dice_v0.env()
    game.reset(seed=0)
    assert "liar" not in game.legal_actions()  # the opener must bid
    game.step(answer("bid 2 4"))
    assert game.agent_selection == "player_1"
    legal = game.legal_actions()
    assert legal[0] == "liar"
    assert "bid 2 5" in legal and "bid 3 1" in legal
    assert "bid 2 4" not in legal and "bid 2 3" not in legal and "bid 1 6" not in legal

    game.step(answer("bid 2 3"))
    assert game.infos["player_1"]["action_valid"] is False
    assert game.agent_selection == "player_1", "an invalid move is retried by the same player"
    assert "does not raise the current bid 2 4" in game.observe("player_1")
    game.step(answer("3 fives"))  # a loose spelling of bid 3 5
    assert game.infos["player_1"]["action_valid"] is True
    assert game.bid == (3, 5) and game.bidder == 1


def test_quantities_stop_at_the_number_of_dice_in_play():
    game = LiarsDice(num_players=2, dice_per_player=2)
    game.reset(seed=1)
    assert game.legal_actions()[-1] == "bid 4 6"
    game.step(answer("bid 4 6"))
    assert game.legal_actions() == ["liar"]
    game.step(answer("bid 5 1"))
    assert "from 1 to 4" in game.observe("player_1")


def test_moves_are_read_from_loose_spellings():
    game = LiarsDice()
    game.reset(seed=2)
    for reply, move in [
        ("<answer>bid 1 3</answer>", "bid 1 3"),
        ("<answer>Bid: 2 x 3</answer>", "bid 2 3"),
        ("<think>hmm</think><answer>raise to 2 fours</answer>", "bid 2 4"),
        ("\\boxed{2 5s}", "bid 2 5"),
    ]:
        assert game._parse_action(game.current, reply) == (move, None)
    assert game._parse_action(0, "<answer>liar</answer>")[0] is None  # no bid yet
    game.step(answer("bid 1 3"))
    assert game._parse_action(1, "<answer> LIAR! </answer>") == ("liar", None)
    assert game._parse_action(1, "<answer>Challenge</answer>") == ("liar", None)
    _, error = game._parse_action(1, "<answer>bid 2 7</answer>")
    assert "faces go from 1 to 6" in error.lower()
    _, error = game._parse_action(1, "no tags")
    assert "<answer>bid Q F</answer>" in error and "<answer>liar</answer>" in error


@pytest.mark.parametrize("bid,holds", [("bid 3 5", True), ("bid 4 5", False)])
def test_a_challenge_costs_the_caller_or_the_bidder_a_die(bid, holds):
    game = LiarsDice()
    game.reset(seed=3)
    deal(game, [[1, 5, 5], [2, 3, 5]])  # three 5s on the table
    game.step(answer(bid))
    game.step(answer("liar"))
    loser = 1 if holds else 0
    assert game.counts[loser] == 2 and game.counts[1 - loser] == 3
    assert game.round_no == 2 and game.bid is None
    assert game.agent_selection == f"player_{loser}", "the loser opens the next round"
    seen = game.observe("player_0")
    assert "Revealed dice: player_0: 1 5 5; player_1: 2 3 5" in seen
    assert ("the bid held" if holds else "the bid was false") in seen
    assert f"player_{loser} lost a die" in seen
    assert [len(hand) for hand in game.dice] == game.counts, "the next round is rolled"


def test_knocked_out_players_are_skipped_and_the_last_with_dice_wins():
    game = LiarsDice(num_players=3)
    game.reset(seed=4)
    deal(game, [[2], [6, 6, 6], [6, 6, 6]])
    game.step(answer("bid 1 1"))  # player_0 bids on a face nobody has
    game.step(answer("liar"))  # player_1 calls: player_0 loses their only die
    assert game.counts == [0, 3, 3]
    assert game.agent_selection == "player_1", "the next player still in opens"
    assert "you are out" in game.observe("player_0")
    assert game.infos["player_0"]["admissible_actions"] == []
    game.step(answer("bid 1 1"))
    assert game.agent_selection == "player_2"
    game.step(answer("bid 1 2"))
    assert game.agent_selection == "player_1", "player_0 is skipped"
    assert not game.game_over

    # Play on until one player has dice left.
    deal(game, [[], [3], [4, 4]])
    game.step(answer("bid 1 4"))
    game.step(answer("liar"))  # player_2 calls a true bid and loses a die
    deal(game, [[], [3], [1]])
    assert game.agent_selection == "player_2"
    game.step(answer("bid 2 1"))
    game.step(answer("liar"))  # player_1 calls a false bid: player_2 is out
    assert game.game_over
    assert game.outcome == "player_1 wins"
    assert game.rewards == {"player_0": -0.5, "player_1": 1.0, "player_2": -0.5}
    assert "Game over: player_1 wins" in game.observe("player_0")


@pytest.mark.parametrize("players", [2, 3, 4])
def test_rewards_are_zero_sum_with_one_winner(players):
    game = LiarsDice(num_players=players)
    rng = np.random.default_rng(players)
    for seed in range(60):
        totals = play_random_game(game, rng, seed)
        values = sorted(totals.values())
        assert sum(values) == pytest.approx(0.0)
        assert values[-1] == 1.0, "exactly one winner gets +1"
        assert values[:-1] == pytest.approx([-1 / (players - 1)] * (players - 1))


@pytest.mark.parametrize("players", [2, 3])
def test_losing_by_two_invalid_replies_is_zero_sum_too(players):
    game = LiarsDice(num_players=players)
    game.reset(seed=5)
    game.step("no tags here")
    assert "answer" in game.observe("player_0")
    game.step("still nothing")
    assert game.game_over
    assert game.rewards["player_0"] == -1.0
    assert sum(game.rewards.values()) == pytest.approx(0.0)


# ---------------------------------------------------------- hidden dice
def test_observations_and_state_keys_never_show_other_players_dice():
    game = LiarsDice(num_players=3)
    rng = np.random.default_rng(6)
    checked = 0
    for seed in range(20):
        game.reset(seed=seed)
        while not game.game_over:
            for p in range(3):
                seen = game.observe(f"player_{p}")
                key = game._information_key(p)
                original = game.dice
                # Other hands change, counts stay: player p's view must not move.
                game.dice = [
                    hand if q == p else [(d % 6) + 1 for d in hand]
                    for q, hand in enumerate(original)
                ]
                assert game.observe(f"player_{p}") == seen
                assert game._information_key(p) == key, "info['state_key'] leaks dice"
                game.dice = original
                checked += 1
            legal = game.legal_actions()
            game.step(answer(legal[int(rng.integers(len(legal)))]))
    assert checked > 500
    dice = game.privileged_info()["dice"]
    assert set(dice) == {"player_0", "player_1", "player_2"}


def test_single_agent_privileged_info_holds_every_hand():
    env = gym.make("envgym/LiarsDice-v0", num_players=3)
    obs, info = env.reset(seed=8)
    hands = info["privileged"]["dice"]
    me = info["player"]
    assert f"Your dice: {' '.join(map(str, hands[me]))}." in obs
    assert all(len(hand) == 3 for hand in hands.values())


# ---------------------------------------------------------------- heuristic
@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_heuristic_beats_random_players(players):
    game = LiarsDice(num_players=players)
    rng = np.random.default_rng(10 + players)
    games = 240
    wins = 0
    for seed in range(games):
        seat = seed % players
        totals = play_random_game(game, rng, seed, heuristic_seat=seat)
        wins += totals[f"player_{seat}"] > 0
    assert wins / games > 0.8, f"heuristic won {wins}/{games}; chance is 1/{players}"


def test_the_heuristic_calls_an_impossible_bid_and_raises_a_sure_one():
    game = LiarsDice()
    game.reset(seed=9)
    rng = np.random.default_rng(0)
    deal(game, [[6, 6, 6], [1, 2, 3]])
    game.step(answer("bid 5 6"))  # player_1 holds no 6: five 6s among three dice is impossible
    assert game.optimal_action(1, rng) == "liar"
    game2 = LiarsDice()
    game2.reset(seed=9)
    deal(game2, [[1, 2, 3], [6, 6, 6]])
    game2.step(answer("bid 2 6"))  # player_1 holds three 6s: the bid is certain
    move = game2.optimal_action(1, rng)
    assert move == "bid 3 6", "the surest minimal raise is on its own sixes"


# ------------------------------------------------------------ AEC, forking
def test_full_aec_loop_with_four_players():
    game = liars_dice_v0.env(num_players=4, dice_per_player=2)
    rng = np.random.default_rng(11)
    game.reset(seed=12)
    removed = []
    steps = 0
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, info = game.last()
        assert isinstance(obs, str) and obs in game.observation_space(agent)
        assert info["player"] == agent
        if terminated or truncated:
            removed.append(agent)
            game.step(None)
            continue
        assert game.counts[game.possible_agents.index(agent)] > 0, "only players with dice move"
        legal = info["admissible_actions"]
        game.step(answer(legal[int(rng.integers(len(legal)))]))
        steps += 1
    assert sorted(removed) == game.possible_agents and game.agents == []
    assert steps >= 12, "three players lose two dice each: six challenges, each after a bid"


def test_snapshot_restore_replays_the_game_exactly():
    game = LiarsDice(num_players=3)
    game.reset(seed=13)
    rng = np.random.default_rng(0)
    for _ in range(6):
        legal = game.legal_actions()
        game.step(answer(legal[int(rng.integers(len(legal)))]))
    snap = game.snapshot()
    moves = [int(rng.integers(1000)) for _ in range(40)]

    def run(target: LiarsDice) -> list:
        seen = []
        for pick in moves:
            if target.game_over:
                break
            legal = target.legal_actions()
            target.step(answer(legal[pick % len(legal)]))
            seen.append((target.agent_selection, target.observe(target.agent_selection),
                         dict(target.rewards)))  # fmt: skip
        return seen

    first = run(game)
    game.restore(snap)
    assert run(game) == first
    fresh = LiarsDice(num_players=3)
    fresh.reset(seed=99)
    fresh.restore(pickle.loads(pickle.dumps(snap)))
    assert run(fresh) == first


# --------------------------------------------------------- single-agent env


def test_single_agent_games_end_with_a_result():
    env = gym.make("envgym/LiarsDice-v0", difficulty="hard", num_players=3)
    rng = np.random.default_rng(14)
    results = []
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            legal = info["admissible_actions"]
            obs, reward, terminated, truncated, info = env.step(
                answer(legal[int(rng.integers(len(legal)))])
            )
            done = terminated or truncated
        assert terminated, "a game ends long before the turn limit"
        results.append(reward)
    assert set(results) <= {1.0, -0.5}


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="2, 3, 4 players"):
        LiarsDice(num_players=5)
    with pytest.raises(ValueError, match="dice_per_player"):
        LiarsDice(dice_per_player=0)
