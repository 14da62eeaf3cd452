"""Kuhn poker: the PettingZoo game and the single-agent envgym/KuhnPoker-v0."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

from envgym.core import check_int, check_number, short_repr
from envgym.envs.games.versus import VersusEnv, VersusPreset, versus_presets
from envgym.multiagent import MultiAgentTextEnv

__all__ = ["KuhnPoker", "KuhnPokerEnv", "nash_strategy"]

CARDS = ("J", "Q", "K")  # index = rank
CARD_NAMES = ("Jack", "Queen", "King")
#: Player 0's expected payoff when both players follow a Nash equilibrium.
GAME_VALUE = -1.0 / 18.0
#: Most hands one episode may hold.
MAX_ROUNDS = 1_000


def nash_strategy(player: int, card: int, history: Sequence[str], alpha: float) -> dict[str, float]:
    """Action probabilities of Kuhn's equilibrium for the player to move.

    `card` is the mover's rank (0 Jack, 1 Queen, 2 King), `history` the actions
    so far, `alpha` in [0, 1/3] picks one member of player 0's equilibrium
    family. Player 0 bluffs a Jack with probability alpha, always checks a
    Queen, bets a King with probability 3*alpha, and after checking into a bet
    folds a Jack, calls with a Queen with probability alpha + 1/3 and always
    calls with a King. Player 1 (the same in every equilibrium) calls a bet
    with a King, with a Queen 1/3 of the time, never with a Jack; after a
    check it bets a King, checks a Queen and bluffs a Jack 1/3 of the time.

    Each mixed frequency makes the other side indifferent where it mixes:

    * player 0 bets a King 3 times as often as it bluffs a Jack, so a bet is a
      bluff 1/4 of the time and player 1's Queen gains -1 by calling
      (2/4 - 2*3/4) and -1 by folding;
    * player 1 calls with a Queen 1/3 of the time, so player 0's Jack bluff
      earns (1 - 3/3)/2 - 1 = -1, the same as check-and-fold;
    * player 1 bluffs a Jack 1/3 of the time after a check, so a bet it makes
      is a bluff 1/4 of the time and player 0's Queen gains -1 by calling or by
      folding;
    * player 0 calls with a Queen alpha + 1/3 of the time, so player 1's Jack
      bluff earns -1 against the Queens and Kings that check, as checking does.

    Every alpha gives player 0 the game's value, -1/18 chip per hand
    (`GAME_VALUE`); the tests check it exactly, and that no pure strategy of
    either player does better against the other's equilibrium strategy.
    """
    if player == 0 and not history:
        bet = (alpha, 0.0, 3.0 * alpha)[card]
        return {"check": 1.0 - bet, "bet": bet}
    if history[-1] == "check":  # player 1 after a check
        bet = (1.0 / 3.0, 0.0, 1.0)[card]
        return {"check": 1.0 - bet, "bet": bet}
    # Facing a bet: player 1 after an opening bet, or player 0 after check-bet.
    call = (0.0, 1.0 / 3.0, 1.0)[card] if player == 1 else (0.0, alpha + 1.0 / 3.0, 1.0)[card]
    return {"call": call, "fold": 1.0 - call}


class KuhnPoker(MultiAgentTextEnv):
    """Kuhn poker: the smallest interesting poker game, for two players.

    ## Description
    The deck is three cards, Jack < Queen < King. In each hand both players
    ante 1 chip and get one card face down; the third card is not used.
    ``player_0`` acts first and may check or bet 1 chip. After a check,
    ``player_1`` may check (showdown) or bet 1. Facing a bet, a player may call
    (put in 1 more chip; showdown) or fold (the bettor takes the pot). At a
    showdown the higher card takes the pot. The outcomes of a hand, in net
    chips:

    * check, check: showdown for a pot of 2, winner +1, loser -1;
    * bet, call (or check, bet, call): showdown for 4, winner +2, loser -2;
    * bet, fold: player 0 +1; check, bet, fold: player 1 +1.

    By default an episode is one hand; with ``rounds=n`` it is a match of n
    hands, freshly dealt, player 0 acting first in every hand.

    ## Action Space
    Text in answer tags: ``check`` or ``bet`` when no bet is pending, ``call``
    or ``fold`` facing a bet (case does not matter), e.g.
    ``<answer>bet</answer>``. An invalid reply gets a warning and the player
    acts again; a second invalid reply in the same turn counts as folding the
    hand and ends the episode.

    ## Observation Space
    Text: the player's seat, its own card (never the opponent's, not even at a
    showdown, which only says who held the higher card), the pot and each
    player's chips in it, the betting so far, in a match the hand number, the
    last hand's result and the player's chips so far, and, on the player's
    turn, the legal actions. The cards are only in the trainer-only
    ``privileged_info()`` (``info["privileged"]`` of the single-agent id).
    ``info["state_key"]`` is the player's information state (seat, own card,
    hand number, betting), so no info dict reveals the hidden card either.

    ## Starting State
    A random deal of two of the three cards, player 0 to act, 1 chip from each
    player in the pot. ``reset(options={"cards": "KJ"})`` deals player 0 the
    King and player 1 the Jack; a list (``["KJ", "QK"]``, at most one deal
    per hand) fixes the first hands of a match (AEC game only; for tests and
    analysis).

    ## Rewards
    Zero-sum: each player's net chips over the episode (+-1 or +-2 per hand),
    given when the episode ends. A forfeit scores like a fold of the current
    hand (the forfeiting player loses the chip it has in the pot) on top of
    the hands already played.

    ## Episode End
    After the last hand's fold or showdown (one hand by default: at most three
    actions), or at a forfeit.

    ## Arguments
    ``rounds`` (1 to 1,000, default 1): hands per episode. ``nash_alpha``
    (default 1/3, any value in [0, 1/3]): player 0's bluffing frequency in the
    equilibrium played by `optimal_action` (see `nash_strategy`); every
    choice is an equilibrium worth -1/18 chip per hand to player 0. With 1/3,
    player 0 always bets a King, bluffs a Jack 1/3 of the time and calls a bet
    with a Queen 2/3 of the time. ``illegal_retries`` (default 1): invalid
    replies forgiven per turn.

    Single-agent ``envgym/KuhnPoker-v0``: ``difficulty`` easy/medium/hard is
    the opponent (uniformly random actions / the equilibrium half of the time
    / the equilibrium), ``opponent`` and ``seat`` override it (see
    `envgym.envs.games.versus.VersusEnv`). An episode is one hand unless
    ``rounds`` says more; the second seat may have a single decision per
    hand. Its turn limit (``max_turns``) defaults to 4 per hand: two
    decisions with a retry each.

    ## Version History
    * v0: initial version. Since then ``rounds`` is at most 1,000 and
      ``options["cards"]`` at most one deal per hand.
      The single-agent id's built-in opponents never draw the numbers the
      game draws (see `envgym.envs.games.versus.VersusEnv`).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "kuhn_poker_v0",
        "is_parallelizable": False,
    }
    default_max_moves: ClassVar[int] = 3
    lower_case_moves: ClassVar[bool] = True
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("rounds", "nash_alpha")
    system_prompt: ClassVar[str] = (
        "You are playing Kuhn poker. The deck has three cards: Jack < Queen < King. "
        "In each hand both players ante 1 chip and get one card; player_0 acts first. "
        "With no bet pending you may check or bet 1 chip; facing a bet you may call "
        "(match it, then the higher card wins the pot) or fold (lose what you put in). "
        "Two checks go to a showdown for the antes. Reply with your action in answer "
        "tags, e.g. <answer>check</answer>."
    )

    def __init__(self, *, rounds: int = 1, nash_alpha: float = 1.0 / 3.0, **kwargs: Any) -> None:
        rounds = check_int(rounds, "rounds", 1, MAX_ROUNDS, "hands per episode")
        nash_alpha = check_number(
            nash_alpha, "nash_alpha", 0.0, 1.0 / 3.0, "player 0's bluffing frequency"
        )
        super().__init__(**kwargs)
        if kwargs.get("max_moves") is None:
            self.max_moves = self.default_max_moves * rounds
        self.rounds = rounds
        self.nash_alpha = nash_alpha
        self.cards = [0, 1]
        self.history: list[str] = []
        self.chips = [1, 1]
        self.hand = 1
        self.net = 0  # player 0's net chips from the hands finished so far
        self.previous = ""  # the last finished hand's result, in a match
        self._fixed_deals: list[list[int]] = []

    def _new_game(self, options: dict[str, Any]) -> None:
        self._fixed_deals = (
            _parse_deals(options["cards"], self.rounds) if "cards" in options else []
        )
        self.hand = 1
        self.net = 0
        self.previous = ""
        self._deal()

    def _deal(self) -> None:
        if self._fixed_deals:
            self.cards = self._fixed_deals.pop(0)
        else:
            self.cards = list(_DEALS[int(self.np_random.integers(len(_DEALS)))])
        self.history = []
        self.chips = [1, 1]
        self.current = 0

    def _legal_actions(self, player: int) -> list[str]:
        if self.history and self.history[-1] == "bet":
            return ["call", "fold"]
        return ["check", "bet"]

    def _apply(self, player: int, action: str) -> dict[int, float] | None:
        other = 1 - player
        self.history.append(action)
        self.current = other
        if action == "bet":
            self.chips[player] += 1
            return None
        if action == "check" and len(self.history) == 1:
            return None  # player 0 checked: player 1 to act
        if action == "fold":
            winner, won = other, self.chips[player]
            result = _fold_text(player, won)
        else:
            if action == "call":
                self.chips[player] += 1
            winner = 0 if self.cards[0] > self.cards[1] else 1
            won = self.chips[1 - winner]
            result = _showdown_text(sum(self.chips), winner, won)
        self.net += won if winner == 0 else -won
        if self.hand < self.rounds:
            self.previous = result
            self.hand += 1
            self._deal()
            return None
        self.outcome = result
        if self.rounds > 1:
            self.outcome = f"hand {self.hand}: {result}; after {self.rounds} hands player_0 "
            self.outcome += f"has {self.net:+d} chips net"
        return {0: float(self.net), 1: -float(self.net)}

    def _forfeit_rewards(self, player: int) -> dict[int, float]:
        # A forfeit folds the current hand: the chip the player has in the pot
        # (always 1 when it is to act) goes to the opponent.
        net = self.net - self.chips[player] if player == 0 else self.net + self.chips[player]
        return {0: float(net), 1: -float(net)}

    def _betting(self) -> str:
        return _betting_text(tuple(self.history))

    def _observe(self, player: int) -> str:
        return _observation(
            player,
            self.rounds,
            self.hand,
            self.previous,
            self.outcome,
            self.net if player == 0 else -self.net,
            self.cards[player],
            self.chips[player],
            self.chips[1 - player],
            tuple(self.history),
            player == self.current,
        )

    def _public_key(self) -> str:
        return f"h{self.hand}:{','.join(self.history) or '-'}"

    def _state_key(self) -> str:
        cards = "".join(CARDS[c] for c in self.cards)
        return f"{cards}:{self._public_key()}"

    def _information_key(self, player: int) -> str:
        # A player's information state: its seat, its own card, the betting.
        return f"player_{player}:{CARDS[self.cards[player]]}:{self._public_key()}"

    def _render_text(self) -> str:
        # A spectator's view for humans: both cards are shown.
        hands = ", ".join(f"player_{p} {CARD_NAMES[c]}" for p, c in enumerate(self.cards))
        text = (
            f"Hand {self.hand} of {self.rounds}. Cards: {hands}. Pot: {sum(self.chips)}. "
            f"Betting: {self._betting()}. player_0 net chips: {self.net:+d}."
        )
        return f"{text} {self.outcome}." if self.outcome else text

    def strategy(self, player: int) -> dict[str, float]:
        """The equilibrium's action probabilities for `player`, who must be to move."""
        return nash_strategy(player, self.cards[player], self.history, self.nash_alpha)

    def optimal_action(self, player: int, rng: Any) -> str:
        probabilities = self.strategy(player)
        draw = float(rng.random())
        chosen = ""
        for action, p in probabilities.items():
            if p > 0.0:
                chosen = action
                if draw < p:
                    break
                draw -= p
        return chosen  # past the loop only by rounding: the last possible action

    def privileged_info(self) -> dict[str, Any]:
        mine, theirs = self.cards
        return {"cards": {"player_0": CARDS[mine], "player_1": CARDS[theirs]}}


_DEALS = tuple((a, b) for a in range(3) for b in range(3) if a != b)
_PAST = {"check": "checks", "bet": "bets", "call": "calls", "fold": "folds"}
#: The end of each seat's first observation line.
_SEATS = (". You are player_0 and act first.", ". You are player_1 and act second.")


@lru_cache(maxsize=64)
def _betting_text(history: tuple[str, ...]) -> str:
    """The betting so far as observations say it (few histories exist: cached)."""
    if not history:
        return "none"
    return ", ".join(f"player_{i % 2} {_PAST[a]}" for i, a in enumerate(history))


@lru_cache(maxsize=8)
def _fold_text(player: int, won: int) -> str:
    """A hand's result when `player` folds (a few such texts exist: cached)."""
    return f"player_{player} folds, player_{1 - player} wins {won} chip"


@lru_cache(maxsize=16)
def _showdown_text(pot: int, winner: int, won: int) -> str:
    """A showdown's result (a few such texts exist: cached)."""
    return (
        f"showdown for a pot of {pot}, player_{winner} holds the higher "
        f"card and wins {won} chip{'s' if won > 1 else ''}"
    )


def _move_prompt(first: str, second: str) -> str:
    return f"Your move: {first} or {second}. Reply in answer tags, e.g. <answer>{first}</answer>."


#: The prompts of the two decisions a player meets: no bet pending, or facing one.
_MOVE_PROMPTS = {pair: _move_prompt(*pair) for pair in (("check", "bet"), ("call", "fold"))}


@lru_cache(maxsize=1 << 12)
def _observation(
    player: int,
    rounds: int,
    hand: int,
    previous: str,
    outcome: str,
    mine: int,
    card: int,
    mine_in: int,
    theirs_in: int,
    history: tuple[str, ...],
    to_move: bool,
) -> str:
    """What `player` sees (`KuhnPoker._observe`), from everything it shows; a
    one-hand game has few such states, so most come from the cache. `mine` is
    the player's net chips from finished hands, `mine_in`/`theirs_in` the chips
    in the pot, `to_move` whether it is the player's turn."""
    if rounds > 1:
        head = f"Kuhn poker, hand {hand} of {rounds}{_SEATS[player]}"
    else:
        head = f"Kuhn poker{_SEATS[player]}"
    if previous and not outcome:
        head += f"\nHand {hand - 1} result: {previous}. Your chips so far: {mine:+d}."
    if outcome:
        total = f" You finish with {mine:+d} chips." if rounds > 1 else ""
        tail = f"Game over: {outcome}.{total}"
    elif not to_move:
        tail = "Waiting for your opponent."
    else:  # the legal moves (KuhnPoker._legal_actions) follow from the betting
        tail = _MOVE_PROMPTS[
            ("call", "fold") if history and history[-1] == "bet" else ("check", "bet")
        ]
    return (
        f"{head}\nYour card: {CARD_NAMES[card]}.\n"
        f"Pot: {mine_in + theirs_in} chips (you put in {mine_in}, "
        f"your opponent {theirs_in}). Betting so far: {_betting_text(history)}.\n{tail}"
    )


def _parse_deals(cards: Any, rounds: int) -> list[list[int]]:
    """Deals from ``"KJ"`` (player 0's card, player 1's) or a list of at most
    `rounds` such strings."""
    deals = [cards] if isinstance(cards, str) else cards
    if isinstance(deals, list | tuple) and len(deals) > rounds:
        raise ValueError(
            f"options['cards'] holds {len(deals)} deals but the match has {rounds} hand(s); "
            "give at most one deal per hand"
        )
    parsed = []
    for deal in deals if isinstance(deals, list | tuple) else [None]:
        letters = deal.strip().upper() if isinstance(deal, str) else ""
        if len(letters) != 2 or any(c not in CARDS for c in letters) or letters[0] == letters[1]:
            raise ValueError(
                "options['cards'] must be two different cards of J, Q, K (player_0's, then "
                f"player_1's), e.g. 'KJ', or a list of such deals; got {short_repr(cards)}"
            )
        parsed.append([CARDS.index(c) for c in letters])
    return parsed


class KuhnPokerEnv(VersusEnv):
    __doc__ = KuhnPoker.__doc__
    game_cls = KuhnPoker
    #: Turns per hand: at most two decisions, each with one retry.
    presets = versus_presets(max_turns=4)

    def _configure(self, config: VersusPreset) -> VersusPreset:
        config = super()._configure(config)
        if "max_turns" in self.overrides:
            return config
        game = self._game
        assert isinstance(game, KuhnPoker)
        return dataclasses.replace(config, max_turns=config.max_turns * game.rounds)
