"""The leaderboard server and replay verifier, installed as ``envgym.leaderboard``."""
