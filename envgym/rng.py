"""Seeded numpy generators: bit for bit what ``numpy.random.default_rng``
builds, built faster, and streams jumped from them.

Seeding a generator costs more than a whole Kuhn poker hand's moves: numpy
hashes the seed into a pool (`SeedSequence`), then hashes the pool into the
four 64-bit words PCG64 starts from, through several small array operations.
`seeded_generator` keeps numpy's pool and does the second hash in plain
Python; `jumped_generator` reuses those words for a second stream of the same
seed. Every draw, every ``state`` and every ``spawn`` is numpy's own
(tests/test_rng.py compares them on thousands of seeds).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["jumped_generator", "seeded_generator"]

_MASK32 = 0xFFFFFFFF
#: How far numpy's ``PCG64.jumped()`` moves a stream per jump (about 0.62 of
#: its 2**128 period).
_PCG64_JUMP = 0x9E3779B97F4A7C15F39CC0605CEDC835
#: SeedSequence's output hash: its starting constant and multiplier.
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED


def _hash_constants() -> tuple[int, ...]:
    constants = [_INIT_B]
    for _ in range(8):
        constants.append(constants[-1] * _MULT_B & _MASK32)
    return tuple(constants)


#: The hash constant before each of the 8 output words (and after the last).
_HASH_B = _hash_constants()


def _pcg64_words(p0: int, p1: int, p2: int, p3: int) -> list[int]:
    """``SeedSequence.generate_state(4, np.uint64)`` from a pool of four words:
    eight 32-bit words, each a pool word hashed, paired little end first."""
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = _HASH_B
    m = _MASK32
    v = ((p0 ^ b0) * b1) & m
    w0 = v ^ (v >> 16)
    v = ((p1 ^ b1) * b2) & m
    w1 = v ^ (v >> 16)
    v = ((p2 ^ b2) * b3) & m
    w2 = v ^ (v >> 16)
    v = ((p3 ^ b3) * b4) & m
    w3 = v ^ (v >> 16)
    v = ((p0 ^ b4) * b5) & m
    w4 = v ^ (v >> 16)
    v = ((p1 ^ b5) * b6) & m
    w5 = v ^ (v >> 16)
    v = ((p2 ^ b6) * b7) & m
    w6 = v ^ (v >> 16)
    v = ((p3 ^ b7) * b8) & m
    w7 = v ^ (v >> 16)
    return [w0 | w1 << 32, w2 | w3 << 32, w4 | w5 << 32, w6 | w7 << 32]


class _SeedSequence(np.random.SeedSequence):
    """numpy's SeedSequence (its pool, entropy and spawning), with the state
    PCG64 asks for computed in Python, once; any other request goes to numpy."""

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        if n_words == 4 and dtype is np.uint64 and self.pool_size == 4:
            try:
                words = self._pcg64_words
            except AttributeError:
                words = self._pcg64_words = _pcg64_words(*self.pool.tolist())
            return np.array(words, dtype=np.uint64)
        return super().generate_state(n_words, dtype)


def seeded_generator(seed: Any) -> np.random.Generator:
    """``numpy.random.default_rng(seed)`` for an int or a sequence of ints (or
    None): the same generator, built faster. Bad seeds get numpy's own errors."""
    return np.random.Generator(np.random.PCG64(_SeedSequence(seed)))


def jumped_generator(generator: np.random.Generator, jumps: int) -> np.random.Generator:
    """A new generator where the PCG64 `generator` started, jumped `jumps` times
    ahead: ``Generator(PCG64(seed).jumped(jumps))`` for the seed that built it,
    and cheap when `seeded_generator` built it (its seed is hashed once)."""
    bit_generator = np.random.PCG64(generator.bit_generator.seed_seq)
    bit_generator.advance(_PCG64_JUMP * jumps)
    return np.random.Generator(bit_generator)
