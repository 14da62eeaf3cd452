"""Sokoban: procedural, always-solvable box-pushing puzzles (``envgym/Sokoban-v0``)."""

from envgym.envs.sokoban.level import LevelTooHard
from envgym.envs.sokoban.sokoban import SokobanEnv, SokobanPreset

__all__ = ["LevelTooHard", "SokobanEnv", "SokobanPreset"]
