"""SimpleNegotiation: the rules of the PettingZoo game and the single-agent
envgym/SimpleNegotiation-v0 (its built-in player is in `negotiator`, the
reading of replies in `negotiation_parsing`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from envgym.core import check_int, short_repr
from envgym.envs.games.negotiation_parsing import (
    OFFER_FORMAT,
    SIMPLE_MOVES,
    Bundle,
    read_offer,
    resource_lookup,
)
from envgym.envs.games.negotiator import estimate_values, negotiator_move
from envgym.envs.games.versus import VersusEnv, VersusPreset, versus_presets
from envgym.multiagent import MultiAgentTextEnv
from envgym.parsing import parse_answer

__all__ = ["SimpleNegotiation", "SimpleNegotiationEnv"]

DEFAULT_RESOURCES = ("Wood", "Stone", "Wheat", "Sheep", "Brick")
MAX_START_UNITS = 10
VALUE_RANGE = (5, 40)
#: Longest resource name: names appear many times in every observation.
MAX_NAME_LENGTH = 20


class SimpleNegotiation(MultiAgentTextEnv):
    """SimpleNegotiation: two players trade resources they value differently.

    ## Description
    Two players each hold an inventory of the resources Wood, Stone, Wheat,
    Sheep and Brick (configurable), 0-10 units of each, and a private value
    per unit of each resource, 5-40. Everyone sees both inventories; each
    player sees only their own values. The players move in turns,
    ``player_0`` first, for a fixed number of moves. On a move a player may:

    * ``offer: give <n> <Resource>[, ...] for <n> <Resource>[, ...]``: propose
      to give the first bundle and receive the second. Both bundles must be
      non-empty, a resource may not be on both sides, the proposer must hold
      what they give and the other player what they would give.
    * ``accept``: take the other player's pending offer; the trade happens at
      once, exactly as offered.
    * ``reject``: turn down the pending offer.
    * ``pass``: do nothing.

    ``accept`` and ``reject`` need an offer pending to the mover. An offer
    stands only until the other player's next move: any move but ``accept``
    (a reject, a pass or a counter-offer) declines it, and an offer made on
    the last move lapses unanswered.

    ## Action Space
    Text in answer tags, case-insensitive and tolerant of spacing, plurals
    and separators (commas, ``and``, ``+``):
    ``<answer>offer: give 2 Wood, 1 Brick for 3 Sheep</answer>``,
    ``<answer>accept</answer>``, ``<answer>reject</answer>`` or
    ``<answer>pass</answer>``. A reply that does not parse or is not possible
    (an offer you cannot pay, or one the other player cannot) gets a warning
    that says what to fix, and the same player moves again; a second invalid
    reply in the same turn loses the game. ``admissible_actions`` lists a
    finite, representative set: accept/reject when an offer is pending, pass,
    and every feasible one-for-one offer.

    ## Observation Space
    Text: the move number and moves left, the player's own inventory, own
    values per unit and own inventory value (now and at the start), the other
    player's inventory (but never their values), the pending offer, and every
    move made so far. The player to move also gets the action format.

    ## Starting State
    Inventories (0-10 units of each resource, at least one unit in all) and
    values (5-40 per unit) drawn independently for both players; no offer is
    pending and ``player_0`` is to move.

    ## Rewards
    Not zero-sum: both players can gain from a trade. When the game ends each
    player gets the relative change of their inventory's value under their
    own values, ``(V_end - V_start) / V_start`` (so +0.1 means 10% richer);
    0 during the game. A player who loses by two invalid replies in one turn
    gets -1 instead; the other player still gets their own value change.

    ## Episode End
    After ``2 * max_rounds`` valid moves (each player moves ``max_rounds``
    times), or when a player forfeits by two invalid replies in one turn.

    ## Arguments
    ``max_rounds`` (1 to 100, default 5): moves per player, so 10 moves in
    all; ``resources`` (default Wood, Stone, Wheat, Sheep, Brick): 2-8
    distinct one-word names of at most 20 letters; ``illegal_retries``
    (default 1): invalid replies forgiven per turn. Single-agent
    ``envgym/SimpleNegotiation-v0`` (``max_turns`` default ``max_rounds *
    (illegal_retries + 1)``, enough for any game):
    ``difficulty`` easy/medium/hard is the opponent (random admissible moves /
    the heuristic half of the time / the heuristic), ``opponent`` and ``seat``
    override it (see `envgym.envs.games.versus.VersusEnv`).

    The heuristic (``optimal_action``) accepts a pending offer exactly when it
    raises its own inventory value. Otherwise it proposes, among all offers of
    1-3 units of one resource for 1-3 units of another, the one that gains it
    the most value while the other player plausibly gains too, by an estimate
    of their values: every unknown value starts at the mean 22.5 and moves by
    5 for each hint, down for what they offered to give or turned down
    receiving, up for what they asked for or refused to give away (clipped to
    5-40). With no such offer, or on the game's last move (when no offer can
    be answered), it rejects a pending offer or passes.

    ## Version History
    * v0: initial version. Since then resource names are at most 20 letters.
      The single-agent id's built-in opponents never draw the numbers the
      game draws (see `envgym.envs.games.versus.VersusEnv`).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "simple_negotiation_v0",
        "is_parallelizable": False,
    }
    zero_sum: ClassVar[bool] = False
    #: The range of every value per unit.
    value_range: ClassVar[tuple[int, int]] = VALUE_RANGE
    snapshot_exclude: ClassVar[tuple[str, ...]] = (
        "max_rounds",
        "total_moves",
        "resources",
        "system_prompt",
        "_lookup",
    )

    def __init__(
        self,
        *,
        max_rounds: int = 5,
        resources: Sequence[str] | None = None,
        num_players: int | None = None,
        illegal_retries: int = 1,
        max_moves: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        max_rounds = check_int(max_rounds, "max_rounds", 1, 100, "moves each player makes")
        names = DEFAULT_RESOURCES if resources is None else resources
        if (
            not isinstance(names, list | tuple)
            or not 2 <= len(names) <= 8
            or not all(
                isinstance(n, str) and n.isascii() and n.isalpha() and len(n) <= MAX_NAME_LENGTH
                for n in names
            )
            or len({n.lower() for n in names}) != len(names)
        ):
            raise ValueError(
                f"resources must be a list of 2 to 8 distinct one-word names (letters only, at "
                f"most {MAX_NAME_LENGTH} each), got {short_repr(resources)}"
            )
        names = tuple(names)
        super().__init__(
            num_players=num_players,
            illegal_retries=illegal_retries,
            max_moves=max_moves,
            render_mode=render_mode,
        )
        self.max_rounds = max_rounds
        self.total_moves = 2 * max_rounds
        if max_moves is None:
            self.max_moves = max(self.max_moves, self.total_moves)
        self.resources = names
        self._lookup = resource_lookup(names)
        self.system_prompt = (
            "You are negotiating a resource trade. You know your own value per unit of "
            f"each resource ({', '.join(names)}) and both inventories, but not the other "
            "player's values. On your turn reply in answer tags with one move: "
            f"<answer>{OFFER_FORMAT}</answer> (you give the first bundle, the other "
            "player gives the second), <answer>accept</answer> or <answer>reject</answer> "
            "(an offer made to you), or <answer>pass</answer>. Your reward is the relative "
            "gain in the value of your inventory by your own values."
        )
        empty = [0] * len(names)
        self.inventory = [list(empty), list(empty)]
        self.start_inventory = [list(empty), list(empty)]
        self.values = [list(empty), list(empty)]
        self.pending: tuple[int, Bundle, Bundle] | None = None
        #: Every offer: [proposer, gives, gets, response] (response "" while pending).
        self.offers: list[list[Any]] = []
        self.history: list[str] = []

    # ------------------------------------------------------------------ rules
    def _new_game(self, options: dict[str, Any]) -> None:
        n = len(self.resources)
        self.inventory = []
        for _ in range(2):
            stock = [0] * n
            while not any(stock):
                stock = self.np_random.integers(0, MAX_START_UNITS + 1, size=n).tolist()
            self.inventory.append(stock)
        low, high = VALUE_RANGE
        self.values = [self.np_random.integers(low, high + 1, size=n).tolist() for _ in range(2)]
        self.start_inventory = [list(stock) for stock in self.inventory]
        self.pending = None
        self.offers = []
        self.history = []
        self.current = 0

    def _offer_pairs(self, player: int) -> list[tuple[int, int]]:
        """(give i, get j): the resource pairs of the one-resource-for-another
        offers `player` can make now (it holds some i, the other player some j)."""
        mine, theirs = self.inventory[player], self.inventory[1 - player]
        indices = range(len(self.resources))
        return [(i, j) for i in indices if mine[i] for j in indices if theirs[j] and j != i]

    @property
    def on_last_move(self) -> bool:
        """The move being made is the game's last: an offer now lapses unanswered."""
        return self.moves + 1 >= self.total_moves

    def _legal_actions(self, player: int) -> list[str]:
        moves = ["accept", "reject", "pass"] if self.pending is not None else ["pass"]
        names = self.resources
        return moves + [
            f"offer: give 1 {names[i]} for 1 {names[j]}" for i, j in self._offer_pairs(player)
        ]

    def _parse_action(self, player: int, text: str) -> tuple[str | None, str | None]:
        example = self._example_offer(player)
        parsed = parse_answer(text, example=example)
        if not parsed.ok:
            return None, f"{parsed.error} {self._format_help()}"
        value = " ".join(parsed.value.lower().split()).strip(" .!")
        simple = SIMPLE_MOVES.get(value)
        if simple is not None:
            if simple != "pass" and self.pending is None:
                return None, (
                    f"There is no offer to {simple}; make an offer "
                    f"(e.g. <answer>{example}</answer>) or <answer>pass</answer>."
                )
            return simple, None
        offer, error = read_offer(value, self.resources, self._lookup)
        if offer is None:
            return None, f"{error} {self._format_help(example)}"
        gives, gets = offer
        error = self._infeasible(player, gives, gets)
        if error is not None:
            return None, error
        return self._offer_text(gives, gets), None

    def _infeasible(self, player: int, gives: Bundle, gets: Bundle) -> str | None:
        other = self.possible_agents[1 - player]
        for i, name in enumerate(self.resources):
            have = self.inventory[player][i]
            if gives[i] > have:
                return (
                    f"You have {have} {name}, so you cannot give {gives[i]}; offer what you hold."
                )
            theirs = self.inventory[1 - player][i]
            if gets[i] > theirs:
                return (
                    f"{other} has {theirs} {name}, so they cannot give you {gets[i]}; ask for "
                    "what they hold."
                )
        return None

    def _apply(self, player: int, action: str) -> dict[int, float] | None:
        names = self.possible_agents
        me, move = names[player], self.moves
        if action == "accept":
            assert self.pending is not None
            proposer, gives, gets = self.pending
            taker = 1 - proposer
            for i in range(len(self.resources)):
                self.inventory[proposer][i] += gets[i] - gives[i]
                self.inventory[taker][i] += gives[i] - gets[i]
            self.offers[-1][3] = "accepted"
            self.history.append(
                f"move {move}: {me} accepted, so {names[proposer]} gave "
                f"{self._bundle_text(gives)} and got {self._bundle_text(gets)}"
            )
            self.pending = None
        elif action.startswith("offer"):
            offer, _ = read_offer(action.lower(), self.resources, self._lookup)
            assert offer is not None
            declined = " declined and" if self.pending is not None else ""
            self._close_pending("declined")
            self.pending = (player, *offer)
            self.offers.append([player, offer[0], offer[1], ""])
            self.history.append(
                f"move {move}: {me}{declined} offered to give {self._bundle_text(offer[0])} "
                f"for {self._bundle_text(offer[1])}"
            )
        elif action == "reject":
            self._close_pending("rejected")
            self.history.append(f"move {move}: {me} rejected the offer")
        else:
            declined = " (declining the offer)" if self.pending is not None else ""
            self._close_pending("declined")
            self.history.append(f"move {move}: {me} passed{declined}")
        self.current = 1 - player
        if self.moves >= self.total_moves:
            self._close_pending("lapsed")
            self.outcome = f"the game ended after {self.total_moves} moves"
            return {p: self._gain(p) for p in range(2)}
        return None

    def _close_pending(self, response: str) -> None:
        if self.pending is not None:
            self.offers[-1][3] = response
            self.pending = None

    def _forfeit_rewards(self, player: int) -> dict[int, float]:
        rewards = {p: self._gain(p) for p in range(2)}
        rewards[player] = self.illegal_move_penalty
        return rewards

    def _truncation_rewards(self) -> dict[int, float]:
        return {p: self._gain(p) for p in range(2)}

    # ----------------------------------------------------------------- values
    def _worth(self, player: int, stock: Sequence[int]) -> int:
        return sum([v * n for v, n in zip(self.values[player], stock, strict=True)])

    def _gain(self, player: int) -> float:
        start = self._worth(player, self.start_inventory[player])
        return (self._worth(player, self.inventory[player]) - start) / start

    def privileged_info(self) -> dict[str, Any]:
        return {
            "values": {
                name: dict(zip(self.resources, self.values[p], strict=True))
                for p, name in enumerate(self.possible_agents)
            }
        }

    # ------------------------------------------------------------ observation
    def _stock_text(self, stock: Sequence[int]) -> str:
        return ", ".join([f"{name} {n}" for name, n in zip(self.resources, stock, strict=True)])

    def _bundle_text(self, bundle: Sequence[int]) -> str:
        return ", ".join(
            [f"{n} {name}" for name, n in zip(self.resources, bundle, strict=True) if n]
        )

    def _offer_text(self, gives: Bundle, gets: Bundle) -> str:
        return f"offer: give {self._bundle_text(gives)} for {self._bundle_text(gets)}"

    def _example_offer(self, player: int) -> str:
        legal = [m for m in self._legal(player) if m.startswith("offer")]
        return legal[0] if legal else f"offer: give 1 {self.resources[0]} for 1 {self.resources[1]}"

    def _format_help(self, example: str | None = None) -> str:
        shown = f" (e.g. <answer>{example}</answer>)" if example else ""
        return (
            f"Moves: <answer>{OFFER_FORMAT}</answer>{shown}, <answer>accept</answer>, "
            "<answer>reject</answer> or <answer>pass</answer>."
        )

    def _observe(self, player: int) -> str:
        names = self.possible_agents
        other = names[1 - player]
        done = min(self.moves, self.total_moves)
        lines = [
            f"Resource negotiation. You are {names[player]}; the other player is {other}. "
            f"Moves made: {done} of {self.total_moves} ({self.total_moves - done} left)."
        ]
        start = self._worth(player, self.start_inventory[player])
        now = self._worth(player, self.inventory[player])
        lines.append(f"Your inventory: {self._stock_text(self.inventory[player])}.")
        lines.append(
            "Your values per unit (private): "
            f"{self._stock_text(self.values[player])}. Your inventory is worth {now} to "
            f"you (it started at {start})."
        )
        lines.append(f"{other}'s inventory: {self._stock_text(self.inventory[1 - player])}.")
        if self.history:
            lines.append("Moves so far: " + "; ".join(self.history) + ".")
        if self.outcome:
            lines.append(
                f"Game over: {self.outcome}. Your reward: {self._rewards_line(player, now, start)}"
            )
            return "\n".join(lines)
        if self.pending is not None:
            proposer, gives, gets = self.pending
            if proposer == player:
                lines.append(
                    f"Your offer is pending: you give {self._bundle_text(gives)} for "
                    f"{self._bundle_text(gets)}."
                )
            else:
                lines.append(
                    f"Pending offer from {other}: they give you {self._bundle_text(gives)} "
                    f"and you give them {self._bundle_text(gets)}."
                )
        if player != self.current:
            lines.append(f"Waiting for {other}.")
            return "\n".join(lines)
        last = " This is the last move of the game." if self.on_last_move else ""
        answer = (
            "<answer>accept</answer> or <answer>reject</answer> the offer, make a counter-offer "
            "with "
            if self.pending is not None
            else "make an offer with "
        )
        lines.append(
            f"Your move:{last} {answer}<answer>{OFFER_FORMAT}</answer> (you give the first "
            f"bundle and get the second, e.g. <answer>{self._example_offer(player)}</answer>), "
            "or <answer>pass</answer>."
        )
        return "\n".join(lines)

    def _rewards_line(self, player: int, now: int, start: int) -> str:
        if self.outcome.startswith(self.possible_agents[player] + " lost"):
            return f"{self.illegal_move_penalty:+.3f} (forfeit)."
        return f"{(now - start) / start:+.3f} (worth {start} -> {now})."

    def _pending_key(self) -> str:
        if self.pending is None:
            return "none"
        proposer, gives, gets = self.pending
        return f"{proposer}:{_row(gives)}>{_row(gets)}"

    def _state_key(self) -> str:
        return (
            f"m{self.moves}|inv:{_row(self.inventory[0])}/{_row(self.inventory[1])}|"
            f"val:{_row(self.values[0])}/{_row(self.values[1])}|offer:{self._pending_key()}|"
            f"to:{self.current}"
        )

    def _information_key(self, player: int) -> str:
        # What `player` knows: both inventories and offers, only its own values.
        inventories = "/".join(_row(inv) for inv in self.inventory)
        return (
            f"p{player}|m{self.moves}|inv:{inventories}|val:{_row(self.values[player])}|"
            f"offer:{self._pending_key()}|to:{self.current}"
        )

    def _render_text(self) -> str:
        lines = [f"Move {self.moves} of {self.total_moves}"]
        for p, name in enumerate(self.possible_agents):
            lines.append(
                f"{name}: {self._stock_text(self.inventory[p])} | values "
                f"{self._stock_text(self.values[p])} | worth "
                f"{self._worth(p, self.inventory[p])}"
            )
        if self.pending is not None:
            proposer, gives, gets = self.pending
            lines.append(
                f"pending: {self.possible_agents[proposer]} gives {self._bundle_text(gives)} "
                f"for {self._bundle_text(gets)}"
            )
        if self.outcome:
            lines.append(f"Game over: {self.outcome}")
        return "\n".join(lines)

    # ------------------------------------------------------- built-in player
    def estimate_values(self, player: int) -> list[float]:
        """The built-in negotiator's guess at the other player's values."""
        return estimate_values(self, player)

    def optimal_action(self, player: int, rng: Any) -> str:
        return negotiator_move(self, player, rng)


def _row(values: Sequence[int]) -> str:
    return ",".join(map(str, values))


class SimpleNegotiationEnv(VersusEnv):
    __doc__ = SimpleNegotiation.__doc__
    game_cls = SimpleNegotiation
    # The default game's derived limit (see `_configure`).
    presets = versus_presets(max_turns=10)

    def _configure(self, config: VersusPreset) -> VersusPreset:
        config = super()._configure(config)
        if "max_turns" in self.overrides:
            return config
        game = self._game
        assert isinstance(game, SimpleNegotiation)
        # Enough turns for every move of the agent plus its forgiven invalid replies.
        return dataclasses.replace(config, max_turns=game.max_rounds * (game.illegal_retries + 1))
