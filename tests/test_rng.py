"""`envgym.rng.seeded_generator` is numpy's `default_rng`, bit for bit: the
same state, the same draws and children, numpy's own errors for bad seeds;
and the envs that seed with it give what Gymnasium's seeding gives."""

from __future__ import annotations

import copy
import pickle
import random

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding

import envgym  # noqa: F401  (registers the ids)
from envgym.rng import jumped_generator, seeded_generator


def _seeds() -> list:
    rng = random.Random(7)
    seeds: list = [0, 1, 2**32 - 1, 2**32, 2**62 - 1, 2**64, 2**128 + 5, [], [0], [3, 0]]
    seeds += [rng.randrange(2**bits) for bits in (8, 31, 32, 33, 62, 64, 100) for _ in range(300)]
    seeds += [[rng.randrange(2**62), rng.randrange(3)] for _ in range(1000)]
    seeds += [[rng.randrange(2**40) for _ in range(rng.randrange(1, 9))] for _ in range(300)]
    return seeds


def test_the_generator_is_numpys_on_thousands_of_seeds():
    for seed in _seeds():
        ours, numpy = seeded_generator(seed), np.random.default_rng(seed)
        assert ours.bit_generator.state == numpy.bit_generator.state, seed
        assert ours.integers(6, size=4).tolist() == numpy.integers(6, size=4).tolist()
        assert ours.random() == numpy.random()
        assert ours.bit_generator.seed_seq.entropy == numpy.bit_generator.seed_seq.entropy


def test_children_copies_and_pickles_draw_what_numpys_draw():
    ours, numpy = seeded_generator([12345, 1]), np.random.default_rng([12345, 1])
    for a, b in zip(ours.spawn(3), numpy.spawn(3), strict=True):
        assert a.integers(1000, size=5).tolist() == b.integers(1000, size=5).tolist()
    assert pickle.loads(pickle.dumps(ours)).integers(1000, size=5).tolist() == (
        copy.deepcopy(numpy).integers(1000, size=5).tolist()
    )
    # Other requests of its seed sequence are numpy's own too.
    assert (
        ours.bit_generator.seed_seq.generate_state(8).tolist()
        == numpy.bit_generator.seed_seq.generate_state(8).tolist()
    )


@pytest.mark.parametrize("seed", [-1, 1.5, "7", [1, -2]])
def test_bad_seeds_get_numpys_errors(seed):
    with pytest.raises(Exception) as numpy_error:
        np.random.default_rng(seed)
    with pytest.raises(type(numpy_error.value), match=str(numpy_error.value)[:20]):
        seeded_generator(seed)


def test_a_seeded_reset_gives_gymnasiums_generator_and_seed():
    env = gym.make("envgym/GuessNumber-v0").unwrapped
    for seed in (0, 5, 2**40 + 3):
        env.reset(seed=seed)
        expected, expected_seed = seeding.np_random(seed)
        fresh = gym.make("envgym/GuessNumber-v0").unwrapped
        fresh._np_random = expected
        fresh.reset()  # the same task from Gymnasium's generator
        assert env.np_random_seed == expected_seed
        assert env.np_random.bit_generator.state == expected.bit_generator.state
        assert env.task_id == fresh.task_id
    with pytest.raises(gym.error.Error, match="greater or equal to zero"):
        env.reset(seed=-3)
    with pytest.raises(gym.error.Error, match="python integer"):
        env.reset(seed=np.int64(3))


def test_a_jumped_generator_is_numpys_jumped_stream_from_the_first_state():
    for seed in (0, 5, 2**40 + 3, 2**61 + 12345):
        for jumps in (1, 2, 3):
            generator = seeded_generator(seed)
            generator.integers(6, size=7)  # draws so far do not matter: the first state does
            expected = np.random.default_rng(seed).bit_generator.jumped(jumps).state
            assert jumped_generator(generator, jumps).bit_generator.state == expected
            # A generator numpy seeded gives the same.
            plain = np.random.default_rng(seed)
            assert jumped_generator(plain, jumps).bit_generator.state == expected
