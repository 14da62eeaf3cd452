"""Reference trainers, installed as ``envgym.trainers``."""
