"""The FrozenLake oracle: a planner that reads the map from the observation text.

On firm ice it follows a breadth-first-search shortest path, sending as many
moves per reply as the env allows. On slippery ice it runs finite-horizon value
iteration over the slip model documented in `FrozenLakeEnv` and sends one move
per reply: the move that maximises the probability of reaching the goal within
the turns left. Either way it sees only what a model sees, plus the env's
configuration (`max_actions_per_turn`, `slippery`). It plans with the env's
own move rule and search (`envgym.envs.frozenlake.lake`).
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np

from envgym.envs.frozenlake.lake import (
    ACTIONS,
    GOAL,
    HOLE,
    SLIP_OUTCOMES,
    breadth_first,
    move_between,
    neighbours,
)

__all__ = ["FrozenLakeOracle", "parse_observation"]

_GRID_LINE = re.compile(r"^[SFHGP]( [SFHGP])*$")
_TURNS_LEFT = re.compile(r"Turns left: (\d+)")
#: Horizon used when an observation does not say how many turns are left.
_FALLBACK_HORIZON = 200


def parse_observation(observation: str) -> tuple[list[str], tuple[int, int], int | None] | None:
    """The map rows (P replaced by F), the agent's (row, col) and the turns left.

    Returns None when the text holds no map with exactly one P.
    """
    lines = (line.strip() for line in observation.splitlines())
    rows = [line.replace(" ", "") for line in lines if _GRID_LINE.match(line)]
    if not rows or len({len(r) for r in rows}) != 1:
        return None
    found = [(r, row.index("P")) for r, row in enumerate(rows) if "P" in row]
    if len(found) != 1 or "".join(rows).count("P") != 1:
        return None
    r, c = found[0]
    rows[r] = rows[r].replace("P", "F")
    match = _TURNS_LEFT.search(observation)
    return rows, (r, c), int(match.group(1)) if match else None


class FrozenLakeOracle:
    """Plans from the observation text; see the module docstring.

    `success_probability(observation)` gives the chance, under this oracle's
    own plan, of reaching the goal from the state an observation shows
    (1.0 or 0.0 on firm ice).
    """

    name = "oracle"

    def __init__(self, env: gym.Env | None = None) -> None:
        base = env.unwrapped if env is not None else None
        self.max_actions_per_turn = int(getattr(base, "max_actions_per_turn", 1))
        self.slippery = bool(getattr(base, "slippery", False))
        # Value iteration per map: (values by turns left, greedy moves by turns left).
        self._plans: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}

    def reset(self) -> None:
        # Plans depend only on the map, so they stay valid across episodes; keep few.
        if len(self._plans) > 64:
            self._plans.clear()

    def act(self, observation: str, info: dict[str, Any]) -> str:
        parsed = parse_observation(observation)
        if parsed is None:
            return "<answer>Down</answer>"
        rows, (r, c), turns_left = parsed
        if self.slippery:
            move = self._slippery_move(rows, r, c, turns_left)
            return f"<answer>{ACTIONS[move]}</answer>"
        path = self._shortest_path(rows, r, c)
        if not path:
            path = [self._safe_move(rows, r, c)]
        return "<answer>" + " || ".join(path[: self.max_actions_per_turn]) + "</answer>"

    def success_probability(self, observation: str) -> float:
        """Probability of reaching the goal from this observation's state with this plan."""
        parsed = parse_observation(observation)
        if parsed is None:
            return 0.0
        rows, (r, c), turns_left = parsed
        if not self.slippery:
            path = self._shortest_path(rows, r, c)
            if not path:
                return 0.0
            if turns_left is None:
                return 1.0
            return float(len(path) <= turns_left * self.max_actions_per_turn)
        horizon = _FALLBACK_HORIZON if turns_left is None else turns_left
        values, _ = self._plan(rows, horizon)
        return float(values[horizon][r * len(rows[0]) + c])

    # ----------------------------------------------------------------- firm ice
    @staticmethod
    def _shortest_path(rows: list[str], r: int, c: int) -> list[str]:
        """Move names of a shortest hole-free path to G (empty if none)."""
        tiles, n_rows, n_cols = "".join(rows), len(rows), len(rows[0])
        here = r * n_cols + c
        distance, came_from = breadth_first(tiles, n_rows, n_cols, here)
        goal = tiles.find(GOAL)
        if goal < 0 or distance[goal] < 0:
            return []
        table = neighbours(n_rows, n_cols)
        path = []
        tile = goal
        while tile != here:  # back from the goal to here, along the search
            path.append(move_between(table, came_from[tile], tile))
            tile = came_from[tile]
        return path[::-1]

    @staticmethod
    def _safe_move(rows: list[str], r: int, c: int) -> str:
        """The first move that does not end in a hole (Up if every one does)."""
        tiles, n_cols = "".join(rows), len(rows[0])
        for move, there in enumerate(neighbours(len(rows), n_cols)[r * n_cols + c]):
            if tiles[there] != HOLE:
                return ACTIONS[move]
        return ACTIONS[0]

    # ------------------------------------------------------------- slippery ice
    def _slippery_move(self, rows: list[str], r: int, c: int, turns_left: int | None) -> int:
        horizon = _FALLBACK_HORIZON if turns_left is None else max(turns_left, 1)
        _, policy = self._plan(rows, horizon)
        return int(policy[horizon][r * len(rows[0]) + c])

    def _plan(self, rows: list[str], horizon: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """values[h][cell]: best chance of reaching G in h moves; policy[h]: the move for it."""
        key = "/".join(rows)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = ([], [])
        values, policy = plan
        if len(values) > horizon:
            return plan
        n_rows, n_cols = len(rows), len(rows[0])
        tiles = np.array(list("".join(rows)))
        goal, holes = tiles == GOAL, tiles == HOLE
        cells = np.arange(n_rows * n_cols)
        nbrs = np.array(neighbours(n_rows, n_cols), dtype=np.int64)
        # outcomes[a]: the three equally likely cells that move a leads to, per cell.
        outcomes = [nbrs[:, list(SLIP_OUTCOMES[a])] for a in range(4)]
        if not values:
            values.append(goal.astype(np.float64))
            policy.append(np.zeros(n_rows * n_cols, dtype=np.int64))
        while len(values) <= horizon:
            prev = values[-1]
            q = np.stack([prev[o].mean(axis=1) for o in outcomes])
            best = q.argmax(axis=0)
            v = q[best, cells]
            v[goal] = 1.0
            v[holes] = 0.0
            values.append(v)
            policy.append(best)
        return plan
