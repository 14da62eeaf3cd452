"""Pieces every envgym trainer shares: rollouts, tokenization, generation,
advantages, logging and checkpoints (see each module's docstring)."""
