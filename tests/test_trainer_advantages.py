"""Advantage estimators (trainers/common/advantages.py) on trajectories worked out by hand.

Every expected number below is written out from the definitions in the
module docstring (returns, means, ddof=1 stds), never by calling the function
a second time, so a wrong formula fails here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from envgym.trainers.common.advantages import (
    ESTIMATORS,
    compute_advantages,
    zero_variance_groups,
)

SQRT3 = math.sqrt(3.0)
SQRT2 = math.sqrt(2.0)


def assert_advantages(actual: list[np.ndarray], expected: list[list[float]]) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)


def test_grpo_gives_every_turn_its_episode_normalised_return():
    # Group 0: returns 1, 0, 1, 0 -> mean 0.5, ddof=1 std sqrt(1/3), so +-sqrt(3)/2.
    # Group 1: both episodes returned 1 -> nothing to learn, 0 (not NaN).
    # Group 2: a lone episode has no baseline -> 0.
    advantages = compute_advantages(
        [0, 0, 0, 0, 1, 1, 2],
        [[0.0, 1.0], [0.0], [0.0, 0.0, 1.0], [0.0], [1.0], [0.5, 0.5], [3.0]],
        estimator="grpo",
    )
    up, down = SQRT3 / 2, -SQRT3 / 2
    assert_advantages(
        advantages,
        [[up, up], [down], [up, up, up], [down], [0.0], [0.0, 0.0], [0.0]],
    )


def test_grpo_without_std_is_return_minus_group_mean():
    advantages = compute_advantages(
        [0, 0, 0], [[2.0], [0.0, 0.0], [1.0]], estimator="grpo", scale_by_std=False
    )
    assert_advantages(advantages, [[1.0], [-1.0, -1.0], [0.0]])


def test_rloo_baseline_leaves_the_episode_out_and_is_never_std_scaled():
    # Returns 1, 0, 0, 2: A_0 = 1 - (0+0+2)/3, A_1 = 0 - (1+0+2)/3, A_3 = 2 - (1+0+0)/3.
    rewards = [[1.0], [0.0, 0.0], [0.0], [1.0, 1.0]]
    expected = [[1 / 3], [-1.0, -1.0], [-1.0], [5 / 3, 5 / 3]]
    for scale_by_std in (True, False):
        advantages = compute_advantages(
            [7, 7, 7, 7], rewards, estimator="rloo", scale_by_std=scale_by_std
        )
        assert_advantages(advantages, expected)
    lone = compute_advantages([0], [[4.0]], estimator="rloo")
    assert_advantages(lone, [[0.0]])


def test_turn_level_credits_earlier_turns_for_a_mid_episode_reward():
    # gamma 0.5. Episode 0 earns 1 on its second turn: G = [0.5, 1, 0].
    # Episode 1 earns nothing: G = [0, 0]. Pooled: mean 0.3, so without the
    # std A = G - 0.3; ddof=1 variance of the pool is (0.04+0.49+3*0.09)/4 = 0.2.
    groups, rewards = [0, 0], [[0.0, 1.0, 0.0], [0.0, 0.0]]
    plain = compute_advantages(groups, rewards, estimator="turn", gamma=0.5, scale_by_std=False)
    assert_advantages(plain, [[0.2, 0.7, -0.3], [-0.3, -0.3]])
    # The turn before the reward gets credit, discounted; the turn after none.
    assert plain[0][0] > plain[1][0] and plain[0][2] == pytest.approx(plain[1][0])

    scaled = compute_advantages(groups, rewards, estimator="turn", gamma=0.5)
    s = math.sqrt(0.2)
    assert_advantages(scaled, [[0.2 / s, 0.7 / s, -0.3 / s], [-0.3 / s, -0.3 / s]])

    # Undiscounted, the first turn gets the whole reward: G = [1, 1, 0], [0, 0].
    undiscounted = compute_advantages(groups, rewards, estimator="turn", scale_by_std=False)
    assert_advantages(undiscounted, [[0.6, 0.6, -0.4], [-0.4, -0.4]])


def test_turn_level_group_with_one_turn_in_total_gets_zero():
    assert_advantages(compute_advantages([0], [[1.0]], estimator="turn"), [[0.0]])


# Three episodes of one task, gamma = 0.5:
#   ep0: start -> hall -> goal (reward 1 on the last turn): G = [0.25, 0.5, 1], R = 1
#   ep1: start -> hall, fails:                              G = [0, 0],         R = 0
#   ep2: start -> cellar (reward 1 on the last turn):       G = [0.5, 1],       R = 1
# Step groups: start {0.25, 0, 0.5}, hall {0.5, 0}; goal and cellar are seen by
# one trajectory only, so their turns get A^S = 0.
GIGPO_GROUPS = [0, 0, 0]
GIGPO_REWARDS = [[0.0, 0.0, 1.0], [0.0, 0.0], [0.0, 1.0]]
GIGPO_KEYS = [["start", "hall", "goal"], ["start", "hall"], ["start", "cellar"]]


def test_gigpo_adds_step_advantage_of_shared_anchor_states_without_std():
    # A^E = R - 2/3. A^S: start: G - 0.25 -> 0, -0.25, +0.25; hall: G - 0.25 -> +-0.25.
    advantages = compute_advantages(
        GIGPO_GROUPS,
        GIGPO_REWARDS,
        GIGPO_KEYS,
        estimator="gigpo",
        gamma=0.5,
        scale_by_std=False,
    )
    assert_advantages(
        advantages,
        [
            [1 / 3 + 0.0, 1 / 3 + 0.25, 1 / 3],  # goal: seen once, A^S = 0
            [-2 / 3 - 0.25, -2 / 3 - 0.25],
            [1 / 3 + 0.25, 1 / 3],  # cellar: seen once, A^S = 0
        ],
    )

    doubled = compute_advantages(
        GIGPO_GROUPS,
        GIGPO_REWARDS,
        GIGPO_KEYS,
        estimator="gigpo",
        gamma=0.5,
        scale_by_std=False,
        step_weight=2.0,
    )
    assert doubled[0][1] == pytest.approx(1 / 3 + 2 * 0.25)
    assert doubled[1][0] == pytest.approx(-2 / 3 - 2 * 0.25)


def test_gigpo_with_std_normalises_each_level_by_its_own_group():
    # A^E: returns 1, 0, 1 -> ddof=1 std 1/sqrt(3): +sqrt(3)/3, -2 sqrt(3)/3.
    # start: G 0.25, 0, 0.5 -> std 0.25: 0, -1, +1. hall: G 0.5, 0 -> std sqrt(0.125): +-1/sqrt(2).
    advantages = compute_advantages(
        GIGPO_GROUPS, GIGPO_REWARDS, GIGPO_KEYS, estimator="gigpo", gamma=0.5
    )
    win, loss = SQRT3 / 3, -2 * SQRT3 / 3
    assert_advantages(
        advantages,
        [[win, win + 1 / SQRT2, win], [loss - 1, loss - 1 / SQRT2], [win + 1, win]],
    )


def test_gigpo_state_visited_twice_in_one_episode_joins_its_step_group_twice():
    # ep0 stays in "room" for two turns and then earns 1: G = [0.5, 1], R = 1.
    # ep1 leaves after one turn in "room" with nothing: G = [0], R = 0.
    # A^E = +-0.5; room = {0.5, 1, 0}, mean 0.5 -> A^S = 0, +0.5, -0.5.
    advantages = compute_advantages(
        [3, 3],
        [[0.0, 1.0], [0.0]],
        [["room", "room"], ["room"]],
        estimator="gigpo",
        gamma=0.5,
        scale_by_std=False,
    )
    assert_advantages(advantages, [[0.5, 1.0], [-1.0]])


def test_gigpo_compares_anchor_states_only_inside_one_episode_group():
    # The same key in two groups of one episode each: no baseline at either level.
    advantages = compute_advantages(
        [0, 1], [[1.0], [0.0]], [["start"], ["start"]], estimator="gigpo", scale_by_std=False
    )
    assert_advantages(advantages, [[0.0], [0.0]])


def test_gigpo_turns_without_a_state_key_get_no_step_advantage():
    advantages = compute_advantages(
        [0, 0], [[1.0], [0.0]], [[None], [None]], estimator="gigpo", scale_by_std=False
    )
    assert_advantages(advantages, [[0.5], [-0.5]])


def test_zero_variance_groups_lists_groups_with_nothing_to_learn():
    groups = [0, 0, 1, 1, 2]
    advantages = compute_advantages(groups, [[1.0], [1.0], [1.0], [0.0], [1.0]], estimator="grpo")
    # Group 0 all scored alike, group 2 has no baseline; group 1 has a winner.
    assert zero_variance_groups(groups, advantages) == {0, 2}
    assert zero_variance_groups(groups, advantages, atol=10.0) == {0, 1, 2}


def test_zero_variance_groups_keeps_a_group_with_only_step_level_signal():
    # Both episodes return 1, but from state "a" ep0 got there later (G 0.5 vs 1).
    groups, rewards, keys = [0, 0], [[0.0, 1.0], [1.0, 0.0]], [["a", "b"], ["a", "c"]]
    gigpo = compute_advantages(groups, rewards, keys, estimator="gigpo", gamma=0.5)
    grpo = compute_advantages(groups, rewards, estimator="grpo")
    assert zero_variance_groups(groups, gigpo) == set()
    assert zero_variance_groups(groups, grpo) == {0}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(groups=[0], rewards=[[1.0]], estimator="ppo"), "one of grpo, rloo, gigpo, turn"),
        (dict(groups=[0, 0], rewards=[[1.0]], estimator="grpo"), "one group id per episode"),
        (dict(groups=[0], rewards=[[1.0]], estimator="turn", gamma=1.5), r"outside \[0, 1\]"),
        (dict(groups=[0], rewards=[[1.0]], estimator="turn", gamma=-0.1), r"outside \[0, 1\]"),
        (dict(groups=[0, 0], rewards=[[1.0], []], estimator="grpo"), "episode 1 has no turns"),
        (dict(groups=[0], rewards=[[1.0]], estimator="gigpo"), "needs state_keys"),
        (
            dict(groups=[0], rewards=[[1.0, 0.0]], state_keys=[["a"]], estimator="gigpo"),
            "one key per turn",
        ),
        (
            dict(groups=[0], rewards=[[1.0]], state_keys=[["a"], ["b"]], estimator="gigpo"),
            "one list of keys per episode",
        ),
        (dict(groups=[0], rewards=[[float("nan")]], estimator="grpo"), "not a finite number"),
        (dict(groups=[0], rewards=[[1.0]], estimator="grpo", eps=0.0), "must be positive"),
    ],
)
def test_bad_input_says_what_to_pass(kwargs, message):
    with pytest.raises(ValueError, match=message):
        compute_advantages(**kwargs)


def test_zero_variance_groups_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="pass the list compute_advantages returned"):
        zero_variance_groups([0, 0], [np.zeros(1)])


def test_every_estimator_name_is_accepted():
    keys = [["s"], ["s"]]
    for estimator in ESTIMATORS:
        advantages = compute_advantages([0, 0], [[1.0], [0.0]], keys, estimator=estimator)
        assert advantages[0][0] > 0 > advantages[1][0], estimator
