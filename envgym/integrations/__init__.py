"""Adapters that plug envgym envs into other frameworks' trainers and clients.

Each module here needs its framework's package, an extra of its own
(``pip install 'envgym[verifiers]'``, ...); importing a module whose package is
missing raises `envgym.extras.MissingExtra` naming that extra.
"""
