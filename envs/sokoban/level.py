"""Sokoban levels: the board, reverse-play generation, and an optimal solver.

A level is a flat grid (row-major, `width` cells a row) whose border is wall.
Generation carves a room by a random walk, puts every box on a target, then
plays the game backwards (the player *pulls* boxes). Each pull is the exact
reverse of a push, so the forward puzzle is solvable by construction. The
solver is A* over pushes with walking costs, which gives the optimal number
of moves (not just pushes); the generator uses it to report the optimal
solution length.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Level",
    "LevelTooHard",
    "MAX_SOLVER_NODES",
    "MOVE_NAMES",
    "SOLVER_WORK_BUDGET",
    "SolverGaveUp",
    "generate_level",
    "node_budget",
    "parse_board",
    "solve",
]

MOVE_NAMES = ("Up", "Down", "Left", "Right")
WALL, FLOOR = "#", "_"
TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = ".", "$", "*", "@", "+"
#: Positions one `solve` call expands by default before it gives up.
MAX_SOLVER_NODES = 20_000
#: Solver work one level may cost, as positions expanded times cells inside the
#: walls (every expansion walks the player's floor): at most about half a second
#: at any room size, so no reset runs long. Rooms up to 10x10 get 5,000
#: positions, more than any of thousands of preset levels needed; larger rooms
#: proportionally fewer.
SOLVER_WORK_BUDGET = 5_000 * 64


def node_budget(height: int, width: int) -> int:
    """Positions the solver may expand to make (or check) one level of this size."""
    return SOLVER_WORK_BUDGET // max((height - 2) * (width - 2), 64)


class SolverGaveUp(Exception):
    """`solve` expanded its `max_nodes` positions without finishing."""

    def __init__(self, max_nodes: int) -> None:
        super().__init__(f"the solver gave up after {max_nodes} positions")
        self.max_nodes = max_nodes


class LevelTooHard(ValueError):
    """No level of the asked shape could be made and proved optimal within the
    generator's attempts and solver budget (or a given board within the solver's)."""


@dataclass(frozen=True)
class Level:
    """A generated start state and what the generator knows about it."""

    height: int
    width: int
    floor: bytes  # 1 where a cell is not wall
    targets: frozenset[int]
    boxes: tuple[int, ...]
    player: int
    optimal_moves: int
    optimal_pushes: int

    def board(self) -> str:
        return render_board(
            self.height, self.width, self.floor, self.targets, self.boxes, self.player
        )

    def offsets(self) -> tuple[int, int, int, int]:
        return (-self.width, self.width, -1, 1)


def render_board(
    height: int, width: int, floor: bytes, targets: frozenset[int], boxes, player: int
) -> str:
    """The board as XSB-style text rows (floor shown as '_')."""
    cells = [FLOOR if f else WALL for f in floor]
    for t in targets:
        cells[t] = TARGET
    for b in boxes:
        cells[b] = BOX_ON_TARGET if b in targets else BOX
    cells[player] = PLAYER_ON_TARGET if player in targets else PLAYER
    return "\n".join("".join(cells[r * width : (r + 1) * width]) for r in range(height))


def parse_board(text: str) -> tuple[int, int, bytes, frozenset[int], tuple[int, ...], int]:
    """Read a board written by `render_board` back into (h, w, floor, targets, boxes, player)."""
    rows = [r for r in text.strip("\n").split("\n")]
    height, width = len(rows), max(len(r) for r in rows)
    floor = bytearray(height * width)
    targets, boxes, player = set(), [], -1
    for r, row in enumerate(rows):
        for c, ch in enumerate(row):
            i = r * width + c
            if ch == WALL:
                continue
            floor[i] = 1
            if ch in (TARGET, BOX_ON_TARGET, PLAYER_ON_TARGET):
                targets.add(i)
            if ch in (BOX, BOX_ON_TARGET):
                boxes.append(i)
            if ch in (PLAYER, PLAYER_ON_TARGET):
                player = i
    if player < 0 or not boxes or len(boxes) != len(targets):
        raise ValueError("not a Sokoban board: need one player and as many boxes as targets")
    return height, width, bytes(floor), frozenset(targets), tuple(sorted(boxes)), player


# ----------------------------------------------------------------- generation
def _carve_room(rng: np.random.Generator, height: int, width: int, fill: float) -> bytearray:
    """Random-walk carving: a connected floor covering about `fill` of the interior."""
    floor = bytearray(height * width)
    inner = (height - 2) * (width - 2)
    goal = max(4, int(round(fill * inner)))
    directions = ((-1, 0), (1, 0), (0, -1), (0, 1))
    r, c = int(rng.integers(1, height - 1)), int(rng.integers(1, width - 1))
    dr, dc = directions[int(rng.integers(4))]
    carved = 0
    # One batch of draws, as Python floats: per-call RNG overhead dominates otherwise.
    for turn_p, dir_p, brush_p in rng.random((inner * 8, 3)).tolist():
        if turn_p < 0.35:
            dr, dc = directions[int(dir_p * 4)]
        # A brush a little wider than one cell makes rooms, not only corridors.
        for rr, cc in ((r, c),) if brush_p < 0.5 else ((r, c), (r + dc, c + dr)):
            if 0 < rr < height - 1 and 0 < cc < width - 1 and not floor[rr * width + cc]:
                floor[rr * width + cc] = 1
                carved += 1
        if carved >= goal:
            break
        if 0 < r + dr < height - 1 and 0 < c + dc < width - 1:
            r, c = r + dr, c + dc
    return floor


def _reverse_play(
    rng: np.random.Generator,
    width: int,
    floor: bytearray,
    targets: list[int],
    push_distance: list[int],
    player: int,
    steps: int,
) -> tuple[tuple[int, ...], int] | None:
    """Play backwards from the solved state, pulling boxes.

    Returns the most scrambled state seen: the largest total push distance from
    the boxes to their nearest targets (later states win ties, so the player
    ends up away from the last box). None if every box stayed on a target.
    """
    offsets = (-width, width, -1, 1)
    boxes = set(targets)
    best, best_score = None, -1
    draws = rng.random((steps, 3)).tolist()
    d_index = 0
    pulled = False
    for dir_p, momentum_p, pull_p in draws:
        # Keep pulling the same way now and then, so boxes travel more than one cell.
        if not (pulled and momentum_p < 0.5):
            d_index = int(dir_p * 4)
        d = offsets[d_index]
        nxt = player + d
        pulled = False
        if not floor[nxt] or nxt in boxes:
            continue
        behind = player - d
        if behind in boxes and pull_p < 0.8:
            boxes.remove(behind)
            boxes.add(player)
            pulled = True
        player = nxt
        if pulled and not boxes.issubset(targets):
            score = sum(push_distance[b] for b in boxes)
            if score >= best_score:
                best, best_score = (tuple(sorted(boxes)), player), score
    return best


def generate_level(
    rng: np.random.Generator,
    height: int,
    width: int,
    num_boxes: int,
    *,
    max_attempts: int = 200,
    max_solver_nodes: int = MAX_SOLVER_NODES,
    max_total_nodes: int | None = None,
    min_pushes: int | None = None,
) -> Level:
    """A solvable level needing at least `min_pushes` pushes, and its optimal solution length.

    A placement whose optimal solution takes more than `max_solver_nodes` solver
    positions to prove is skipped. All solver calls together may expand at most
    `max_total_nodes` positions (default: `node_budget` of the room): past that,
    `LevelTooHard` is raised rather than a different level returned, so a
    level's seed always gives the same level or this error.
    """
    inner = (height - 2) * (width - 2)
    if min_pushes is None:
        min_pushes = num_boxes + 1
    if max_total_nodes is None:
        max_total_nodes = node_budget(height, width)
    budget = max_total_nodes
    for _ in range(max_attempts):
        floor = _carve_room(rng, height, width, fill=0.7)
        cells = [i for i, f in enumerate(floor) if f]
        if len(cells) < num_boxes * 2 + 3:
            continue
        for _ in range(4):  # several placements per room: carving costs more than playing
            picks = rng.choice(len(cells), size=num_boxes + 1, replace=False).tolist()
            targets = [cells[i] for i in picks[:num_boxes]]
            target_set = frozenset(targets)
            nearest = _nearest_target_pushes(width, floor, targets)
            start = _reverse_play(
                rng, width, floor, targets, nearest, cells[picks[-1]], steps=3 * inner + 20
            )
            if start is None:
                continue
            boxes, player = start
            if sum(nearest[b] for b in boxes) < min_pushes:
                continue
            cap = min(max_solver_nodes, budget)
            try:
                solution = solve(width, bytes(floor), target_set, boxes, player, max_nodes=cap)
            except SolverGaveUp:
                if cap < max_solver_nodes:
                    raise LevelTooHard(
                        f"proving a {height}x{width} level with {num_boxes} boxes optimal "
                        f"took more than the {max_total_nodes} solver positions a level of "
                        "this size may cost; use a smaller room, fewer boxes or a lower "
                        "min_pushes"
                    ) from None
                budget -= cap
                continue  # too expensive to prove optimal: draw another level
            if solution is None:
                continue  # backwards play makes solvable levels; this is only a guard
            moves, pushes = solution
            return Level(
                height=height,
                width=width,
                floor=bytes(floor),
                targets=frozenset(targets),
                boxes=boxes,
                player=player,
                optimal_moves=len(moves),
                optimal_pushes=pushes,
            )
    raise LevelTooHard(
        f"could not generate a {height}x{width} Sokoban level with {num_boxes} boxes needing "
        f"at least {min_pushes} pushes in {max_attempts} attempts; use a larger room, fewer "
        "boxes or a lower min_pushes"
    )


# --------------------------------------------------------------------- solver
def _pull_distances(width: int, floor: bytes, sources) -> list[int]:
    """Fewest pushes that bring a box from each cell onto the nearest of `sources`,
    ignoring other boxes (-1 where none can be reached): a breadth-first search
    that pulls a box backwards from the sources."""
    offsets = (-width, width, -1, 1)
    dist = [-1] * len(floor)
    queue = list(sources)
    for t in queue:
        dist[t] = 0
    for x in queue:
        for d in offsets:
            # A box at x - d pushed by a player standing at x - 2d lands on x.
            y = x - d
            if floor[y] and dist[y] < 0 and floor[y - d]:
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist


def _nearest_target_pushes(width: int, floor: bytes, targets) -> list[int]:
    """Fewest pushes from each cell to the nearest target (0 where none reaches)."""
    return [max(v, 0) for v in _pull_distances(width, floor, targets)]


def _box_distances(width: int, floor: bytes, targets: frozenset[int]) -> list[list[int]]:
    """For each target, the fewest pushes from each cell to it (-1 where impossible)."""
    return [_pull_distances(width, floor, [t]) for t in sorted(targets)]


def solve(
    width: int,
    floor: bytes,
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
    n = len(floor)
    offsets = (-width, width, -1, 1)
    tables = _box_distances(width, floor, targets)
    nearest = [min((t[c] for t in tables if t[c] >= 0), default=-1) for c in range(n)]
    dead = [not floor[c] or nearest[c] < 0 for c in range(n)]
    nbrs = [[c + d for d in offsets if floor[c + d]] if floor[c] else [] for c in range(n)]
    k = len(targets)
    unreachable = 1 << 30
    # Per cell, the push distance to each target (unreachable where none).
    cost_rows = [tuple(t[c] if t[c] >= 0 else unreachable for t in tables) for c in range(n)]
    bits = [(j, 1 << j) for j in range(k)]
    popcount = [bin(m).count("1") for m in range(1 << k)]
    h_cache: dict[int, int] = {}
    target_mask = sum(1 << t for t in targets)

    def heuristic(bs: tuple[int, ...], mask: int) -> int:
        """Cheapest assignment of boxes to distinct targets (DP over target subsets)."""
        h = h_cache.get(mask)
        if h is None:
            rows = [cost_rows[b] for b in bs]
            best = [unreachable] * (1 << k)
            best[0] = 0
            for used in range(1 << k):
                cost = best[used]
                if cost >= unreachable or popcount[used] == k:
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
    heap = [(h0, 0, 0, player, start_mask, start_boxes)]
    expanded = 0
    while heap:
        _, neg_pushes, g, p, mask, bs = heapq.heappop(heap)
        if best_g[(p, mask)] != g:
            continue
        if mask == target_mask:
            return _reconstruct(parent, (p, mask, bs), width, floor), -neg_pushes
        expanded += 1
        if expanded > max_nodes:
            raise SolverGaveUp(max_nodes)
        boxset = set(bs)
        dist = [-1] * n
        dist[p] = 0
        queue = [p]
        for c in queue:
            dc = dist[c] + 1
            for m in nbrs[c]:
                if dist[m] < 0 and m not in boxset:
                    dist[m] = dc
                    queue.append(m)
        for b in bs:
            for d in offsets:
                walk = dist[b - d]
                dest = b + d
                if walk < 0 or dead[dest] or dest in boxset:
                    continue
                if _frozen(dest, width, floor, boxset, b, targets):
                    continue
                nmask = mask ^ (1 << b) ^ (1 << dest)
                child = (b, nmask)
                g2 = g + walk + 1
                if g2 < best_g.get(child, unreachable):
                    nbs = tuple(dest if x == b else x for x in bs)
                    h = heuristic(nbs, nmask)
                    if h >= unreachable:
                        continue
                    best_g[child] = g2
                    parent[child] = ((p, mask, bs), b - d, d)
                    heapq.heappush(heap, (g2 + h, neg_pushes - 1, g2, b, nmask, nbs))
    return None


def _frozen(dest: int, width: int, floor: bytes, boxset: set[int], moved: int, targets) -> bool:
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


def _reconstruct(parent: dict, node: tuple, width: int, floor: bytes) -> list[str]:
    pushes = []
    entry = parent[(node[0], node[1])]
    while entry is not None:
        prev, stand, d = entry
        pushes.append((prev, stand, d))
        entry = parent[(prev[0], prev[1])]
    pushes.reverse()
    names = dict(zip((-width, width, -1, 1), MOVE_NAMES, strict=True))
    moves: list[str] = []
    for (p, _, bs), stand, d in pushes:
        moves.extend(_walk(width, floor, set(bs), p, stand, names))
        moves.append(names[d])
    return moves


def _walk(width: int, floor: bytes, boxset: set[int], src: int, dst: int, names) -> list[str]:
    """Shortest walk from src to dst around boxes, as move names."""
    if src == dst:
        return []
    prev = {src: None}
    queue = [src]
    for c in queue:
        for d in (-width, width, -1, 1):
            m = c + d
            if floor[m] and m not in boxset and m not in prev:
                prev[m] = (c, d)
                if m == dst:
                    path = []
                    while prev[m] is not None:
                        m, step = prev[m]
                        path.append(names[step])
                    return path[::-1]
                queue.append(m)
    raise ValueError("no walk between the given cells")
