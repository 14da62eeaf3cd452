"""Household: ALFWorld-style text household tasks in procedural homes (``envgym/Household-v0``)."""

from envgym.envs.household.household import DIFFICULTY_PRESETS, TASK_TYPES, HouseholdEnv

__all__ = ["DIFFICULTY_PRESETS", "TASK_TYPES", "HouseholdEnv"]
