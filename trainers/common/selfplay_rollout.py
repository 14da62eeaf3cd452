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

The game is stepped by `envgym.selfplay.GameLoop`, the one owner of AEC
stepping and reward attribution (``rewards[t]`` is what the seat got from its
turn ``t`` up to its next turn or the end of the game), and a `SeatEpisode` is
its `envgym.selfplay.Trajectory` with the tokens added. An invalid reply is a
turn too (the seat moves again, warned); a second one in a turn loses the
game, and the seat's ``forfeit`` says so. A game whose next prompt would not
fit the model's context (``max_tokens``) stops there: every seat of it is
marked ``context_full`` (train on none). Who plays each seat is
`envgym.selfplay.draw_seats`'s to say (the trainer's ``seat_map``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from envgym.evaluation.tracks import check_training_seeds
from envgym.multiagent import MultiAgentTextEnv
from envgym.selfplay import GameLoop, Trajectory
from envgym.trainers.common.generation import GenerationBackend, SamplingParams
from envgym.trainers.common.rollout import RolloutTimes
from envgym.trainers.common.tokenization import ChatTokenizer, EpisodeTokens

__all__ = ["SeatEpisode", "play_games"]


@dataclass(kw_only=True)
class SeatEpisode(Trajectory):
    """One seat's side of one game: its `Trajectory` (``player``, ``policy``,
    observations, replies as ``actions``, rewards, ``valid``, ``forfeit``,
    ``truncated``) with its chat and tokens."""

    game: int  # the game's index in the batch
    seed: int
    tokens: EpisodeTokens = field(default_factory=EpisodeTokens)
    messages: list[dict[str, str]] = field(default_factory=list)
    #: without history: each move's own prompt and reply (one turn each)
    moves: list[EpisodeTokens] = field(default_factory=list)
    stopped: list[bool] = field(default_factory=list)  # per turn: ended with a stop token
    context_full: bool = False  # the game stopped: a prompt would not fit the model

    @property
    def replies(self) -> list[str]:
        """The seat's replies (its trajectory's ``actions``)."""
        return self.actions

    @replies.setter
    def replies(self, value: list[str]) -> None:
        self.actions = value


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
    loops: list[GameLoop] = []
    for i, game in enumerate(games):
        missing = set(game.possible_agents) - set(seats[i])
        unknown = set(seats[i].values()) - set(backends)
        if missing or unknown:
            raise ValueError(
                f"game {i}: seats {sorted(missing)} have no policy, or policies "
                f"{sorted(unknown)} have no backend; name one of {sorted(backends)} per seat"
            )
        episodes.append(
            {
                agent: SeatEpisode(game=i, seed=int(seeds[i]), player=agent, policy=seats[i][agent])
                for agent in game.possible_agents
            }
        )
        loops.append(GameLoop(game, episodes[i], seed=int(seeds[i])))
    # game -> (seat to move, its observation); a game leaves when it is over.
    waiting = {i: loop.to_move[:2] for i, loop in enumerate(loops) if loop.to_move is not None}
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
                seat = episodes[i][waiting[i][0]]
                reply = chat.add_reply(seat.messages, seat.tokens, ids)
                seat.stopped.append(bool(ids) and ids[-1] in backend.stop_token_ids)
                times.tokenization_s += time.perf_counter() - t0
                t0 = time.perf_counter()
                loops[i].reply(reply)
                del waiting[i]  # and back at the end, as the order of the next batch
                if loops[i].to_move is not None:
                    waiting[i] = loops[i].to_move[:2]
                times.env_s += time.perf_counter() - t0
    return episodes, times
