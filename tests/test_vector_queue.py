"""TextVectorEnv's explicit per-env seeds, task-queue mode and per-env reads
(`env_info`, `final_info`, `env_attr`): what an evaluation plays through."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import envgym
from envgym.vector import TextVectorEnv

GUESS = "envgym/GuessNumber-v0"
SOKOBAN = "envgym/Sokoban-v0"


def first_obs(env_id: str, seed: int, **kwargs) -> str:
    return gym.make(env_id, **kwargs).reset(seed=int(seed))[0]


def drain(envs: TextVectorEnv, queue, reply: str = "<answer>1</answer>") -> list[tuple]:
    """Play every queued seed to its end with a fixed reply; return, per episode
    start, (env index, seed, first observation, first info), in start order."""
    obs, _ = envs.reset(queue=queue)
    started = [
        (i, int(envs.episode_seeds[i]), obs[i], envs.env_info(i))
        for i in range(envs.num_envs)
        if envs.active[i]
    ]
    while envs.active.any():
        was_active = envs.active.copy()
        # Idle envs' actions are ignored, so anything goes there.
        actions = [reply if was_active[i] else "ignored" for i in range(envs.num_envs)]
        obs, _, _, _, _ = envs.step(actions)
        for i in range(envs.num_envs):
            if not was_active[i]:
                assert obs[i] == "" and envs.final_info(i) is None
            elif envs.final_info(i) is not None and envs.active[i]:
                started.append((i, int(envs.episode_seeds[i]), obs[i], envs.env_info(i)))
    return started


def test_reset_takes_one_seed_per_env():
    seeds = [3, 9, 3, 11]
    with envgym.make_vec(SOKOBAN, num_envs=4, group_size=2) as envs:
        obs, _ = envs.reset(seed=seeds)
        assert list(envs.episode_seeds) == seeds
        assert list(obs) == [first_obs(SOKOBAN, s) for s in seeds]
        # Envs that started on the same seed meet the same tasks after autoresets.
        for _ in range(200):
            obs, _, term, trunc, _ = envs.step(["<answer>Up</answer>"] * 4)
            if (term | trunc)[0]:
                break
        assert obs[0] == obs[2] == first_obs(SOKOBAN, envs.episode_seeds[0])
        assert envs.episode_seeds[0] == envs.episode_seeds[2] != 3


@pytest.mark.parametrize(
    "seed", [[1, 2, 3], [1, 2, 3, -4], [1, 2, 3, "4"], [True, 2, 3, 4]], ids=str
)
def test_a_seed_list_needs_one_non_negative_int_per_env(seed):
    with envgym.make_vec(GUESS, num_envs=4) as envs:
        with pytest.raises(TypeError, match="one non-negative int per env \\(4\\)"):
            envs.reset(seed=seed)


def test_the_queue_plays_every_seed_once_then_the_envs_idle():
    seeds = [40, 41, 42, 43, 44, 45, 46]
    with envgym.make_vec(GUESS, num_envs=3, max_turns=2) as envs:
        started = drain(envs, seeds)
        assert sorted(s for _, s, _, _ in started) == seeds
        for _, seed, obs, info in started:
            assert obs == first_obs(GUESS, seed, max_turns=2)
            assert info["task_id"] == gym.make(GUESS, max_turns=2).reset(seed=seed)[1]["task_id"]
        assert not envs.active.any()
        # A step with every env idle runs nothing and ends nothing.
        obs, rewards, terminated, truncated, infos = envs.step(["x"] * 3)
        assert obs == ("", "", "") and not rewards.any() and not (terminated | truncated).any()


def test_a_short_queue_leaves_the_other_envs_idle_from_the_start():
    with envgym.make_vec(GUESS, num_envs=4) as envs:
        obs, _ = envs.reset(queue=[7])
        assert list(envs.active) == [True, False, False, False]
        assert obs[1:] == ("", "", "") and obs[0] == first_obs(GUESS, 7)
        assert envs.env_info(3) == {}


@pytest.mark.parametrize("kind", ["subprocess", "prefetch"])
def test_worker_processes_play_the_queue_as_the_sync_env_does(kind):
    seeds = list(range(100, 109))
    with envgym.make_vec(GUESS, num_envs=3, max_turns=3) as envs:
        want = drain(envs, seeds)
    vector = {"num_workers": 2, "prefetch": kind == "prefetch"}
    with envgym.make_vec(
        GUESS, num_envs=3, workers="subprocess", vector_kwargs=vector, max_turns=3
    ) as envs:
        assert drain(envs, seeds) == want


def test_each_env_source_takes_seeds_from_its_own_queue():
    sources = [(GUESS, {"difficulty": "easy"}), (GUESS, {"difficulty": "hard"})]
    with TextVectorEnv(sources, num_envs=4) as envs:
        assert list(envs.source_index) == [0, 1, 0, 1]
        with pytest.raises(ValueError, match="one list of seeds per source"):
            envs.reset(queue=[1, 2, 3])
        started = drain(envs, [[1, 2, 3], [7, 8]])
    easy = sorted(s for i, s, _, _ in started if i % 2 == 0)
    hard = sorted(s for i, s, _, _ in started if i % 2 == 1)
    assert (easy, hard) == ([1, 2, 3], [7, 8])
    for i, seed, obs, _ in started:
        level = "easy" if i % 2 == 0 else "hard"
        assert obs == first_obs(GUESS, seed, difficulty=level)


def test_seed_and_queue_together_are_refused():
    with envgym.make_vec(GUESS, num_envs=2) as envs:
        with pytest.raises(ValueError, match="seed or queue"):
            envs.reset(seed=0, queue=[1, 2])


@pytest.mark.parametrize("workers", ["sync", "subprocess"])
def test_one_envs_info_final_info_and_attributes_come_back_unbatched(workers):
    with envgym.make_vec(GUESS, num_envs=2, workers=workers, difficulty="hard") as envs:
        _, infos = envs.reset(seed=[5, 6])
        reference = gym.make(GUESS, difficulty="hard")
        _, want = reference.reset(seed=6)
        assert envs.env_info(1) == want and type(envs.env_info(1)["turn"]) is int
        assert isinstance(infos["turn"], np.ndarray)  # the batched view, for contrast
        assert envs.env_attr(1, "difficulty") == "hard"
        assert envs.env_attr(0, "spec").id == GUESS
        assert envs.final_info(0) is None
        with pytest.raises(AttributeError):
            envs.env_attr(0, "no_such_attribute")
        with pytest.raises(IndexError, match="0..1"):
            envs.env_info(2)
        for _ in range(100):
            _, _, terminated, truncated, _ = envs.step(["<answer>1</answer>"] * 2)
            ref = reference.step("<answer>1</answer>")
            if terminated[1] or truncated[1]:
                assert envs.final_info(1) == ref[4]
                assert envs.env_info(1)["turn"] == 0  # the next episode's reset info
                break
            assert envs.env_info(1) == ref[4]
        else:
            pytest.fail("the episode never ended")
