"""Random-play speed of every envgym game, against PettingZoo's tictactoe_v3
and TextArena's TicTacToe, Connect Four and Kuhn poker; and the cost of the
seeded generators a game's reset builds.

Every contender plays uniformly random legal moves (picked from what the env
itself exposes) and the clock covers the whole loop, resets included.

* envgym games go through the AEC loop a multi-agent trainer uses
  (`agent_iter`, `last`, `step`, `step(None)` at the end); moves are full text
  replies (``<answer>5</answer>``) that the env parses, picked from
  ``info["admissible_actions"]``.
* PettingZoo's tictactoe_v3: the same loop, integer moves from its action mask.
* TextArena raw: the env class of ``textarena.make(id)`` without its wrappers
  (``reset(num_players=2, seed=...)``, ``get_observation()``, ``step("[4]")``,
  ``close()``), moves read from its ``state.game_state``. TextArena wrapped:
  ``textarena.make(id)`` with its default LLM observation wrappers, one env per
  game (its observation wrapper keeps every message it ever saw, so a reused
  env slows down game after game).
* The single-agent ids (``gym.make("envgym/TicTacToe-v0", difficulty="easy")``,
  the random built-in opponent): ``reset``/``step`` with a random admissible
  action; moves/s counts both seats' moves, as the AEC rows do.

Kuhn poker is three hands per episode on every row (TextArena's KuhnPoker-v0
plays three), so resets weigh the same. Rounds interleave every contender, so a
noisy stretch hits all of them; each row reports its median round.

    python benchmarks/games.py                 # 3,000 games per row, 5 rounds
    python benchmarks/games.py --games 500 --rounds 3
    python benchmarks/games.py --only textarena --clock cpu   # CPU time, not wall
    python benchmarks/games.py --only seeding                 # seeded generators

TextArena is a benchmark-only dependency: ``pip install -e .[bench]``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import envgym
import envgym.envs.games as games_pkg

#: The clock every row reads: wall time by default; `--clock cpu` reads this
#: process's CPU time instead, which other work on a shared machine disturbs less.
clock = time.perf_counter


def _draws(games: int, seed: int) -> list[float]:
    return np.random.default_rng(seed).random(games * 400).tolist()


def play(env, games: int, choose, seed: int = 0) -> tuple[int, float]:
    """Moves and seconds for `games` random games through the AEC loop;
    `choose(obs, info, u)` picks a move from a uniform draw `u`."""
    draws = _draws(games, seed)
    k = moves = 0
    start = clock()
    for game in range(games):
        env.reset(seed=seed + game)
        for _agent in env.agent_iter():
            obs, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            env.step(choose(obs, info, draws[k]))
            k = (k + 1) % len(draws)
            moves += 1
    return moves, clock() - start


def envgym_move(obs: str, info: dict, u: float) -> str:
    legal = info["admissible_actions"]
    return f"<answer>{legal[int(u * len(legal))]}</answer>"


def pettingzoo_move(obs: dict, info: dict, u: float) -> int:
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[int(u * len(legal))])


def play_single(env_id: str, games: int, seed: int = 0, **kwargs: Any) -> tuple[int, float]:
    """Moves (both seats) and seconds for `games` episodes of a single-agent id."""
    env = gym.make(env_id, **kwargs)
    game = env.unwrapped.game
    draws = _draws(games, seed)
    k = moves = 0
    start = clock()
    for episode in range(games):
        _, info = env.reset(seed=seed + episode)
        done = False
        while not done:
            legal = info["admissible_actions"]
            reply = f"<answer>{legal[int(draws[k] * len(legal))]}</answer>"
            k = (k + 1) % len(draws)
            _, _, terminated, truncated, info = env.step(reply)
            done = terminated or truncated
        moves += game.moves
    seconds = clock() - start
    env.close()
    return moves, seconds


# ------------------------------------------------------------------ TextArena
def _ta_tictactoe(state: Any) -> list[str]:
    board = state.game_state["board"]
    return [f"[{r * 3 + c}]" for r in range(3) for c in range(3) if board[r][c] == ""]


def _ta_connect_four(state: Any) -> list[str]:
    top = state.game_state["board"][0]
    return [f"[{c}]" for c in range(len(top)) if top[c] == "."]


def _ta_kuhn(state: Any) -> list[str]:
    return [f"[{k}]" for k in state.game_state["current_legal_action_tree"]]


#: TextArena's id, the function listing its legal moves, envgym's AEC module
#: and keyword arguments, envgym's single-agent id.
TEXTARENA_GAMES: list[tuple[str, Callable[[Any], list[str]], str, dict[str, Any], str]] = [
    ("TicTacToe-v0", _ta_tictactoe, "tictactoe_v0", {}, "envgym/TicTacToe-v0"),
    ("ConnectFour-v0", _ta_connect_four, "connect_four_v0", {}, "envgym/ConnectFour-v0"),
    ("KuhnPoker-v0", _ta_kuhn, "kuhn_poker_v0", {"rounds": 3}, "envgym/KuhnPoker-v0"),
]


def play_textarena(
    ta_id: str, legal_moves: Callable[[Any], list[str]], games: int, *, wrapped: bool, seed: int = 0
) -> tuple[int, float]:
    """Moves and seconds for `games` random games of TextArena's `ta_id`: raw
    (the env without wrappers, reused) or wrapped (``textarena.make``, one per game)."""
    import textarena

    raw = textarena.make(f"{ta_id}-raw")
    draws = _draws(games, seed)
    k = moves = 0
    start = clock()
    for game in range(games):
        env = textarena.make(ta_id) if wrapped else raw
        env.reset(num_players=2, seed=seed + game)
        state = env.state
        done = False
        while not done:
            env.get_observation()
            legal = legal_moves(state)
            done, _ = env.step(legal[int(draws[k] * len(legal))])
            k = (k + 1) % len(draws)
            moves += 1
        env.close()
    return moves, clock() - start


def _measure(contenders, rounds: int, games: int) -> list[float]:
    """Median moves/s per contender over `rounds` interleaved rounds."""
    rates: list[list[float]] = [[] for _ in contenders]
    for _ in range(rounds):
        for i, (_, run) in enumerate(contenders):
            moves, seconds = run(games)
            rates[i].append(moves / seconds)
    return [statistics.median(r) for r in rates]


def pettingzoo_table(games: int, rounds: int) -> None:
    try:
        from pettingzoo.classic import tictactoe_v3
    except ImportError as exc:  # pygame is in the dev extra
        message = f"PettingZoo's classic games need pygame ({exc}); pip install pygame"
        raise SystemExit(message) from None
    pz = tictactoe_v3.env()
    rows = [("pettingzoo tictactoe_v3 (baseline)", 2, lambda n: play(pz, n, pettingzoo_move))]
    names = sorted(n for _, n, _ in pkgutil.iter_modules(games_pkg.__path__) if n.endswith("_v0"))
    for name in names:
        module = importlib.import_module(f"envgym.envs.games.{name}")
        for players in module.raw_env.player_counts:
            env = module.env(num_players=players)
            rows.append((f"envgym {name}", players, lambda n, e=env: play(e, n, envgym_move)))
    rates = _measure([(label, run) for label, _, run in rows], rounds, games)
    print(f"{'game':36} {'players':>7} {'moves/s':>10} {'vs tictactoe_v3':>16}")
    print("-" * 72)
    for (label, players, _), rate in zip(rows, rates, strict=True):
        print(f"{label:36} {players:>7} {rate:>10,.0f} {rate / rates[0]:>15.2f}x")


def _textarena_run(ta_id: str, legal: Callable[[Any], list[str]], *, wrapped: bool):
    return lambda n: play_textarena(ta_id, legal, n, wrapped=wrapped)


def _single_run(env_id: str, kwargs: dict[str, Any]):
    return lambda n: play_single(env_id, n, difficulty="easy", **kwargs)


def textarena_table(games: int, rounds: int) -> None:
    try:
        import textarena  # noqa: F401
    except ImportError:
        print("TextArena is not installed (pip install -e .[bench]): no TextArena table")
        return
    contenders = []
    for ta_id, legal, module_name, kwargs, single_id in TEXTARENA_GAMES:
        module = importlib.import_module(f"envgym.envs.games.{module_name}")
        aec = module.env(**kwargs)
        contenders += [
            (f"textarena {ta_id} raw", _textarena_run(ta_id, legal, wrapped=False)),
            (f"textarena {ta_id} wrapped", _textarena_run(ta_id, legal, wrapped=True)),
            (f"envgym {module_name} (AEC)", lambda n, e=aec: play(e, n, envgym_move)),
            (f"{single_id} easy", _single_run(single_id, kwargs)),
        ]
    rates = _measure(contenders, rounds, games)
    print(f"{'contender':40} {'moves/s':>10} {'vs TextArena raw':>17}")
    print("-" * 69)
    for start in range(0, len(contenders), 4):
        base = rates[start]
        for i in range(start, start + 4):
            print(f"{contenders[i][0]:40} {rates[i]:>10,.0f} {rates[i] / base:>16.2f}x")
        print()


def seeding_table(rounds: int, count: int = 20_000) -> None:
    """Microseconds to build a seeded generator: numpy's `default_rng` against
    `envgym.rng` (the same generator), and the single-agent games' jumped stream."""
    from envgym.rng import jumped_generator, seeded_generator

    seed, game = 2**61 + 12_345, seeded_generator(2**61 + 12_345)
    rows = [
        ("numpy default_rng(seed)", lambda: np.random.default_rng(seed)),
        ("numpy default_rng([seed, 1])", lambda: np.random.default_rng([seed, 1])),
        ("envgym seeded_generator(seed)", lambda: seeded_generator(seed)),
        ("envgym jumped_generator(game, 2)", lambda: jumped_generator(game, 2)),
    ]
    times: list[list[float]] = [[] for _ in rows]
    for _ in range(rounds):
        for i, (_, build) in enumerate(rows):
            start = clock()
            for _ in range(count):
                build()
            times[i].append((clock() - start) / count * 1e6)
    base = statistics.median(times[0])
    print(f"{'seeded generator':36} {'us each':>8} {'vs numpy default_rng(seed)':>27}")
    print("-" * 73)
    for (label, _), row in zip(rows, times, strict=True):
        us = statistics.median(row)
        print(f"{label:36} {us:>8.2f} {us / base:>26.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=3000, help="games per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; median kept")
    parser.add_argument(
        "--only",
        choices=("pettingzoo", "textarena", "seeding"),
        help="one table (default: all three)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall time, or this process's CPU time (steadier ratios on a busy machine)",
    )
    args = parser.parse_args(argv)
    global clock
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"envgym {envgym.__version__}, Python {platform.python_version()}, {platform.machine()}")
    print(
        f"{args.games} random games per row, median of {args.rounds} interleaved rounds; "
        f"moves per {args.clock}-clock second; load average {load:.2f} on "
        f"{os.cpu_count()} CPUs at the start\n"
    )
    if args.only in (None, "pettingzoo"):
        pettingzoo_table(args.games, args.rounds)
        print()
    if args.only in (None, "textarena"):
        textarena_table(args.games, args.rounds)
        print()
    if args.only in (None, "seeding"):
        seeding_table(args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
