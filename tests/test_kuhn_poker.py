"""Kuhn poker: the payoffs, the equilibrium opponent, hidden cards, and both env APIs."""

from __future__ import annotations

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest

import envgym  # noqa: F401
from envgym.envs.games import kuhn_poker_v0
from envgym.envs.games.kuhn_poker import GAME_VALUE, KuhnPoker, nash_strategy

CARD_NAMES = {"J": "Jack", "Q": "Queen", "K": "King"}
DEALS = [a + b for a, b in itertools.permutations("JQK", 2)]
TERMINAL_HISTORIES = [("check", "check"), ("check", "bet", "call"), ("check", "bet", "fold"),
                      ("bet", "call"), ("bet", "fold")]  # fmt: skip


def play_hand(cards: str, actions: list[str], **kwargs) -> KuhnPoker:
    game = kuhn_poker_v0.env(**kwargs)
    game.reset(seed=0, options={"cards": cards})
    for action in actions:
        assert not game.game_over
        assert action in game.legal_actions()
        game.step(f"<answer>{action}</answer>")
    return game


@pytest.mark.parametrize(
    "cards,actions,player_0_chips",
    [
        ("KJ", ["check", "check"], 1),
        ("JQ", ["check", "check"], -1),
        ("QJ", ["bet", "call"], 2),
        ("QK", ["bet", "call"], -2),
        ("JK", ["bet", "fold"], 1),  # the bettor wins, whatever the cards
        ("KQ", ["check", "bet", "fold"], -1),
        ("KQ", ["check", "bet", "call"], 2),
        ("JQ", ["check", "bet", "call"], -2),
    ],
)
def test_every_betting_line_pays_the_right_chips(cards, actions, player_0_chips):
    game = play_hand(cards, actions)
    assert all(game.terminations.values())
    assert game.rewards == {"player_0": player_0_chips, "player_1": -player_0_chips}
    assert "Game over" in game.observe("player_0") and "Game over" in game.observe("player_1")


def test_legal_actions_follow_the_betting():
    game = play_hand("QJ", [])
    assert game.legal_actions() == ["check", "bet"]
    game.step("<answer>CHECK</answer>")  # case does not matter
    assert game.agent_selection == "player_1" and game.legal_actions() == ["check", "bet"]
    game.step("<answer>bet</answer>")
    assert game.legal_actions() == ["call", "fold"]
    assert "Pot: 3 chips (you put in 1, your opponent 2)" in game.observe("player_0")
    game.step("<answer>check</answer>")
    assert game.infos["player_0"]["action_valid"] is False, "no checking into a bet"
    assert game.agent_selection == "player_0"


def test_forfeit_counts_as_a_fold():
    game = play_hand("KJ", ["check", "bet"])
    game.step("raise")
    game.step("all in")
    assert game.rewards == {"player_0": -1.0, "player_1": 1.0}


def test_a_match_of_several_hands_adds_up_the_chips():
    game = kuhn_poker_v0.env(rounds=3)
    game.reset(seed=0, options={"cards": ["KJ", "JQ", "QK"]})
    for actions in (["bet", "call"], ["check", "check"], ["bet", "fold"]):
        assert "hand" in game.observe("player_0")
        for action in actions:
            game.step(f"<answer>{action}</answer>")
    assert all(game.terminations.values())
    assert game.rewards == {"player_0": 2.0, "player_1": -2.0}  # +2, -1, +1
    assert "You finish with -2 chips" in game.observe("player_1")
    # A forfeit in the second hand keeps the first hand's chips and folds the second.
    game.reset(seed=0, options={"cards": ["KJ", "JQ"]})
    for action in ("bet", "call"):
        game.step(f"<answer>{action}</answer>")
    assert "Hand 1 result" in game.observe("player_0") and not game.game_over
    game.step("pass")
    game.step("pass")
    assert game.rewards == {"player_0": 1.0, "player_1": -1.0}


# ------------------------------------------------------------------ equilibrium
def payoffs() -> dict[tuple[str, tuple[str, ...]], float]:
    """Player 0's chips for every deal and betting line, as the game pays them."""
    return {
        (cards, line): play_hand(cards, list(line)).rewards["player_0"]
        for cards in DEALS
        for line in TERMINAL_HISTORIES
    }


PAYOFFS = payoffs()


def expected_value(policy_0, policy_1) -> float:
    """Player 0's exact expected chips; a policy maps (card, history) to probabilities."""
    total = 0.0
    for (cards, line), chips in PAYOFFS.items():
        probability = 1.0 / len(DEALS)
        for i, action in enumerate(line):
            policy = policy_0 if i % 2 == 0 else policy_1
            probability *= policy("JQK".index(cards[i % 2]), line[:i]).get(action, 0.0)
        total += probability * chips
    return total


def nash(player: int, alpha: float):
    return lambda card, history: nash_strategy(player, card, history, alpha)


def pure_strategies(decision_points):
    """Every deterministic policy over the given (card, history, actions) points."""
    for choice in itertools.product(*(actions for _, _, actions in decision_points)):
        table = {
            (card, history): a
            for (card, history, _), a in zip(decision_points, choice, strict=True)
        }
        yield lambda card, history, table=table: {table[(card, tuple(history))]: 1.0}


PLAYER_0_POINTS = [(c, h, a) for c in range(3) for h, a in
                   (((), ("check", "bet")), (("check", "bet"), ("call", "fold")))]  # fmt: skip
PLAYER_1_POINTS = [(c, h, a) for c in range(3) for h, a in
                   ((("check",), ("check", "bet")), (("bet",), ("call", "fold")))]  # fmt: skip


@pytest.mark.parametrize("alpha", [0.0, 1 / 6, 1 / 3])
def test_the_strategy_is_an_equilibrium_worth_minus_one_eighteenth(alpha):
    assert expected_value(nash(0, alpha), nash(1, alpha)) == pytest.approx(-1 / 18, abs=1e-12)
    assert GAME_VALUE == pytest.approx(-1 / 18)
    # No deterministic deviation (so no strategy at all) gains against it.
    best_for_0 = max(expected_value(s, nash(1, alpha)) for s in pure_strategies(PLAYER_0_POINTS))
    best_for_1 = min(expected_value(nash(0, alpha), s) for s in pure_strategies(PLAYER_1_POINTS))
    assert best_for_0 == pytest.approx(-1 / 18, abs=1e-12)
    assert best_for_1 == pytest.approx(-1 / 18, abs=1e-12)


def uniform(card, history):
    return (
        {"call": 0.5, "fold": 0.5}
        if history and history[-1] == "bet"
        else {"check": 0.5, "bet": 0.5}
    )


def sample_hands(hands: int, seats: dict[int, str], seed: int) -> np.ndarray:
    """Player 0's chips over `hands` hands, each seat playing "nash" or "random"."""
    game = kuhn_poker_v0.env()
    game.reset(seed=seed)
    rng = np.random.default_rng(seed)
    chips = np.empty(hands)
    for i in range(hands):
        game.reset()
        while not game.game_over:
            player = game.current
            if seats[player] == "nash":
                action = game.optimal_action(player, rng)
            else:
                legal = game.legal_actions()
                action = legal[int(rng.integers(2))]
            game.step(f"<answer>{action}</answer>")
        chips[i] = game.rewards["player_0"]
    return chips


def ci95(values: np.ndarray) -> tuple[float, float]:
    half = 1.96 * values.std(ddof=1) / math.sqrt(len(values))
    return values.mean() - half, values.mean() + half


def test_the_equilibrium_beats_random_play():
    as_first = sample_hands(10_000, {0: "nash", 1: "random"}, seed=1)
    as_second = -sample_hands(10_000, {0: "random", 1: "nash"}, seed=2)
    low, high = ci95(np.concatenate([as_first, as_second]))
    assert low > 0.0, f"the equilibrium should win chips from random play, CI [{low}, {high}]"
    # The exact value agrees with the sample.
    exact = (expected_value(nash(0, 1 / 3), uniform) - expected_value(uniform, nash(1, 1 / 3))) / 2
    assert exact > 0.1 and low < exact < high


def test_equilibrium_self_play_averages_minus_one_eighteenth():
    chips = sample_hands(100_000, {0: "nash", 1: "nash"}, seed=3)
    low, high = ci95(chips)
    assert low < -1 / 18 < high
    assert high < 0.0, "the first player loses on average"


def test_nash_alpha_is_checked():
    assert KuhnPoker(nash_alpha=0).nash_alpha == 0.0
    for bad in (-0.1, 0.5, "1/3", True):
        with pytest.raises(ValueError, match="nash_alpha"):
            KuhnPoker(nash_alpha=bad)
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="rounds"):
            KuhnPoker(rounds=bad)


def test_optimal_action_follows_the_strategy_frequencies():
    game = play_hand("JK", [])
    rng = np.random.default_rng(0)
    bets = sum(game.optimal_action(0, rng) == "bet" for _ in range(6000))
    assert abs(bets / 6000 - 1 / 3) < 0.03, "player 0 bluffs a Jack a third of the time"
    game = play_hand("QK", ["check"])
    assert {game.optimal_action(1, rng) for _ in range(50)} == {"bet"}, "player 1 bets a King"


# ----------------------------------------------------------------- hidden cards
def test_observations_and_infos_never_reveal_the_opponents_card():
    game = kuhn_poker_v0.env(rounds=3)
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(300):
        game.reset(seed=seed)
        while game.agents:
            cards = game.privileged_info()["cards"]
            for agent in game.agents:
                opponent = "player_1" if agent == "player_0" else "player_0"
                text = game.observe(agent)
                assert f"Your card: {CARD_NAMES[cards[agent]]}." in text
                assert CARD_NAMES[cards[opponent]] not in text
                # The info's state key is the player's information state: its own card only.
                key = game.infos[agent]["state_key"]
                assert f":{cards[agent]}:" in key and cards[opponent] not in key
                checked += 1
            agent = game.agent_selection
            if game.terminations[agent]:
                game.step(None)
                continue
            legal = game.infos[agent]["admissible_actions"]
            game.step(f"<answer>{legal[int(rng.integers(2))]}</answer>")
    assert checked > 3000


def test_single_agent_info_carries_both_cards_only_as_privileged():
    env = gym.make("envgym/KuhnPoker-v0")
    seats = set()
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        me = info["player"]
        seats.add(me)
        other = "player_1" if me == "player_0" else "player_0"
        cards = info["privileged"]["cards"]
        assert set(cards) == {"player_0", "player_1"} and cards[me] != cards[other]
        assert CARD_NAMES[cards[me]] in obs and CARD_NAMES[cards[other]] not in obs
    assert seats == {"player_0", "player_1"}


def test_single_agent_env_plays_one_hand_by_default_and_matches_on_request():
    one_hand = gym.make("envgym/KuhnPoker-v0")
    obs, info = one_hand.reset(seed=0)
    assert one_hand.unwrapped.max_turns == 4 and "hand 1 of" not in obs
    env = gym.make("envgym/KuhnPoker-v0", difficulty="hard", seat=1, rounds=2)
    obs, info = env.reset(seed=5)
    assert env.unwrapped.max_turns == 8 and "hand 1 of 2" in obs
    decisions, total = 0, 0.0
    while True:
        obs, reward, terminated, truncated, info = env.step(
            f"<answer>{info['admissible_actions'][0]}</answer>"
        )
        decisions += 1
        total += reward
        if terminated or truncated:
            break
    assert terminated and decisions == 2, "the second seat acts once per hand"
    assert total == info["reward_components"]["result"]


def test_a_match_keeps_its_turn_limit_when_the_level_changes():
    env = gym.make("envgym/KuhnPoker-v0", difficulty="easy", rounds=3)
    assert env.unwrapped.max_turns == 12
    env.reset(seed=0, options={"difficulty": "hard"})
    assert env.unwrapped.max_turns == 12 and env.unwrapped.opponent == "optimal"
    fixed = gym.make("envgym/KuhnPoker-v0", rounds=3, max_turns=5)
    fixed.reset(seed=0, options={"difficulty": "medium"})
    assert fixed.unwrapped.max_turns == 5
