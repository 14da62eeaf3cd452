"""SimpleNegotiation's built-in negotiator: the move its `optimal_action` plays.

It reasons only from what a player may know (its own values, both
inventories, the offers made so far) and takes the rules from the game: which
trades are possible, what a bundle is worth and when the last move comes. Its
move is a reply like any player's, which the game parses and checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["ESTIMATE_STEP", "MAX_UNITS", "NegotiationState", "estimate_values", "negotiator_move"]

#: Largest amount of one resource the negotiator puts on either side of an offer.
MAX_UNITS = 3
#: How far one piece of evidence moves the estimate of a valuation.
ESTIMATE_STEP = 5.0


class NegotiationState(Protocol):
    """What the negotiator reads of a game (`SimpleNegotiation` is one): declared
    here, so this module and the game's do not import each other."""

    value_range: tuple[int, int]
    resources: Sequence[str]
    inventory: list[list[int]]
    values: list[list[int]]
    pending: tuple[int, Sequence[int], Sequence[int]] | None
    offers: list[list[Any]]

    @property
    def on_last_move(self) -> bool: ...

    def _worth(self, player: int, stock: Sequence[int]) -> int: ...

    def _offer_pairs(self, player: int) -> list[tuple[int, int]]: ...


def estimate_values(game: NegotiationState, player: int) -> list[float]:
    """`player`'s guess at the other player's values, from the public offers.

    Every value starts at the middle of the game's value range and moves by
    `ESTIMATE_STEP` per hint: down for what they offered to give or turned
    down receiving, up for what they asked for or refused to give away.
    """
    low, high = game.value_range
    guess = [(low + high) / 2] * len(game.resources)
    for proposer, gives, gets, response in game.offers:
        if proposer == player:
            if response == "accepted":  # they wanted what they got more
                up, down = gives, gets
            elif response in ("rejected", "declined"):
                up, down = gets, gives
            else:
                continue
        else:  # they offered: what they give is worth less to them
            up, down = gets, gives
        for i in range(len(guess)):
            if up[i]:
                guess[i] += ESTIMATE_STEP
            if down[i]:
                guess[i] -= ESTIMATE_STEP
    return [min(high, max(low, g)) for g in guess]


def negotiator_move(game: NegotiationState, player: int, rng: Any) -> str:
    """Accept a pending offer that raises `player`'s inventory value; else make
    the offer of 1 to `MAX_UNITS` units of one resource for another that gains
    the most while the other player plausibly gains too (by `estimate_values`),
    ties broken with `rng`; else reject a pending offer or pass."""
    if game.pending is not None:
        _, gives, gets = game.pending  # they give `gives` to us, we give `gets`
        if game._worth(player, gives) > game._worth(player, gets):
            return "accept"
    fallback = "reject" if game.pending is not None else "pass"
    if game.on_last_move:
        return fallback  # an offer now would lapse unanswered
    mine = game.values[player]
    guess = estimate_values(game, player)
    have, theirs = game.inventory[player], game.inventory[1 - player]
    best, choices = 0, []
    for i, j in game._offer_pairs(player):
        for a in range(1, min(MAX_UNITS, have[i]) + 1):
            for b in range(1, min(MAX_UNITS, theirs[j]) + 1):
                gain = b * mine[j] - a * mine[i]  # worth of what we get minus what we give
                if gain <= 0 or gain < best or a * guess[i] <= b * guess[j]:
                    continue
                if gain > best:
                    best, choices = gain, []
                choices.append((i, a, j, b))
    if not choices:
        return fallback
    i, a, j, b = choices[int(rng.integers(len(choices)))]
    # A reply like any player's: the game parses it and checks it once more.
    return f"offer: give {a} {game.resources[i]} for {b} {game.resources[j]}"
