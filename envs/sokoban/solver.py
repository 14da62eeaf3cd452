"""The optimal Sokoban solver: A* over pushes, with walking costs.

It finds the fewest moves (not only pushes) that put every box on a target,
moving the player by the board's own rules (`move` and `walk` in
`envgym.envs.sokoban.board`). The generator uses it to report each level's
optimal solution length, and the oracle to play.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Sequence

from envgym.envs.sokoban.board import MOVE_NAMES, floor_neighbours, move, move_steps, path, walk

__all__ = ["MAX_SOLVER_NODES", "SolverGaveUp", "push_distances", "solve"]

#: Positions one `solve` call expands by default before it gives up.
MAX_SOLVER_NODES = 20_000
#: The cost that stands for "no way" in the heuristic's sums.
_UNREACHABLE = 1 << 30


class SolverGaveUp(Exception):
    """`solve` expanded its `max_nodes` positions without finishing."""

    def __init__(self, max_nodes: int) -> None:
        super().__init__(f"the solver gave up after {max_nodes} positions")
        self.max_nodes = max_nodes


def push_distances(width: int, floor: Sequence[int], targets: Iterable[int]) -> list[int]:
    """Fewest pushes that bring a box from each cell onto the nearest of
    `targets`, ignoring other boxes (-1 where none can): a breadth-first search
    that pulls a box backwards from the targets."""
    steps = move_steps(width)
    distance = [-1] * len(floor)
    queue = list(targets)
    for target in queue:
        distance[target] = 0
    for cell in queue:
        for step in steps:
            # A box one step back from `cell`, pushed by a player one more step back, lands on it.
            box = cell - step
            if floor[box] and distance[box] < 0 and floor[box - step]:
                distance[box] = distance[cell] + 1
                queue.append(box)
    return distance


def solve(
    width: int,
    floor: Sequence[int],
    targets: frozenset[int],
    boxes: tuple[int, ...],
    player: int,
    *,
    max_nodes: int = MAX_SOLVER_NODES,
) -> tuple[list[str], int] | None:
    """Optimal (fewest moves) solution as move names and its push count.

    A* over pushes: an edge is a walk to a box plus one push, costing the walk
    length + 1. The heuristic (a box-to-target matching of push distances) never
    overestimates and changes by at most 1 per push, so the first solved state
    popped is optimal. Returns None if the level has no solution; raises
    `SolverGaveUp` when `max_nodes` expansions did not finish.
    """
    cells = range(len(floor))
    steps = move_steps(width)
    # Per target, the fewest pushes from each cell onto it; a box on a cell no
    # target can be reached from is dead.
    tables = [push_distances(width, floor, [t]) for t in sorted(targets)]
    dead = [not floor[c] or all(table[c] < 0 for table in tables) for c in cells]
    cost_rows = [tuple(t[c] if t[c] >= 0 else _UNREACHABLE for t in tables) for c in cells]
    k = len(targets)
    bits = [(j, 1 << j) for j in range(k)]
    popcount = [bin(m).count("1") for m in range(1 << k)]
    h_cache: dict[int, int] = {}
    # A set of boxes is also kept as a bit mask of its cells, to key states by.
    target_mask = sum(1 << t for t in targets)
    neighbours = floor_neighbours(floor, width)

    def heuristic(bs: tuple[int, ...], mask: int) -> int:
        """Cheapest assignment of boxes to distinct targets (DP over target subsets)."""
        h = h_cache.get(mask)
        if h is None:
            rows = [cost_rows[b] for b in bs]
            best = [_UNREACHABLE] * (1 << k)
            best[0] = 0
            for used in range(1 << k):
                cost = best[used]
                if cost >= _UNREACHABLE or popcount[used] == k:
                    continue
                row = rows[popcount[used]]
                for j, bit in bits:
                    if not used & bit:
                        value = cost + row[j]
                        if value < best[used | bit]:
                            best[used | bit] = value
            h = h_cache[mask] = best[-1]
        return h

    start_boxes = tuple(boxes)
    start_mask = sum(1 << b for b in start_boxes)
    if any(dead[b] for b in start_boxes):
        return None
    h0 = heuristic(start_boxes, start_mask)
    start = (player, start_mask)
    best_g = {start: 0}
    parent: dict[tuple[int, int], tuple | None] = {start: None}
    # Ties on f go to more pushes made, then fewer moves, then the lower cells.
    heap = [(h0, 0, 0, player, start_mask, start_boxes)]
    expanded = 0
    while heap:
        _, neg_pushes, g, p, mask, bs = heapq.heappop(heap)
        if best_g[(p, mask)] != g:
            continue
        if mask == target_mask:
            return _reconstruct(parent, (p, mask), width, neighbours), -neg_pushes
        expanded += 1
        if expanded > max_nodes:
            raise SolverGaveUp(max_nodes)
        boxset = set(bs)
        walk_moves = walk(neighbours, boxset, p)[0]
        for b in bs:
            for index, step in enumerate(steps):
                stand = b - step
                if walk_moves[stand] < 0:
                    continue
                pushed = move(floor, boxset, stand, step)
                if pushed is None:
                    continue
                dest = pushed[1]
                if dead[dest] or _frozen(dest, width, floor, boxset, b, targets):
                    continue
                nmask = mask ^ (1 << b) ^ (1 << dest)
                child = (b, nmask)
                g2 = g + walk_moves[stand] + 1
                if g2 < best_g.get(child, _UNREACHABLE):
                    nbs = tuple(dest if x == b else x for x in bs)
                    h = heuristic(nbs, nmask)
                    if h >= _UNREACHABLE:
                        continue
                    best_g[child] = g2
                    parent[child] = ((p, mask, bs), stand, index)
                    heapq.heappush(heap, (g2 + h, neg_pushes - 1, g2, b, nmask, nbs))
    return None


def _frozen(
    dest: int,
    width: int,
    floor: Sequence[int],
    boxset: Collection[int],
    moved: int,
    targets: Collection[int],
) -> bool:
    """A 2x2 block of walls and boxes around `dest` holding a box off target is a deadlock."""

    def solid(c: int) -> bool:
        return not floor[c] or (c != moved and c in boxset)

    up, down = solid(dest - width), solid(dest + width)
    left, right = solid(dest - 1), solid(dest + 1)
    if not ((up or down) and (left or right)):
        return False  # no 2x2 block can hold dest
    for dr, vertical in ((-width, up), (width, down)):
        if not vertical:
            continue
        for dc, horizontal in ((-1, left), (1, right)):
            if not horizontal or not solid(dest + dr + dc):
                continue
            square = (dest, dest + dr, dest + dc, dest + dr + dc)
            if any(
                (c == dest or (c != moved and c in boxset)) and c not in targets for c in square
            ):
                return True
    return False


def _reconstruct(
    parent: dict, node: tuple[int, int], width: int, neighbours: list[tuple[int, ...]]
) -> list[str]:
    """The moves from the start to `node`: per push, a walk to the box, then the push."""
    pushes = []
    entry = parent[node]
    while entry is not None:
        pushes.append(entry)
        (p, mask, _), _, _ = entry
        entry = parent[(p, mask)]
    moves: list[str] = []
    for (p, _, bs), stand, index in reversed(pushes):
        came_from = walk(neighbours, set(bs), p)[1]
        moves.extend(path(width, came_from, p, stand))
        moves.append(MOVE_NAMES[index])
    return moves
