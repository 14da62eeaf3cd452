"""Breadth-first search over a board given as each cell's neighbours.

Grid envs number their cells ``0..n-1`` and list where each move from a cell
leads; the shortest ways across such a board (FrozenLake's hints and oracle,
Sokoban's walks) all come from `breadth_first`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

__all__ = ["breadth_first"]


def breadth_first(
    neighbours: Sequence[Sequence[int]], start: int, blocked: Collection[int] = ()
) -> tuple[list[int], list[int]]:
    """Breadth-first search from `start`, never onto a cell in `blocked`.

    `neighbours[cell]` lists the cells one move leads to from `cell`, in the
    order they are tried (ties between equally short ways go to the earlier).
    Returns, per cell, the fewest moves from `start` (-1 where there is no way)
    and the cell it was first reached from, one move closer to `start` (-1 at
    `start` and where there is no way).
    """
    distance = [-1] * len(neighbours)
    came_from = [-1] * len(neighbours)
    distance[start] = 0
    queue = [start]
    for cell in queue:  # the list grows while we walk it: a first-in first-out queue
        further = distance[cell] + 1
        for nxt in neighbours[cell]:
            if distance[nxt] < 0 and nxt not in blocked:
                distance[nxt] = further
                came_from[nxt] = cell
                queue.append(nxt)
    return distance, came_from
