"""Adapters that plug envgym envs into other RL frameworks' env interfaces.

Each module is one framework and needs that framework's extra (for example
``envgym.integrations.skyrl`` needs ``pip install 'envgym[skyrl]'``); importing
one whose package is missing raises `envgym.extras.MissingExtra` naming it.
Nothing here is imported by ``import envgym``.
"""
