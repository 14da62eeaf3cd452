"""Rollout collection: play one episode per env of a `TextVectorEnv` with the
policy, and keep what an update needs.

`collect_rollouts` resets the vector env with a seed (group ``g`` gets
``seed + g``, so the ``group_size`` members of a group play the same task),
then, turn after turn, asks the generation backend for a reply for every
episode still running, steps the envs with those replies and tokenizes the
env's answers (`envgym.trainers.common.tokenization`). An env whose episode
has ended idles (it is sent an empty reply, and what it plays next is thrown
away) until every episode of the batch is over. An episode whose next
prompt would not fit the model's context ends there, truncated.

Each `Episode` keeps its group, seed and task, per turn the observation, the
reply the env received, the reward and the ``state_key`` of the state the
reply was made in (GiGPO's anchor), and the episode's token ids with the
loss mask and each turn's token span. `RolloutTimes` splits the wall time
into generation, env steps and tokenization, for the logs and
``benchmarks/trainer.py``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envgym.evaluation.tracks import check_training_seeds
from envgym.trainers.common.generation import GenerationBackend, SamplingParams
from envgym.trainers.common.tokenization import ChatTokenizer, EpisodeTokens
from envgym.trainers.common.tree import TreeShape
from envgym.vector import TextVectorEnv

__all__ = ["Episode", "RolloutTimes", "TurnRecord", "collect_rollouts", "info_at"]


@dataclass
class TurnRecord:
    """One turn: what the policy saw and said, and what it got."""

    observation: str
    reply: str
    reward: float
    state_key: str | None  # the state the reply was made in
    stopped: bool  # the reply ended with a stop token (not cut at max_new_tokens)


@dataclass
class Episode:
    """One finished episode and its tokens."""

    group: int
    seed: int
    task_id: str | None
    turns: list[TurnRecord] = field(default_factory=list)
    tokens: EpisodeTokens = field(default_factory=EpisodeTokens)
    messages: list[dict[str, str]] = field(default_factory=list)
    success: bool = False
    terminated: bool = False
    truncated: bool = False
    error: str | None = None  # set when the env failed mid-episode (drop the episode)
    context_full: bool = False  # ended because the next prompt would not fit the model
    tree_node: tuple[int, ...] | None = None  # tree rollouts: the leaf's path (`tree`)

    @property
    def rewards(self) -> list[float]:
        return [t.reward for t in self.turns]

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))

    @property
    def state_keys(self) -> list[str | None]:
        return [t.state_key for t in self.turns]


@dataclass
class RolloutTimes:
    """Wall seconds of one `collect_rollouts` call, by where they went."""

    generation_s: float = 0.0
    env_s: float = 0.0
    tokenization_s: float = 0.0
    generated_tokens: int = 0

    @property
    def total_s(self) -> float:
        return self.generation_s + self.env_s + self.tokenization_s


def info_at(infos: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s info dict out of a vector env's batched infos (Gymnasium's
    layout: an array per key with a ``_key`` mask, nested for dict values)."""
    out: dict[str, Any] = {}
    for key, values in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if isinstance(values, Mapping):
            if mask is None or mask[i]:
                out[key] = info_at(values, i)
        elif mask is not None and mask[i]:
            value = values[i]
            out[key] = (
                value.item() if hasattr(value, "item") and getattr(value, "ndim", 1) == 0 else value
            )
    return out


def _no_room(episode: Episode, params: SamplingParams, max_tokens: int, system: bool) -> str:
    """Why an episode cannot start: its first prompt leaves no room for a reply."""
    shorter = "run without the env's system prompt (--system-prompt false), " if system else ""
    return (
        f"the first prompt of task {episode.task_id!r} is {len(episode.tokens.ids):,} tokens; "
        f"with max_new_tokens={params.max_new_tokens} it does not fit the model's context of "
        f"{max_tokens:,} tokens, so no episode could start: {shorter}lower --max-new-tokens, "
        "or use a model with a longer context"
    )


def collect_rollouts(
    envs: TextVectorEnv,
    backend: GenerationBackend,
    chat: ChatTokenizer,
    params: SamplingParams,
    *,
    seed: int,
    options: dict[str, Any] | None = None,
    system_prompt: bool = True,
    max_tokens: int | None = None,
    tree: TreeShape | None = None,
) -> tuple[list[Episode], RolloutTimes]:
    """Play one episode in each env of ``envs`` with the policy behind ``backend``.

    Args:
        envs: the batch; its groups give the episodes' ``group``.
        backend: samples replies from token prompts.
        chat: tokenizes the episodes with the model's chat template.
        params: sampling parameters.
        seed: group ``g`` plays the task of seed ``seed + g``.
        options: reset options for every env (e.g. ``{"task_id": ...}``).
        system_prompt: start each chat with the env's ``info["system_prompt"]``.
        max_tokens: the model's context: an episode whose next prompt plus a
            whole reply would not fit ends there, truncated (``context_full``).
        tree: play tree rollouts of this shape (`envgym.trainers.common.tree`):
            each group's envs hold trees whose nodes fork with
            `TextVectorEnv.branch`; only the leaves come back.

    Returns:
        The episodes, in env order, and where the time went.
    """
    if seed is not None:  # never train on the seeds leaderboard tickets draw from
        check_training_seeds(seed, envs.num_envs)
    times = RolloutTimes()
    t0 = time.perf_counter()
    observations, infos = envs.reset(seed=seed, options=options)
    times.env_s += time.perf_counter() - t0
    n = envs.num_envs
    episodes: list[Episode] = []
    last_info: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for i in range(n):
        info = info_at(infos, i)
        system = info.get("system_prompt") if system_prompt else None
        messages, tokens = chat.start(observations[i], system)
        episodes.append(
            Episode(
                group=int(envs.group_index[i]),
                seed=int(envs.episode_seeds[i]),
                task_id=info.get("task_id"),
                tokens=tokens,
                messages=messages,
            )
        )
        last_info.append(info)
    times.tokenization_s += time.perf_counter() - t0
    live = list(range(n)) if tree is None else tree.roots(envs.group_size, n, episodes)
    turns = 0
    while live:
        if max_tokens is not None:
            for i in live:
                if len(episodes[i].tokens.ids) + params.max_new_tokens > max_tokens:
                    if not episodes[i].turns:
                        raise ValueError(_no_room(episodes[i], params, max_tokens, system_prompt))
                    episodes[i].truncated = episodes[i].context_full = True
            live = [i for i in live if not episodes[i].context_full]
            if not live:
                break
        t0 = time.perf_counter()
        replies_ids = backend.generate([episodes[i].tokens.ids for i in live], params)
        times.generation_s += time.perf_counter() - t0
        times.generated_tokens += sum(len(r) for r in replies_ids)
        t0 = time.perf_counter()
        actions = [""] * n
        stopped: dict[int, bool] = {}
        for i, ids in zip(live, replies_ids, strict=True):
            actions[i] = chat.add_reply(episodes[i].messages, episodes[i].tokens, ids)
            stopped[i] = bool(ids) and ids[-1] in backend.stop_token_ids
        times.tokenization_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        observations, rewards, terminated, truncated, infos = envs.step(actions)
        times.env_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        still_live = []
        for i in live:
            episode = episodes[i]
            episode.turns.append(
                TurnRecord(
                    observation=episode.messages[-2]["content"],
                    reply=actions[i],
                    reward=float(rewards[i]),
                    state_key=last_info[i].get("state_key"),
                    stopped=stopped[i],
                )
            )
            info = info_at(infos, i)
            if terminated[i] or truncated[i]:
                final = info.get("final_info", {})
                episode.success = bool(final.get("success", False))
                episode.terminated, episode.truncated = bool(terminated[i]), bool(truncated[i])
                episode.error = info.get("error")
                continue
            last_info[i] = info
            chat.add_observation(episode.messages, episode.tokens, observations[i], stopped[i])
            still_live.append(i)
        live = still_live
        times.tokenization_s += time.perf_counter() - t0
        turns += 1
        if tree is not None:
            t0 = time.perf_counter()
            live = tree.grow(envs, episodes, last_info, live, turns)
            times.env_s += time.perf_counter() - t0
    if tree is not None:  # envs no node reached played nothing
        episodes = [e for e in episodes if e.tree_node is not None]
    return episodes, times
