"""What a verification worker prepares for the pages of an accepted submission.

The web process never steps an env: a crafted reply could hold it, and a page
view is anyone's to make. So once a file is accepted, the worker that verified
it (within the same budget) replays each episode once more to record what the
agent saw, bounded (`episode_views`), and the server stores that beside the
submission; a trajectory page is then plain text into HTML. The worker also
checks the replies against envgym's own agents on the same seeds
(`replies_label`): a file whose replies are the env's oracle's, or the random
agent's with its recorded seed, is labelled so, whatever name it claims.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_VIEW_BYTES",
    "MAX_VIEWS_BYTES",
    "episode_views",
    "replies_label",
]

#: The most one episode's stored view may hold (observations are cut to fit).
MAX_VIEW_BYTES = 256 * 1024
#: The most one submission's views may hold; later episodes get none.
MAX_VIEWS_BYTES = 8 * 1024 * 1024
#: Episodes compared with envgym's own agents (the first ones of the file).
_LABEL_SAMPLE = 20


#: What a page shows of an episode record besides its replies.
_EPISODE_FIELDS = ("seed", "trial", "task_id", "rewards", "return", "success", "turns", "usage")


def _bounded_view(episode: Mapping[str, Any], seen: Any) -> dict[str, Any]:
    """The episode (replies cut) and its replay's observations as stored: each
    cut, and the whole under `MAX_VIEW_BYTES`."""
    from envgym.leaderboard.trajectory import cut_text

    record = {key: episode[key] for key in _EPISODE_FIELDS if key in episode}
    record["actions"] = [cut_text(str(a)) for a in episode.get("actions") or []]
    room = MAX_VIEW_BYTES - len(json.dumps(record).encode())
    observations: list[str | None] = []
    for text in seen.observations:
        shown = cut_text(text)
        if len(shown.encode()) > room:
            observations.append(None)  # shown as "not stored" on the page
            continue
        room -= len(shown.encode())
        observations.append(shown)
    prompt = seen.system_prompt
    return {
        "episode": record,
        "observations": observations,
        "rewards": list(seen.rewards),
        "system_prompt": cut_text(prompt) if isinstance(prompt, str) else None,
        "note": seen.note,
    }


def episode_views(results: Mapping[str, Any]) -> list[str | None]:
    """For each episode of an accepted file, its stored view (JSON), or None once
    the submission's `MAX_VIEWS_BYTES` are spent."""
    from envgym.leaderboard.trajectory import replay_observations

    views: list[str | None] = []
    room = MAX_VIEWS_BYTES
    for episode in results["episodes"]:
        if room <= 0:
            views.append(None)
            continue
        text = json.dumps(_bounded_view(episode, replay_observations(results, episode)))
        if len(text) > room:
            room = 0
            views.append(None)
            continue
        room -= len(text)
        views.append(text)
    return views


def _same_replies(mine: Sequence[Mapping[str, Any]], theirs: Sequence[Mapping[str, Any]]) -> int:
    return sum(
        1 for a, b in zip(mine, theirs, strict=False) if list(a["actions"]) == list(b["actions"])
    )


def replies_label(results: Mapping[str, Any]) -> str | None:
    """ "the env's oracle" or "the random agent" when most of the first episodes'
    replies are exactly what that agent gives on the same seeds; else None."""
    from envgym.evaluation import evaluate
    from envgym.registry import get_spec

    env_id = results["env_id"]
    episodes = list(results["episodes"])[:_LABEL_SAMPLE]
    # A run of several trials: the first episodes are the first seeds' trials, in a row.
    trials = int(results.get("trials") or 1)
    seeds = -(-len(episodes) // trials)
    agents = [("random", "the random agent")]
    if get_spec(env_id).oracle is not None:
        agents.insert(0, ("oracle", "the env's oracle"))
    for agent, label in agents:
        try:
            theirs = evaluate(
                env_id,
                agent,
                episodes=seeds,
                seed=int(results["seed"]),
                env_kwargs=results.get("env_kwargs") or {},
                trials=trials,
            )["episodes"][: len(episodes)]
        except Exception:  # an agent that cannot run here labels nothing
            continue
        if 2 * _same_replies(episodes, theirs) > len(episodes):
            return label
    return None
