"""What TicTacToe and Connect Four share: two marks on a grid, turn by turn."""

from __future__ import annotations

from typing import ClassVar

from envgym.multiagent import MultiAgentTextEnv

__all__ = ["MARKS", "MarkGame"]

MARKS = ("X", "O")


class MarkGame(MultiAgentTextEnv):
    """A two-player grid game where ``player_0`` plays X and ``player_1`` O.

    Subclasses keep ``last_move`` (text, "" before the first move) and
    ``outcome`` up to date, draw the board in ``_grid()``, and name their moves
    for the prompt: ``move_prompt`` ("an empty cell") and ``moves_label``
    ("Empty cells").
    """

    move_prompt: ClassVar[str] = "a move"
    moves_label: ClassVar[str] = "Legal moves"
    last_move: str

    def _grid(self) -> str:
        raise NotImplementedError

    def _observe(self, player: int) -> str:
        head = f"You are {MARKS[player]}."
        if self.last_move:
            head += f" Last move: {self.last_move}."
        if self.outcome:
            return f"{head} Game over: {self.outcome}.\n{self._grid()}"
        if player != self.current:
            return f"{head} Waiting for {MARKS[self.current]}.\n{self._grid()}"
        legal = self._legal(player)
        return (
            f"{head} Your move.\n{self._grid()}\n"
            f"Reply with {self.move_prompt} in answer tags, e.g. <answer>{legal[0]}</answer>. "
            f"{self.moves_label}: {', '.join(legal)}."
        )
