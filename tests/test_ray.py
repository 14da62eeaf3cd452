"""TextVectorEnv(workers="ray"): env chunks as Ray actors on a local Ray instance.

One Ray instance (2 CPUs, no dashboard, bound to 127.0.0.1) serves the whole
module; starting Ray is most of this module's time.
"""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest

from envgym.vector import TextVectorEnv

ray = pytest.importorskip("ray")

SOKOBAN = "envgym/Sokoban-v0"
FROZEN = "envgym/FrozenLake-v0"


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )
    yield
    ray.shutdown()


def rollout(envs: TextVectorEnv, steps: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    obs, infos = envs.reset(seed=seed)
    seen = [obs]
    for _ in range(steps):
        actions = [
            f"<answer>{moves[int(rng.integers(len(moves)))]}</answer>"
            for moves in infos["admissible_actions"]
        ]
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        finals = list(infos.get("final_obs", [None] * envs.num_envs))
        seen.append((obs, rewards.tolist(), terminated.tolist(), truncated.tolist(), finals))
    return seen


def test_ray_workers_match_sync_for_the_same_seeds_and_actions():
    runs = {}
    for workers in ("sync", "ray"):
        with TextVectorEnv(
            [SOKOBAN, FROZEN], num_envs=8, group_size=2, workers=workers, num_workers=2
        ) as envs:
            runs[workers] = rollout(envs, steps=30, seed=4)
    assert runs["ray"] == runs["sync"]
    assert any(any(f is not None for f in step[4]) for step in runs["sync"][1:])


def test_killed_ray_actor_gives_an_errored_episode_and_a_fresh_actor():
    with TextVectorEnv(SOKOBAN, num_envs=4, group_size=2, workers="ray", num_workers=2) as envs:
        envs.reset(seed=0)
        envs.step(["<answer>Up</answer>"] * 4)
        before = envs.worker_pids()
        os.kill(before[1], signal.SIGKILL)
        obs, rewards, terminated, truncated, infos = envs.step(["<answer>Down</answer>"] * 4)
        assert list(infos["_error"]) == [False, False, True, True]
        assert "Ray actor died" in infos["error"][2]
        assert list(truncated) == [False, False, True, True]
        assert obs[2] == obs[3] == gym.make(SOKOBAN).reset(seed=int(envs.episode_seeds[2]))[0]
        after = envs.worker_pids()
        assert after[0] == before[0] and after[1] != before[1]
        *_, infos = envs.step(["<answer>Left</answer>"] * 4)
        assert "error" not in infos and list(infos["turn"]) == [3, 3, 1, 1]


def test_ray_actors_take_closures_as_env_factories():
    difficulty = "medium"
    fns = [lambda: gym.make(FROZEN, difficulty=difficulty)] * 2
    with TextVectorEnv(env_fns=fns, group_size=2, workers="ray", num_workers=1) as envs:
        obs, _ = envs.reset(seed=8)
        assert obs[0] == obs[1] == gym.make(FROZEN, difficulty="medium").reset(seed=8)[0]


def test_branch_copies_an_episode_across_ray_actors():
    from test_vector_branch import check_branch

    # Two actors: env 1's snapshot is pickled from one actor into the other (env 5).
    with TextVectorEnv(SOKOBAN, num_envs=8, group_size=4, workers="ray", num_workers=2) as envs:
        check_branch(envs, lambda: gym.make(SOKOBAN))
