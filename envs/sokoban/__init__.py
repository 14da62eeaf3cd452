"""Sokoban: procedural, always-solvable box-pushing puzzles (``envgym/Sokoban-v0``)."""

from envgym.envs.sokoban.level import LevelTooHard
from envgym.envs.sokoban.sokoban import DIFFICULTY_PRESETS, SokobanEnv

__all__ = ["DIFFICULTY_PRESETS", "LevelTooHard", "SokobanEnv"]
