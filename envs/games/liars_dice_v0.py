"""PettingZoo entry point for Liar's Dice: ``env()`` and ``raw_env``."""

from envgym.envs.games.liars_dice import LiarsDice as raw_env

__all__ = ["env", "raw_env"]


def env(**kwargs) -> raw_env:
    """The game as a PettingZoo AEC env (it enforces call order itself)."""
    return raw_env(**kwargs)
