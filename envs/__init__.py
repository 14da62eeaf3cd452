"""Environment families, installed as ``envgym.envs`` (one package per family)."""
