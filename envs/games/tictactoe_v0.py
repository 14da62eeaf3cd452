"""PettingZoo entry point for TicTacToe: ``env()`` and ``raw_env``."""

from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from envgym.envs.games.tictactoe import TicTacToe as raw_env

__all__ = ["env", "raw_env"]


def env(**kwargs) -> OrderEnforcingWrapper:
    """The game with PettingZoo's order checks (reset before step, and so on)."""
    return OrderEnforcingWrapper(raw_env(**kwargs))
