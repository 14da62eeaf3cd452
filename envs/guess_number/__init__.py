"""envgym/GuessNumber-v0: find a secret number from "higher" / "lower" hints."""

from envgym.envs.guess_number.guess_number import GuessNumberEnv

__all__ = ["GuessNumberEnv"]
