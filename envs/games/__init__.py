"""Turn-based text games: PettingZoo AEC envs (``<game>_v0.env()``) and single-agent
Gymnasium ids that play a built-in opponent (``envgym/<Game>-v0``)."""
