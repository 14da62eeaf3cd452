"""The trajectory viewer: one recorded episode, turn by turn, as an HTML page.

A results file keeps each episode's seed, replies and rewards but not what the
agent saw; the env is deterministic given both, so the episode is replayed in
the installed env (reset with the seed, step the replies) to show each
observation beside the reply that answered it and the reward it got. The
server never replays in its web process: a verification worker stores each
accepted episode's observations (`envgym.leaderboard.views`) and the page is
made from them (``seen=``); the static export and the committed baselines
replay here. Observations and replies are cut on the page, so its size is
bounded whatever the file holds.
Replay happens only for env kwargs the verifier's own check allows
(`envgym.evaluation.env_kwargs_problem`: the registry's ``scoring_kwargs`` and
``difficulty``, never a backend, a URL or a path from a submitted file), by the
verifier's own loop (`envgym.evaluation.replay_in_env`). Where it cannot
replay, the page shows replies and rewards alone and says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import escape

from envgym.evaluation import env_kwargs_problem, make_text_env, replay_in_env
from envgym.leaderboard.page import SiteLinks, env_slug, render_page

__all__ = ["ReplayedObservations", "cut_text", "render_trajectory", "replay_observations"]

#: Observations and replies longer than this are cut on the page (a shop page can be long).
_MAX_OBSERVATION_CHARS = 20_000
#: Past this many characters of (escaped) observations and replies, a page shows no more turns.
MAX_PAGE_CHARS = 1_000_000


@dataclass
class ReplayedObservations:
    """What the agent saw: ``observations[i]`` before reply ``i``, then the last one."""

    observations: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    system_prompt: str | None = None
    #: why the replay did not run or stopped early; None when it ran to the end
    note: str | None = None

    @classmethod
    def from_view(cls, view: Mapping[str, Any]) -> ReplayedObservations:
        """A view stored by a verification worker (`envgym.leaderboard.views`).
        An observation it did not store (its size bound) shows as missing."""
        observations = [o if isinstance(o, str) else None for o in view.get("observations", [])]
        return cls(
            observations=observations,  # type: ignore[arg-type]
            rewards=[float(r) for r in view.get("rewards", [])],
            system_prompt=view.get("system_prompt"),
            note=view.get("note"),
        )


def replay_observations(
    meta: Mapping[str, Any], episode: Mapping[str, Any]
) -> ReplayedObservations:
    """Replay `episode` of the results file whose header is `meta`; never raises.

    The env is made only with kwargs `envgym.evaluation.env_kwargs_problem`
    allows (the verifier's own check) and stepped by the verifier's own loop
    (`envgym.evaluation.replay_in_env`), keeping the observations."""
    out = ReplayedObservations()
    env_id = str(meta.get("env_id", ""))
    kwargs = meta.get("env_kwargs") or {}
    problem = env_kwargs_problem(env_id, kwargs)
    if problem is not None:
        out.note = f"not replayed: {problem}"
        return out
    try:
        env = make_text_env(env_id, kwargs)
    except Exception as exc:  # missing data, a sandbox it cannot start: show the replies anyway
        out.note = f"not replayed: cannot make {env_id} here ({type(exc).__name__}: {exc})"
        return out
    try:
        replay = replay_in_env(env, episode, observations=True)
    except Exception as exc:  # a record too malformed to replay (no seed)
        out.note = f"the replay stopped: {type(exc).__name__}: {exc}"
        return out
    finally:
        env.close()
    out.observations, out.rewards = replay.observations, replay.rewards
    out.system_prompt = replay.system_prompt
    if replay.error is not None:
        out.note = f"the replay stopped: {replay.error}"
    elif len(replay.rewards) < len(episode.get("actions") or []):
        out.note = f"the replayed episode ended after turn {len(replay.rewards)}"
    return out


def cut_text(text: str) -> str:
    """`text`, cut to the length a page shows (with how much was left out)."""
    if len(text) <= _MAX_OBSERVATION_CHARS:
        return text
    return (
        text[:_MAX_OBSERVATION_CHARS] + f"\n... ({len(text) - _MAX_OBSERVATION_CHARS} more chars)"
    )


def _reward(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "-"
    return f"{number:g}" if math.isfinite(number) else str(number)


def _meta_rows(
    meta: Mapping[str, Any], episode: Mapping[str, Any], index: int
) -> list[tuple[str, str]]:
    # A results file's header has {"name", "model"}; a server entry has both as strings.
    agent = meta.get("agent")
    if isinstance(agent, Mapping):
        name, model = agent.get("name"), agent.get("model")
    else:
        name, model = agent, meta.get("model")
    label = f"{name or '?'} ({model})" if model else str(name or "?")
    difficulty = meta.get("difficulty") or (meta.get("env_kwargs") or {}).get("difficulty")
    rows = [
        ("env", meta.get("env_id")),
        ("difficulty", difficulty),
        ("agent", label),
        ("episode", index),
        ("seed", episode.get("seed")),
        ("trial", episode.get("trial")),  # in a run of several trials per seed
        ("task", episode.get("task_id")),
        ("return", _reward(episode.get("return"))),
        ("success", "yes" if episode.get("success") else "no"),
        ("turns", episode.get("turns")),
    ]
    usage = episode.get("usage")
    if isinstance(usage, Mapping):
        rows.append(
            (
                "tokens",
                f"{usage.get('prompt_tokens', '?')} prompt, "
                f"{usage.get('completion_tokens', '?')} completion",
            )  # fmt: skip
        )
    return [(key, str(value)) for key, value in rows if value is not None]


def _pager(
    entry_id: str | None, index: int, count: int | None, links: SiteLinks
) -> list[tuple[str, str, str]]:
    """The (rel, href, label) links to the previous and next episode."""
    if entry_id is None:
        return []
    pager = []
    if index > 0:
        pager.append(("prev", links.trajectory(entry_id, index - 1), "previous episode"))
    if count is None or index + 1 < count:
        pager.append(("next", links.trajectory(entry_id, index + 1), "next episode"))
    return pager


def render_trajectory(
    meta: Mapping[str, Any],
    episode: Mapping[str, Any],
    index: int,
    *,
    entry_id: str | None = None,
    episode_count: int | None = None,
    replay: bool = True,
    links: SiteLinks | None = None,
    seen: ReplayedObservations | None = None,
) -> str:
    """Episode `index` of a results file (`meta` its header, or the whole file)
    turn by turn: ``section.turn`` each with the replayed ``pre.observation``,
    the ``pre.reply`` and the recorded ``.reward``, then the final observation.

    With `entry_id` the page links to the previous and next episode
    (`episode_count` bounds them). `seen`: the observations already replayed
    (a stored view), so nothing is replayed here; else `replay=False` shows
    replies and rewards only.
    """
    links = links or SiteLinks()
    env_id = str(meta.get("env_id", "?"))
    actions = [str(a) for a in episode.get("actions") or []]
    rewards = list(episode.get("rewards") or [])
    if seen is None:
        seen = replay_observations(meta, episode) if replay else ReplayedObservations(note=None)
    else:
        replay = True
    turns: list[dict[str, Any]] = []
    hidden = 0
    size = 0
    for i, reply in enumerate(actions):
        if size > MAX_PAGE_CHARS:
            hidden = len(actions) - i
            break
        observation = seen.observations[i] if i < len(seen.observations) else None
        reward = _reward(rewards[i] if i < len(rewards) else None)
        replayed = _reward(seen.rewards[i]) if i < len(seen.rewards) else None
        turn = {
            "number": i + 1,
            "observation": None if observation is None else cut_text(observation),
            "reply": cut_text(reply),
            "reward": reward,
            "replayed": replayed if replayed not in (None, reward) else None,
        }
        turns.append(turn)
        # Counted as the page holds them: escaped, "<" as "&lt;".
        size += len(escape(turn["observation"] or "")) + len(escape(turn["reply"]))
    last = seen.observations[-1] if seen.observations else None
    final = None
    if replay and len(seen.observations) == len(actions) + 1 and last is not None:
        final = cut_text(last)
    return render_page(
        "trajectory.html",
        f"{env_id} episode {index} - envgym leaderboard",
        links=links,
        env_id=env_id,
        slug=env_slug(env_id),
        index=index,
        meta=_meta_rows(meta, episode, index),
        pager=_pager(entry_id, index, episode_count, links),
        replay=replay,
        note=seen.note,
        system_prompt=seen.system_prompt,
        turns=turns,
        hidden=hidden,
        max_chars=MAX_PAGE_CHARS,
        final=final,
    )
