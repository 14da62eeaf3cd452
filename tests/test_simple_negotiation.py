"""SimpleNegotiation: offer parsing, trades, rewards, private values, the heuristic."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.envs.games import simple_negotiation_v0
from envgym.envs.games.simple_negotiation import SimpleNegotiation

RESOURCES = ("Wood", "Stone", "Wheat", "Sheep", "Brick")


def answer(move: str) -> str:
    return f"<answer>{move}</answer>"


def setup(
    game: SimpleNegotiation,
    inventories: list[list[int]],
    values: list[list[int]] | None = None,
) -> None:
    """Give both players known inventories (and values) at the start of a game."""
    game.inventory = [list(stock) for stock in inventories]
    game.start_inventory = [list(stock) for stock in inventories]
    if values is not None:
        game.values = [list(v) for v in values]
    game._version += 1  # the legal-move cache keys on it


def worth(stock, values) -> int:
    return sum(n * v for n, v in zip(stock, values, strict=True))


def play(game: SimpleNegotiation, rng, seed: int, heuristic_seats=()) -> dict[str, float]:
    game.reset(seed=seed)
    totals = {agent: 0.0 for agent in game.possible_agents}
    for agent in game.agent_iter():
        _, reward, terminated, truncated, info = game.last()
        totals[agent] += reward
        if terminated or truncated:
            game.step(None)
            continue
        seat = game.possible_agents.index(agent)
        if seat in heuristic_seats:
            move = game.optimal_action(seat, rng)
        else:
            legal = info["admissible_actions"]
            move = legal[int(rng.integers(len(legal)))]
        game.step(answer(move))
    return totals


# ------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    "reply,move",
    [
        ("offer: give 2 Wood, 1 Brick for 3 Sheep", "offer: give 2 Wood, 1 Brick for 3 Sheep"),
        (
            "OFFER:  give 2 woods and 1 bricks   for 3 sheep.",
            "offer: give 2 Wood, 1 Brick for 3 Sheep",
        ),
        ("give 1 Brick + 2 Wood for 3 Sheep", "offer: give 2 Wood, 1 Brick for 3 Sheep"),
        ("offer 1 Wood, 1 Wood for 1 Stone", "offer: give 2 Wood for 1 Stone"),
        ("offer: give 1 Wheat in exchange for 2x Stone", "offer: give 1 Wheat for 2 Stone"),
        ("Accept", None),  # nothing pending yet
        ("pass", "pass"),
    ],
)
def test_offers_are_read_from_loose_text(reply, move):
    game = SimpleNegotiation()
    game.reset(seed=0)
    setup(game, [[4, 0, 2, 0, 3], [0, 5, 0, 6, 0]])
    parsed, error = game._parse_action(0, answer(reply))
    assert parsed == move
    if move is None:
        assert "no offer to accept" in error


@pytest.mark.parametrize(
    "reply,complaint",
    [
        ("offer: give 5 Wood for 1 Sheep", "You have 4 Wood, so you cannot give 5"),
        ("offer: give 1 Wood for 7 Sheep", "player_1 has 6 Sheep, so they cannot give you 7"),
        ("offer: give 1 Wood for 1 Wheat", "player_1 has 0 Wheat"),
        ("offer: give 1 Gold for 1 Sheep", "'1 gold'"),
        ("offer: give 1 Wood for 1 Wood", "Wood is on both sides"),
        ("offer: give 0 Wood for 1 Sheep", "at least one unit"),
        ("offer: give 1 Wood", "Could not read"),
        ("let's trade", "Could not read"),
    ],
)
def test_bad_or_infeasible_offers_get_feedback_and_a_retry(reply, complaint):
    game = simple_negotiation_v0.env()
    game.reset(seed=1)
    setup(game, [[4, 0, 2, 0, 3], [0, 5, 0, 6, 0]])
    game.step(answer(reply))
    assert game.infos["player_0"]["action_valid"] is False
    assert game.agent_selection == "player_0" and game.pending is None
    seen = game.observe("player_0")
    assert complaint in seen
    if "Could not read" in complaint:
        assert "offer: give <n> <Resource>" in seen, "the feedback shows the expected format"


def test_reply_without_tags_names_the_answer_format():
    game = SimpleNegotiation()
    game.reset(seed=2)
    game.step("I give you wood")
    seen = game.observe("player_0")
    assert "<answer>" in seen and "offer: give <n> <Resource>" in seen


# --------------------------------------------------------------- the trade
def test_accept_executes_exactly_the_offered_trade():
    game = SimpleNegotiation()
    game.reset(seed=3)
    setup(game, [[4, 0, 2, 0, 3], [0, 5, 0, 6, 1]])
    game.step(answer("offer: give 2 Wood, 1 Brick for 3 Sheep"))
    assert game.agent_selection == "player_1"
    seen = game.observe("player_1")
    assert (
        "Pending offer from player_0: they give you 2 Wood, 1 Brick and you give them 3 Sheep"
        in seen
    )
    assert "accept" in game.legal_actions()
    game.step(answer("accept"))
    assert game.inventory == [[2, 0, 2, 3, 2], [2, 5, 0, 3, 2]]
    assert game.pending is None
    assert "player_0 gave 2 Wood, 1 Brick and got 3 Sheep" in game.observe("player_0")


def test_an_offer_lasts_one_reply_and_the_game_lasts_a_fixed_number_of_moves():
    game = SimpleNegotiation(max_rounds=2)
    game.reset(seed=4)
    setup(game, [[4, 0, 2, 0, 3], [0, 5, 0, 6, 1]])
    before = [list(s) for s in game.inventory]
    game.step(answer("offer: give 1 Wood for 1 Sheep"))
    game.step(answer("pass"))  # declines it
    assert game.pending is None and game.offers[-1][3] == "declined"
    assert game._parse_action(0, answer("accept"))[0] is None
    game.step(answer("offer: give 1 Brick for 1 Stone"))
    assert not game.game_over
    game.step(answer("reject"))
    assert game.game_over and game.inventory == before
    assert game.rewards == {"player_0": 0.0, "player_1": 0.0}
    assert "Game over" in game.observe("player_1")


def test_rewards_are_each_players_relative_value_change():
    game = SimpleNegotiation()
    rng = np.random.default_rng(5)
    traded = 0
    for seed in range(80):
        game.reset(seed=seed)
        start = [list(s) for s in game.inventory]
        values = game.privileged_info()["values"]
        totals = {a: 0.0 for a in game.possible_agents}
        for agent in game.agent_iter():
            _, reward, terminated, truncated, info = game.last()
            totals[agent] += reward
            if terminated or truncated:
                game.step(None)
                continue
            legal = info["admissible_actions"]
            game.step(answer(legal[int(rng.integers(len(legal)))]))
        traded += game.inventory != start
        for p, agent in enumerate(game.possible_agents):
            own = [values[agent][r] for r in RESOURCES]
            expected = (worth(game.inventory[p], own) - worth(start[p], own)) / worth(start[p], own)
            assert totals[agent] == pytest.approx(expected)
        # Trades move resources, they never make or destroy them.
        assert [a + b for a, b in zip(*game.inventory, strict=True)] == [
            a + b for a, b in zip(*start, strict=True)
        ]
    assert traded > 10, "random play should trade sometimes"


def test_a_forfeit_costs_the_offender_only():
    game = SimpleNegotiation()
    game.reset(seed=6)
    setup(game, [[4, 0, 2, 0, 3], [0, 5, 0, 6, 1]], [[10] * 5, [20, 5, 5, 5, 40]])
    game.step(answer("offer: give 1 Wood for 1 Sheep"))
    game.step(answer("accept"))  # player_1 gains: Wood is worth 20 to them, Sheep 5
    game.step("nonsense")
    game.step("more nonsense")
    assert game.game_over
    assert game.rewards["player_0"] == -1.0
    gain = (20 - 5) / worth([0, 5, 0, 6, 1], [20, 5, 5, 5, 40])
    assert game.rewards["player_1"] == pytest.approx(gain)


# --------------------------------------------------------- private values
def test_values_never_reach_the_other_players_observation_or_state_key():
    game = SimpleNegotiation()
    rng = np.random.default_rng(7)
    checked = 0
    for seed in range(30):
        game.reset(seed=seed)
        while True:
            for p in range(2):
                seen = game.observe(f"player_{p}")
                key = game._information_key(p)
                original = game.values[1 - p]
                game.values[1 - p] = [v + 1 for v in original]
                assert game.observe(f"player_{p}") == seen
                assert game._information_key(p) == key, "info['state_key'] leaks values"
                game.values[1 - p] = original
                checked += 1
            if game.game_over:
                break
            legal = game.legal_actions()
            game.step(answer(legal[int(rng.integers(len(legal)))]))
    assert checked > 300


def test_observation_shows_own_values_and_both_inventories():
    env = gym.make("envgym/SimpleNegotiation-v0", seat=0)
    obs, info = env.reset(seed=8)
    game = env.unwrapped.game
    mine = info["privileged"]["values"]["player_0"]
    assert (
        "Your values per unit (private): " + ", ".join(f"{r} {mine[r]}" for r in RESOURCES) in obs
    )
    other = ", ".join(f"{r} {n}" for r, n in zip(RESOURCES, game.inventory[1], strict=True))
    assert f"player_1's inventory: {other}." in obs


# ---------------------------------------------------------------- heuristic
def test_the_heuristic_earns_more_than_random_play():
    game = SimpleNegotiation()
    rng = np.random.default_rng(9)
    games = 300
    heuristic, baseline = [], []
    for seed in range(games):
        seat = seed % 2
        heuristic.append(play(game, rng, seed, heuristic_seats=(seat,))[f"player_{seat}"])
        baseline.append(play(game, rng, seed)[f"player_{seat}"])
    assert np.mean(heuristic) > np.mean(baseline) + 0.02
    assert np.mean(heuristic) > 0.02


def test_the_heuristic_accepts_only_gains_and_never_loses_value():
    game = SimpleNegotiation()
    rng = np.random.default_rng(10)
    for seed in range(150):
        totals = play(game, rng, seed, heuristic_seats=(0,))
        assert totals["player_0"] >= 0.0
    game.reset(seed=11)
    setup(game, [[4, 0, 2, 0, 3], [0, 5, 0, 6, 1]], [[5, 5, 5, 30, 5], [10, 10, 10, 10, 10]])
    game.step(answer("offer: give 1 Wood for 1 Sheep"))  # player_1 would give a 10 for a 10
    assert game.optimal_action(1, rng) != "accept"
    game.step(answer("offer: give 1 Sheep for 1 Wood"))  # the same trade, offered back
    assert game.optimal_action(0, rng) == "accept"  # Sheep is worth 30 to player_0, Wood 5


def test_two_heuristic_players_find_trades_that_help_both():
    game = SimpleNegotiation()
    rng = np.random.default_rng(12)
    results = np.array(
        [list(play(game, rng, s, heuristic_seats=(0, 1)).values()) for s in range(100)]
    )
    assert (results >= 0).all()
    assert results.mean() > 0.05


# ------------------------------------------------------------ AEC, forking
def test_full_aec_loop():
    game = simple_negotiation_v0.env(max_rounds=4)
    rng = np.random.default_rng(13)
    game.reset(seed=14)
    order, removed = [], []
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, info = game.last()
        assert obs in game.observation_space(agent) and info["player"] == agent
        if terminated or truncated:
            removed.append(agent)
            game.step(None)
            continue
        order.append(agent)
        legal = info["admissible_actions"]
        assert "pass" in legal
        game.step(answer(legal[int(rng.integers(len(legal)))]))
    assert order == ["player_0", "player_1"] * 4
    assert sorted(removed) == ["player_0", "player_1"] and game.agents == []


def test_snapshot_restore_replays_the_game_exactly():
    game = SimpleNegotiation()
    game.reset(seed=15)
    rng = np.random.default_rng(0)
    for _ in range(3):
        game.step(answer(game.optimal_action(game.current, rng)))
    snap = game.snapshot()

    def run(target: SimpleNegotiation) -> list:
        local = np.random.default_rng(1)
        seen = []
        while not target.game_over:
            target.step(answer(target.optimal_action(target.current, local)))
            seen.append(
                (target.observe("player_0"), target.observe("player_1"), dict(target.rewards))
            )
        return seen

    first = run(game)
    game.restore(snap)
    assert run(game) == first
    fresh = SimpleNegotiation()
    fresh.reset(seed=99)
    fresh.restore(pickle.loads(pickle.dumps(snap)))
    assert run(fresh) == first


# --------------------------------------------------------- single-agent env


def test_single_agent_games_always_finish_within_the_turn_limit():
    env = gym.make("envgym/SimpleNegotiation-v0", difficulty="medium", max_rounds=3)
    assert env.unwrapped.max_turns == 6
    for seed in range(20):
        env.reset(seed=seed)
        turns, done = 0, False
        while not done:  # every reply invalid once, then valid: the slowest possible game
            _, _, terminated, truncated, info = env.step("no tags")
            assert info["action_valid"] is False and not (terminated or truncated)
            _, _, terminated, truncated, _ = env.step(answer("pass"))
            done = terminated or truncated
            turns += 2
        assert terminated and not truncated and turns == 6
    env.reset(seed=0, options={"difficulty": "easy"})
    assert env.unwrapped.max_turns == 6, "a level change keeps the derived limit"
    assert gym.make("envgym/SimpleNegotiation-v0", max_turns=9).unwrapped.max_turns == 9


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="max_rounds"):
        SimpleNegotiation(max_rounds=0)
    with pytest.raises(ValueError, match="distinct one-word names"):
        SimpleNegotiation(resources=["Wood", "wood"])
    with pytest.raises(ValueError, match="players"):
        SimpleNegotiation(num_players=3)
