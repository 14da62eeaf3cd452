"""TextVectorEnv.branch: targets become copies of the source on every worker kind.

`check_branch` is the whole contract, run on each kind (Ray's run is in
test_ray.py, which starts Ray once for its module): after ``branch``, the
targets show the source's observation, ``state_key`` and info; the same
replies then give them the source's observations and rewards step for step,
other replies give their own, and the source plays on exactly as a lone env
replaying its replies does.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from test_core import CounterEnv

import envgym
from envgym.vector import TextVectorEnv
from envgym.vector.seeds import episode_seed

SOKOBAN = "envgym/Sokoban-v0"


def check_branch(envs: TextVectorEnv, make_single, seed: int = 7) -> None:
    """Branch env 1 of an 8-env batch (groups of 4) into 2, 3 and 5 (5 is in the
    other group) after a few turns, and check what a trainer would see."""
    rng = np.random.default_rng(seed)
    obs, infos = envs.reset(seed=seed)
    played: list[str] = []  # env 1's replies since reset

    def moves(infos: dict, i: int) -> list[str]:
        return [f"<answer>{m}</answer>" for m in infos["admissible_actions"][i]]

    for _ in range(3):
        actions = [str(rng.choice(moves(infos, i))) for i in range(envs.num_envs)]
        obs, _, terminated, truncated, infos = envs.step(actions)
        played.append(actions[1])
        assert not (terminated[1] or truncated[1])

    assert envs.branch(1, [2, 3, 5]) == [2, 3, 5]
    for t in (2, 3, 5):
        assert envs.env_info(t) == envs.env_info(1)
        assert envs.env_info(t)["state_key"] == envs.env_info(1)["state_key"]
        assert envs.episode_seeds[t] == envs.episode_seeds[1]
        assert envs.episode_counts[t] == envs.episode_counts[1]
    assert envs.group_index[5] == 1 and envs.group_index[1] == 0  # groups stay put

    # Env 1 and its copies 2 and 5 get the same replies; copy 3 gets others.
    for _ in range(6):
        same = str(rng.choice(moves(infos, 1)))
        other = [m for m in moves(infos, 3) if m != same]
        actions = [str(rng.choice(moves(infos, i))) for i in range(envs.num_envs)]
        actions[1] = actions[2] = actions[5] = same
        actions[3] = str(rng.choice(other))
        before = envs.env_info(1)["state_key"]
        assert envs.env_info(3)["state_key"] == before  # diverged only by this step
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        played.append(same)
        for t in (2, 5):
            assert obs[t] == obs[1] and rewards[t] == rewards[1]
            assert envs.env_info(t)["state_key"] == envs.env_info(1)["state_key"]
        assert obs[3] != obs[1]  # another move, another board
        if terminated[1] or truncated[1]:
            break
        # From here copy 3 follows env 1 again, so it is compared with a fresh fork.
        envs.branch(1, [3])
    assert "final_info" not in infos or not any(infos["_final_info"][[2, 3, 5]])

    # The source never noticed: a lone env replaying its replies sees the same.
    single = make_single()
    single_obs, _ = single.reset(seed=int(envs.episode_seeds[1]))
    for action in played:
        single_obs, *_ = single.step(action)
    assert single_obs == obs[1]


@pytest.mark.parametrize("workers", ["sync", "subprocess", "prefetch"])
def test_branch_copies_a_sokoban_episode(workers):
    prefetch = workers == "prefetch"  # spares reset ahead must not undo a branch
    kind = "subprocess" if prefetch else workers
    with TextVectorEnv(
        SOKOBAN, num_envs=8, group_size=4, workers=kind, num_workers=2, prefetch=prefetch
    ) as envs:
        check_branch(envs, lambda: gym.make(SOKOBAN))


def test_branch_copies_an_env_that_forks_by_replay():
    # CounterEnv keeps its state outside the env object, as a sandbox does.
    with TextVectorEnv(env_fns=[CounterEnv] * 4, group_size=2) as envs:
        envs.reset(seed=3)
        envs.step(["5", "1", "2", "3"])
        assert envs.branch(0, 2) == [1, 2]
        assert envs.env_info(2)["state_key"] == envs.env_info(0)["state_key"]
        obs, rewards, *_ = envs.step(["4", "4", "7", "4"])
        assert obs[1] == obs[0] and rewards[1] == rewards[0]
        assert obs[2] != obs[0]


def test_remote_branch_over_envgym_serve_sessions():
    pytest.importorskip("websockets")
    pytest.importorskip("uvicorn")
    from envgym.remote import RemoteEnv, serve_in_background

    # Two snapshots at most per session: branch() lets each handle go once the
    # targets have restored, so branching many times never hits the limit.
    with serve_in_background(SOKOBAN, host="127.0.0.1", port=0, max_snapshots=2) as address:
        fns = [lambda: RemoteEnv(address)] * 8
        with TextVectorEnv(env_fns=fns, group_size=4, workers="remote") as envs:
            check_branch(envs, lambda: gym.make(SOKOBAN))
            for _ in range(5):
                assert envs.branch(0, 3) == [1, 2, 3]


def test_int_k_takes_the_next_slots_wrapping_over_the_batch():
    with TextVectorEnv(SOKOBAN, num_envs=4, group_size=2) as envs:
        envs.reset(seed=1)
        assert envs.branch(0, 1) == [1]
        assert envs.branch(2, 3) == [3, 0, 1]
        assert envs.branch(1, np.array([3])) == [3]


def test_bad_branches_say_what_to_pass():
    with TextVectorEnv(SOKOBAN, num_envs=4, group_size=2) as envs:
        with pytest.raises(RuntimeError, match="call reset"):
            envs.branch(0, 1)
        envs.reset(seed=1)
        with pytest.raises(IndexError, match=r"0\.\.3"):
            envs.branch(4, 1)
        with pytest.raises(IndexError, match=r"targets must be env indices in 0\.\.3"):
            envs.branch(0, [1, 9])
        with pytest.raises(ValueError, match="names the source 0 as a target"):
            envs.branch(0, [0, 1])
        with pytest.raises(ValueError, match="names slot 1 twice"):
            envs.branch(0, [1, 1])
        with pytest.raises(ValueError, match=r"k in 1\.\.3"):
            envs.branch(0, 4)
        with pytest.raises(ValueError, match="names no target"):
            envs.branch(0, [])
        envs.reset(queue=[5])  # one seed for four envs: three go idle
        with pytest.raises(ValueError, match="task-queue mode"):
            envs.branch(0, 1)


def test_branch_from_an_idle_env_is_refused():
    with TextVectorEnv(SOKOBAN, num_envs=2) as envs:
        envs.reset(seed=1)
        envs.active[1] = False  # as task-queue mode leaves an env with no seed left
        with pytest.raises(ValueError, match="env 1 is idle"):
            envs.branch(1, [0])


def test_envs_that_cannot_fork_are_named():
    with TextVectorEnv(env_fns=[lambda: gym.make("CartPole-v1")] * 2) as envs:
        envs.reset(seed=0)
        with pytest.raises(TypeError, match="CartPoleEnv has no snapshot"):
            envs.branch(0, 1)


def test_a_branched_episode_ends_as_the_source_would_and_groups_go_on():
    frozen = "envgym/FrozenLake-v0"
    with envgym.make_vec(frozen, num_envs=4, group_size=2, max_actions_per_turn=1) as envs:
        envs.reset(seed=10, options={"task_id": "SF/HG"})
        envs.step(["<answer>Right</answer>"] + ["<answer>Up</answer>"] * 3)
        envs.branch(0, [1, 2])  # 2 is in the other group
        obs, rewards, terminated, _, infos = envs.step(["<answer>Down</answer>"] * 4)
        # Down wins from where env 0 stood; env 3, still at the start, falls in the hole.
        assert terminated.all() and list(rewards) == [1.0, 1.0, 1.0, 0.0]
        assert [envs.final_info(i)["success"] for i in range(4)] == [True, True, True, False]
        # Their next tasks: env 1 its group's (the source's), env 2 its own group's.
        assert envs.episode_seeds[1] == envs.episode_seeds[0]
        assert envs.episode_seeds[2] == episode_seed(11, 1) != envs.episode_seeds[0]
        assert list(envs.episode_counts) == [1, 1, 1, 1]
