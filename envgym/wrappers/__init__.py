"""Gymnasium wrappers for envgym text environments (curriculum, chat history, ...)."""

from envgym.wrappers.curriculum import Curriculum

__all__ = ["Curriculum"]
