"""The leaderboard, installed as ``envgym.leaderboard``: a submission server that
trusts nothing it cannot replay, its storage, and its pages.

- `db`: SQLAlchemy storage (SQLite file or PostgreSQL), `Database`
- `tokens`: submitter tokens, stored hashed (`create_token`, `revoke_token`)
- `worker`: verification in worker processes (`VerificationQueue`)
- `app`: the FastAPI server (`create_app`, `serve`, `LeaderboardServer`); `api`:
  its JSON routes; `edge`: request models, the bearer-token dependency, limits
- `page`, `plots`, `trajectory`: the web pages, from the Jinja2 templates in
  ``templates/``; `baselines`: the committed baselines

Run it with ``envgym leaderboard serve``; submit with ``envgym submit``. Nothing
is imported here, so ``import envgym.leaderboard.page`` needs no web framework.
"""
