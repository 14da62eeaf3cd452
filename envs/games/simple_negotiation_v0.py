"""PettingZoo entry point for SimpleNegotiation: ``env()`` and ``raw_env``."""

from envgym.envs.games.simple_negotiation import SimpleNegotiation as raw_env

__all__ = ["env", "raw_env"]


def env(**kwargs) -> raw_env:
    """The game as a PettingZoo AEC env (it enforces call order itself)."""
    return raw_env(**kwargs)
