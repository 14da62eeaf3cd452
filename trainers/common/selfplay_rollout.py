"""Batched self-play rollouts: many games at once, every seat its own chat.

`play_games` plays one game per `MultiAgentTextEnv` in ``games`` through
the PettingZoo AEC loop (``agent_iter``, ``last``, ``step``), all of them
in lockstep: each round, every unfinished game has one seat to move, and
the seats played by the same policy (the learner, ``"self"``, or a past
checkpoint, ``"pool[k]"``) get their replies from that policy's generation
backend in one batch. Each seat of each game is a `SeatEpisode`: its own
conversation and token ids (`ChatTokenizer`, exactly as a single-agent
rollout of `envgym.trainers.common.rollout` tokenizes an episode: the
game's system prompt, the seat's observations as user turns, its replies as
generated ids with the loss on them), so a seat trains like a single-agent
episode.

Rewards follow `envgym.selfplay.play_episode`: ``rewards[t]`` is what the
seat got from its turn ``t`` up to its next turn or the end of the game, read
from ``last()`` (PettingZoo's cumulative reward since the seat last acted).
An invalid reply is a turn too (the seat moves again, warned); a second one
in a turn loses the game, and the seat's `SeatEpisode.forfeit` says so. A
game whose next prompt would not fit the model's context (``max_tokens``)
stops there: every seat of it is marked ``context_full`` (train on none).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from envgym.evaluation.tracks import check_training_seeds
from envgym.multiagent import MultiAgentTextEnv
from envgym.trainers.common.generation import GenerationBackend, SamplingParams
from envgym.trainers.common.rollout import RolloutTimes
from envgym.trainers.common.tokenization import ChatTokenizer, EpisodeTokens

__all__ = ["SeatEpisode", "play_games"]


@dataclass
class SeatEpisode:
    """One seat's side of one game: its chat, its tokens and what it got."""

    game: int  # the game's index in the batch
    seed: int
    player: str  # the seat (role): "player_0", "player_1", ...
    policy: str  # who played it: "self" (the learner) or "pool[k]"
    tokens: EpisodeTokens = field(default_factory=EpisodeTokens)
    messages: list[dict[str, str]] = field(default_factory=list)
    #: without history: each move's own prompt and reply (one turn each)
    moves: list[EpisodeTokens] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)  # per turn
    valid: list[bool] = field(default_factory=list)  # per turn: the reply was a legal move
    stopped: list[bool] = field(default_factory=list)  # per turn: ended with a stop token
    forfeit: bool = False  # lost the game by a second invalid reply in one turn
    truncated: bool = False  # the game hit its move cap
    context_full: bool = False  # the game stopped: a prompt would not fit the model

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))

    @property
    def turns(self) -> int:
        return len(self.replies)


def play_games(
    games: Sequence[MultiAgentTextEnv],
    seats: Sequence[Mapping[str, str]],
    backends: Mapping[str, GenerationBackend],
    chat: ChatTokenizer,
    params: SamplingParams,
    *,
    seeds: Sequence[int],
    system_prompt: bool = True,
    max_tokens: int | None = None,
    history: bool = True,
) -> tuple[list[dict[str, SeatEpisode]], RolloutTimes]:
    """Play game ``i`` of ``games`` from ``reset(seed=seeds[i])`` to its end.

    Args:
        games: the games (reset here; reusable across calls).
        seats: for each game, the policy name (a key of ``backends``) of every
            seat, e.g. ``{"player_0": "self", "player_1": "pool[0]"}``.
        backends: each policy's generation backend.
        chat: tokenizes every seat's conversation (the policies share a tokenizer).
        params: sampling parameters for every policy.
        seeds: each game's seed.
        system_prompt: start each seat's chat with the game's system prompt.
        max_tokens: the model's context (None: no limit).
        history: prompt each move with the seat's whole game so far; False
            prompts it with the system prompt and the current observation
            only (each move is then its own sequence, in `SeatEpisode.moves`).

    Returns:
        For each game, every seat's `SeatEpisode`, and where the time went.
    """
    if not (len(games) == len(seats) == len(seeds)):
        raise ValueError(
            f"one seat map and one seed per game: got {len(games)} games, "
            f"{len(seats)} seat maps and {len(seeds)} seeds"
        )
    for seed in seeds:  # never train on the seeds leaderboard tickets draw from
        check_training_seeds(seed)
    times = RolloutTimes()
    t0 = time.perf_counter()
    episodes: list[dict[str, SeatEpisode]] = []
    turns: list[Iterator[str]] = []
    for i, game in enumerate(games):
        game.reset(seed=int(seeds[i]))
        missing = set(game.possible_agents) - set(seats[i])
        unknown = set(seats[i].values()) - set(backends)
        if missing or unknown:
            raise ValueError(
                f"game {i}: seats {sorted(missing)} have no policy, or policies "
                f"{sorted(unknown)} have no backend; name one of {sorted(backends)} per seat"
            )
        episodes.append(
            {
                agent: SeatEpisode(i, int(seeds[i]), agent, seats[i][agent])
                for agent in game.possible_agents
            }
        )
        turns.append(iter(game.agent_iter()))
    # game -> (seat to move, its observation); a game leaves when it is over.
    waiting: dict[int, tuple[str, str]] = {}
    for i in range(len(games)):
        _advance(games[i], turns[i], episodes[i], waiting, i)
    times.env_s += time.perf_counter() - t0
    while waiting:
        t0 = time.perf_counter()
        by_policy: dict[str, list[int]] = {}
        for i, (agent, observation) in list(waiting.items()):
            seat = episodes[i][agent]
            if not seat.tokens.ids or not history:
                system = (games[i].system_prompt or None) if system_prompt else None
                seat.messages, seat.tokens = chat.start(observation, system)
                if not history:
                    seat.moves.append(seat.tokens)
            else:
                chat.add_observation(seat.messages, seat.tokens, observation, seat.stopped[-1])
            if max_tokens is not None and len(seat.tokens.ids) + params.max_new_tokens > max_tokens:
                for other in episodes[i].values():
                    other.context_full = True
                del waiting[i]
                continue
            by_policy.setdefault(seat.policy, []).append(i)
        times.tokenization_s += time.perf_counter() - t0
        for policy, batch in by_policy.items():
            backend = backends[policy]
            t0 = time.perf_counter()
            prompts = [episodes[i][waiting[i][0]].tokens.ids for i in batch]
            replies = backend.generate(prompts, params)
            times.generation_s += time.perf_counter() - t0
            if policy == "self":
                times.generated_tokens += sum(len(r) for r in replies)
            for i, ids in zip(batch, replies, strict=True):
                t0 = time.perf_counter()
                agent = waiting[i][0]
                seat = episodes[i][agent]
                reply = chat.add_reply(seat.messages, seat.tokens, ids)
                seat.replies.append(reply)
                seat.rewards.append(0.0)
                seat.stopped.append(bool(ids) and ids[-1] in backend.stop_token_ids)
                times.tokenization_s += time.perf_counter() - t0
                t0 = time.perf_counter()
                game = games[i]
                game.step(reply)
                seat.valid.append(bool(game.infos[agent]["action_valid"]))
                seat.forfeit = game.game_over and not seat.valid[-1]
                del waiting[i]
                _advance(game, turns[i], episodes[i], waiting, i)
                times.env_s += time.perf_counter() - t0
    return episodes, times


def _advance(
    game: MultiAgentTextEnv,
    turns: Iterator[str],
    seats: dict[str, SeatEpisode],
    waiting: dict[int, tuple[str, str]],
    index: int,
) -> None:
    """Run the AEC loop of one game up to the next seat that must reply
    (recorded in ``waiting``), handing each seat the reward ``last()`` shows."""
    for agent in turns:
        observation, reward, terminated, truncated, _ = game.last()
        seat = seats[agent]
        if seat.rewards:
            seat.rewards[-1] += float(reward)
        if terminated or truncated:
            seat.truncated = bool(truncated)
            game.step(None)
            continue
        waiting[index] = (agent, observation)
        return
