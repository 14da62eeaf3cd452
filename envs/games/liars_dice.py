"""Liar's Dice: the PettingZoo game and the single-agent envgym/LiarsDice-v0."""

from __future__ import annotations

import re
from functools import cache
from math import comb
from typing import Any, ClassVar

from envgym.core import check_int, quote_for_feedback
from envgym.envs.games.versus import VersusEnv, versus_presets
from envgym.multiagent import MultiAgentTextEnv
from envgym.parsing import parse_answer

__all__ = ["LiarsDice", "LiarsDiceEnv"]

FACES = 6
_FACE_WORDS = {
    **{word: i + 1 for i, word in enumerate(("one", "two", "three", "four", "five", "six"))},
    **{word: i + 1 for i, word in enumerate(("ones", "twos", "threes", "fours", "fives"))},
    "sixes": 6,
}
_LIAR_WORDS = frozenset(
    ("liar", "call liar", "i call liar", "call", "challenge", "call the bid", "bluff", "call bluff")
)
# "bid 3 5", "3 5", "bid: 3 x 5", "raise to 3 fives", "3 5s", "3 dice showing 5", ...
_BID = re.compile(
    r"^(?:(?:i\s+)?(?:bid|raise(?:\s+to)?)\s*:?\s*)?(\d{1,3})\s*"
    r"(?:x|\*|,|of|dice(?:\s+(?:showing|show|of))?)?\s*(\d{1,2}|[a-z]+)(?:'?s)?$"
)
_MOVE_FORMAT = (
    "Moves: <answer>bid Q F</answer> claims that at least Q of all the dice in play show "
    "face F; <answer>liar</answer> challenges the current bid."
)


class LiarsDice(MultiAgentTextEnv):
    """Liar's Dice for two to four players.

    ## Description
    Every player starts with ``dice_per_player`` six-sided dice (default 3).
    Each round, every player still in the game rolls all their dice in secret
    and sees only their own. Players then take turns, in seat order starting
    with the round's opener, and either raise the bid or call "liar" on it.

    A bid ``bid Q F`` claims that at least ``Q`` of all the dice in play (every
    player's, the bidder's own included) show face ``F``. There are no wild
    faces: a 1 counts only as a 1. A raise must be higher than the bid on the
    table: a higher quantity with any face, or the same quantity with a higher
    face (so ``bid 3 2`` beats ``bid 2 6`` and ``bid 2 6`` beats ``bid 2 5``).
    Quantities go from 1 to the number of dice in play, faces from 1 to 6.
    The opener of a round must bid; "liar" needs a bid on the table.

    Calling "liar" ends the round: all dice are revealed. If at least ``Q``
    dice show ``F`` the bid holds and the caller loses one die; otherwise the
    bidder loses one die. The loser opens the next round (if that took their
    last die, the next player still in the game opens). A player with no dice
    is out: their turns are skipped until the game ends. The last player with
    dice wins. ``player_0`` opens the first round.

    ## Action Space
    Text in answer tags: ``<answer>bid Q F</answer>`` (also accepted: ``3 5``,
    ``bid: 3 x 5``, ``3 fives``, ``raise to 3 5s``) or ``<answer>liar</answer>``
    (also ``challenge``, ``call``). A reply that is not a legal move gets a
    warning saying why and the same player moves again; a second invalid
    reply in the same turn loses the game.

    ## Observation Space
    Text: the round number, the player's own dice, how many dice every player
    has left, the bids made so far this round (the last ten), the current bid
    and its bidder, and, after any challenge, the dice that were revealed and
    who lost a die. Other players' dice are never shown before they are
    revealed by a challenge. The player to move also gets the action format
    and the smallest legal raise.

    ## Starting State
    Every player has ``dice_per_player`` freshly rolled dice, no bid is on the
    table, and ``player_0`` is to move.

    ## Rewards
    Zero-sum, given when the game ends: the winner gets +1 and every other
    player -1/(n-1) for n players (players knocked out earlier wait in the
    game and get their -1/(n-1) at the end). Losing by two invalid replies in
    one turn ends the game: the offender gets -1 and every other player
    +1/(n-1). If the move cap (see Arguments) stops a game, everyone gets 0.

    ## Episode End
    One player has dice left, or a player forfeits by two invalid replies in a
    turn, or (truncation) the move cap is reached.

    ## Arguments
    ``num_players`` (2, 3 or 4; default 2), ``dice_per_player`` (1-10; default
    3), ``illegal_retries`` (default 1): invalid replies forgiven per turn,
    ``max_moves``: a cap on valid moves; by default the longest possible game
    (every round raised to the top bid) fits under it.
    Single-agent ``envgym/LiarsDice-v0`` (``max_turns`` default 100):
    ``difficulty`` easy/medium/hard is the opponents' policy (random legal
    moves / the heuristic half of the time / the heuristic), ``opponent`` and
    ``seat`` override it (see `envgym.envs.games.versus.VersusEnv`).

    The heuristic (``optimal_action``) knows only its own dice and treats every
    other die as a fair roll, so the count of face F among the ``m`` unseen
    dice is Binomial(m, 1/6). For each face it takes the smallest legal raise
    on that face and the probability that it holds. It calls liar when the
    current bid holds with a lower probability than its best raise fails
    (P(bid) < 1 - P(best raise): losing a die is likelier by raising, if that
    raise is challenged, than by calling); otherwise it makes the most
    probable of those minimal raises, preferring faces it holds more of, then
    a random one.

    ## Version History
    * v0: initial version. Since then the single-agent id's built-in opponents
      never draw the numbers the game draws (see
      `envgym.envs.games.versus.VersusEnv`).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "liars_dice_v0",
        "is_parallelizable": False,
    }
    player_counts: ClassVar[tuple[int, ...]] = (2, 3, 4)
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("dice_per_player",)
    system_prompt: ClassVar[str] = (
        "You are playing Liar's Dice. Each player sees only their own dice. On your "
        "turn either raise the bid with <answer>bid Q F</answer> (a claim that at least "
        "Q of all the dice in play show face F; a raise has a higher quantity, or the "
        "same quantity and a higher face) or challenge the current bid with "
        "<answer>liar</answer>. Ones are not wild. When a bid is challenged, the "
        "bidder loses a die if it was false, the challenger if it was true; the last "
        "player with dice wins."
    )

    def __init__(
        self,
        *,
        num_players: int | None = None,
        dice_per_player: int = 3,
        illegal_retries: int = 1,
        max_moves: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        dice_per_player = check_int(dice_per_player, "dice_per_player", 1, 10)
        super().__init__(
            num_players=num_players,
            illegal_retries=illegal_retries,
            max_moves=max_moves,
            render_mode=render_mode,
        )
        self.dice_per_player = dice_per_player
        if max_moves is None:
            # Each round costs one die; a round has at most one bid per (Q, F) and a call.
            total = self.num_players * dice_per_player
            self.max_moves = (total - 1) * (FACES * total + 1)
        self.counts = [dice_per_player] * self.num_players
        self.dice: list[list[int]] = [[] for _ in range(self.num_players)]
        self.bid: tuple[int, int] | None = None
        self.bidder: int | None = None
        self.round_bids: list[tuple[int, int, int]] = []
        self.round_no = 0
        self.last_reveal = ""

    # ------------------------------------------------------------------ rules
    def _new_game(self, options: dict[str, Any]) -> None:
        self.counts = [self.dice_per_player] * self.num_players
        self.round_no = 0
        self.last_reveal = ""
        self._start_round(0)

    def _start_round(self, opener: int) -> None:
        self.round_no += 1
        rolls = self.np_random.integers(1, FACES + 1, size=sum(self.counts)).tolist()
        self.dice = []
        start = 0
        for count in self.counts:
            self.dice.append(sorted(rolls[start : start + count]))
            start += count
        self.bid = None
        self.bidder = None
        self.round_bids = []
        self.current = opener

    def _next_active(self, player: int) -> int:
        for step in range(1, self.num_players + 1):
            candidate = (player + step) % self.num_players
            if self.counts[candidate] > 0:
                return candidate
        return player

    def _first_raise(self) -> int:
        """The rank of the lowest legal bid: any bid opens a round, later bids
        must beat the one on the table. Legal bids run from it to the top bid."""
        return 0 if self.bid is None else _rank(self.bid) + 1

    def _legal_actions(self, player: int) -> list[str]:
        raises = _all_bids(sum(self.counts))[self._first_raise() :]
        return list(raises) if self.bid is None else ["liar", *raises]

    def _parse_action(self, player: int, text: str) -> tuple[str | None, str | None]:
        example = self._smallest_raise()
        parsed = parse_answer(text, example=example)
        if not parsed.ok:
            return None, f"{parsed.error} {_MOVE_FORMAT}"
        value = " ".join(parsed.value.lower().split()).strip(" .!")
        if value in _LIAR_WORDS:
            if self.bid is None:
                return None, (
                    f"There is no bid to challenge yet; you open the round, e.g. "
                    f"<answer>{example}</answer>."
                )
            return "liar", None
        match = _BID.match(value)
        face = None
        if match is not None:
            raw_face = match.group(2)
            face = int(raw_face) if raw_face.isdigit() else _FACE_WORDS.get(raw_face)
        if match is None or face is None:
            return None, f"{quote_for_feedback(parsed.value, 40)} is not a move. {_MOVE_FORMAT}"
        quantity, total = int(match.group(1)), sum(self.counts)
        if not 1 <= face <= FACES:
            return None, f"Dice faces go from 1 to {FACES}, not {face}. {_MOVE_FORMAT}"
        if not 1 <= quantity <= total:
            return None, (
                f"The quantity must be from 1 to {total}, the number of dice in play, "
                f"not {quantity}."
            )
        if _rank((quantity, face)) < self._first_raise():
            assert self.bid is not None
            q, f = self.bid
            return None, (
                f"bid {quantity} {face} does not raise the current bid {q} {f}: bid more "
                f"than {q} {_dice(q)}, or {q} {_dice(q)} of a face above {f} (smallest raise: "
                f"{example}), or call liar."
            )
        return f"bid {quantity} {face}", None

    def _apply(self, player: int, action: str) -> dict[int, float] | None:
        if action == "liar":
            return self._challenge(player)
        _, quantity, face = action.split()
        self.bid = (int(quantity), int(face))
        self.bidder = player
        self.round_bids.append((player, int(quantity), int(face)))
        self.current = self._next_active(player)
        return None

    def _challenge(self, caller: int) -> dict[int, float] | None:
        assert self.bid is not None and self.bidder is not None
        quantity, face = self.bid
        bidder = self.bidder
        names = self.possible_agents
        shown = sum(hand.count(face) for hand in self.dice)
        holds = shown >= quantity
        loser = caller if holds else bidder
        self.counts[loser] -= 1
        revealed = "; ".join(
            f"{names[p]}: {' '.join(map(str, hand))}" for p, hand in enumerate(self.dice) if hand
        )
        verdict = "held" if holds else "was false"
        out = ", and is out" if self.counts[loser] == 0 else ""
        self.last_reveal = (
            f"in round {self.round_no} {names[caller]} called liar on {names[bidder]}'s "
            f"bid {quantity} {face}. Revealed dice: {revealed}. {shown} {_dice(shown)} "
            f"showed {face}, so the bid {verdict} and {names[loser]} lost a die{out}."
        )
        active = [p for p, count in enumerate(self.counts) if count > 0]
        if len(active) == 1:
            winner = active[0]
            self.outcome = f"{names[winner]} wins"
            self.bid = None
            self.bidder = None
            self.current = winner
            loss = -1.0 / (self.num_players - 1)
            return {p: 1.0 if p == winner else loss for p in range(self.num_players)}
        self._start_round(loser if self.counts[loser] > 0 else self._next_active(loser))
        return None

    # ------------------------------------------------------------ observation
    def _observe(self, player: int) -> str:
        names = self.possible_agents
        lines = [f"Liar's Dice, round {self.round_no}. You are {names[player]}."]
        if self.counts[player] > 0 and not self.outcome:
            lines.append(f"Your dice: {' '.join(map(str, self.dice[player]))}.")
        elif self.counts[player] == 0 and not self.outcome:
            lines.append("You have no dice left: you are out and wait for the game to end.")
        left = ", ".join(
            [
                f"{name}{' (you)' if p == player else ''} {self.counts[p]}"
                for p, name in enumerate(names)
            ]
        )
        lines.append(f"Dice left: {left}; {sum(self.counts)} in play.")
        if self.last_reveal:
            lines.append(f"Last challenge: {self.last_reveal}")
        if self.outcome:
            lines.append(f"Game over: {self.outcome}.")
            return "\n".join(lines)
        if self.round_bids:
            shown = self.round_bids[-10:]
            more = "..., " if len(self.round_bids) > len(shown) else ""
            history = ", ".join([f"{names[p]} bid {q} {f}" for p, q, f in shown])
            lines.append(f"Bids this round: {more}{history}.")
        if self.bid is not None:
            q, f = self.bid
            lines.append(
                f"Current bid: {q} {f} by {names[self.bidder]} "
                f"(at least {q} {_dice(q)} showing {f})."
            )
        else:
            lines.append("No bid yet this round.")
        if player != self.current:
            lines.append(f"Waiting for {names[self.current]}.")
            return "\n".join(lines)
        if self.bid is None:
            lines.append(
                "Your move: open the round with <answer>bid Q F</answer> (a claim that at "
                f"least Q of all {sum(self.counts)} dice show face F), e.g. "
                f"<answer>{self._smallest_raise()}</answer>."
            )
        else:
            lines.append(
                "Your move: raise with <answer>bid Q F</answer> (more dice, or the same "
                f"number of a higher face; smallest raise: {self._smallest_raise()}) or "
                "challenge the current bid with <answer>liar</answer>."
            )
        return "\n".join(lines)

    def _smallest_raise(self) -> str:
        bids = _all_bids(sum(self.counts))
        first = self._first_raise()
        return bids[first] if first < len(bids) else "liar"

    def _state_key(self) -> str:
        hands = "|".join(
            [
                "".join(map(str, hand)) if count else "-"
                for hand, count in zip(self.dice, self.counts, strict=True)
            ]
        )
        bid = "none" if self.bid is None else f"{self.bid[0]}x{self.bid[1]}@{self.bidder}"
        return f"r{self.round_no}|{hands}|bid:{bid}|to:{self.current}"

    def _information_key(self, player: int) -> str:
        # What `player` knows: its own dice and the public table, never other dice.
        own = "".join(map(str, self.dice[player])) if self.counts[player] else "-"
        counts = ",".join(map(str, self.counts))
        bid = "none" if self.bid is None else f"{self.bid[0]}x{self.bid[1]}@{self.bidder}"
        return f"p{player}:{own}|r{self.round_no}|n:{counts}|bid:{bid}|to:{self.current}"

    def _render_text(self) -> str:
        names = self.possible_agents
        lines = [f"Round {self.round_no}"]
        for p, name in enumerate(names):
            hand = " ".join(map(str, self.dice[p])) if self.counts[p] else "out"
            lines.append(f"{name}: {hand}{'  <- to move' if p == self.current else ''}")
        if self.bid is not None:
            lines.append(f"bid {self.bid[0]} {self.bid[1]} by {names[self.bidder]}")
        if self.outcome:
            lines.append(f"Game over: {self.outcome}")
        return "\n".join(lines)

    def privileged_info(self) -> dict[str, Any]:
        return {
            "dice": {
                name: list(self.dice[p]) if self.counts[p] else []
                for p, name in enumerate(self.possible_agents)
            }
        }

    # -------------------------------------------------------------- heuristic
    def optimal_action(self, player: int, rng: Any) -> str:
        own = self.dice[player]
        total = sum(self.counts)
        unseen = total - len(own)

        def chance(quantity: int, face: int) -> float:
            return _at_least(unseen, quantity - own.count(face))

        # The smallest legal raise on each face: the next FACES bids up (fewer at the top).
        first = self._first_raise()
        raises = _bid_values(total)[first : first + FACES]
        options = [(chance(q, f), own.count(f), q, f) for q, f in raises]
        best = max((o[0] for o in options), default=0.0)
        # Calling loses a die with P(bid); a raise, if challenged, with 1 - P(raise).
        if self.bid is not None and (not options or chance(*self.bid) < 1.0 - best):
            return "liar"
        likeliest = [o for o in options if o[0] >= best - 1e-12]
        most_held = max(o[1] for o in likeliest)
        # Ties are broken in face order, whichever face the raises start from.
        tied = sorted((o for o in likeliest if o[1] == most_held), key=lambda o: o[3])
        _, _, quantity, face = tied[int(rng.integers(len(tied)))]
        return f"bid {quantity} {face}"


def _rank(bid: tuple[int, int]) -> int:
    """A bid's place in the order of bids: (quantity, face) beats every bid of a
    lower rank."""
    return (bid[0] - 1) * FACES + bid[1] - 1


@cache
def _bid_values(total: int) -> tuple[tuple[int, int], ...]:
    """Every bid (quantity, face) with `total` dice in play, lowest first
    (index = `_rank`)."""
    return tuple((q, f) for q in range(1, total + 1) for f in range(1, FACES + 1))


@cache
def _all_bids(total: int) -> tuple[str, ...]:
    """`_bid_values` as moves: ``bid Q F``."""
    return tuple(f"bid {q} {f}" for q, f in _bid_values(total))


@cache
def _at_least(unseen: int, needed: int) -> float:
    """P(at least `needed` of `unseen` fair dice show a given face)."""
    if needed <= 0:
        return 1.0
    if needed > unseen:
        return 0.0
    return sum(
        comb(unseen, k) * (1 / FACES) ** k * (1 - 1 / FACES) ** (unseen - k)
        for k in range(needed, unseen + 1)
    )


def _dice(n: int) -> str:
    return "die" if n == 1 else "dice"


class LiarsDiceEnv(VersusEnv):
    __doc__ = LiarsDice.__doc__
    game_cls = LiarsDice
    presets = versus_presets(max_turns=100)
