"""Tree rollouts (ARPO, TreeRL style): episodes that fork at chosen turns, and
their advantages within each subtree.

Layout. A `TreeShape` of ``branch_turns = (b_1, .., b_D)`` and ``width = K``
lays each GRPO group of ``group_size`` envs out as ``R = group_size / K^D``
trees of ``K^D`` leaves. Every tree's root plays its group's task from reset
in the first env of its block; the block's other envs wait (sent empty
replies, as envs whose episode is over are, until a fork overwrites them:
a cost for envs whose steps are slow, such as sandboxes). After the root
has played ``b_1`` turns (replies), it becomes K children: child 0 goes on
in the same env and children 1..K-1 are copies made with
`TextVectorEnv.branch` into envs of the block (child ``j`` of a node whose
block starts at env ``s`` and spans ``S`` envs plays in ``s + j * S / K``).
Each live node forks again after ``b_2`` turns, and so on; a node whose
episode ended before a branch turn simply has no children (its waiting envs
stay unused). Each leaf is one `Episode` holding its whole path's turns and
tokens; the turns it shares with its siblings (its prefix) are copied with
their loss mask set to 0, so a prefix is trained once, in the episode that
played it.

Nodes are named by their path: ``(group, root, j_1, .., j_d)``; an episode's
``tree_node`` is its leaf's name, and the node of its turn ``t`` (0-based) is
the leaf's name cut to ``2 + #{b in branch_turns: b <= t}`` entries.

Advantages (`tree_advantages`). Leaf ``e`` has return ``R_e``, the sum of
its path's rewards. A node's subtree return ``V(n)`` is the mean of ``R_e``
over the leaves under ``n``. Every turn of node ``n`` gets the advantage of
``V(n)`` among its siblings ``sib(n)`` (the children of ``n``'s parent; for a
root, the roots of its group)::

    grpo: A(n) = (V(n) - mean_{m in sib(n)} V(m)) / (std_{m in sib(n)} V(m) + eps)
    rloo: A(n) = V(n) - mean_{m in sib(n), m != n} V(m)

with the std optional (``scale_by_std``) for ``grpo``, exactly the formulas
of `envgym.trainers.common.advantages` applied to the sibling sets. The
advantages of siblings sum to 0, so a turn is credited only with what it
changed against the continuations that shared its past (TreeRL, Hou et al.
2025, arXiv 2506.11902; ARPO, Dong et al. 2025, arXiv 2507.19849). A group of
one tree (``R = 1``) gives its root 0.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from envgym.trainers.common.advantages import compute_advantages

__all__ = ["TREE_ESTIMATORS", "TreeShape", "tree_advantages", "tree_counts"]

#: The estimators tree rollouts take: one return per node compared with its siblings.
TREE_ESTIMATORS = ("grpo", "rloo")

Node = tuple[int, ...]


def parse_branch_turns(text: str) -> tuple[int, ...]:
    """``"1,3"`` -> ``(1, 3)``; ``""`` -> ``()``. Raises ValueError naming the flag."""
    if not text.strip():
        return ()
    try:
        turns = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(
            f"--tree-branch-turns takes turn counts separated by commas, such as '1,3'; "
            f"got {text!r}"
        ) from None
    if turns[0] < 1 or any(b <= a for a, b in zip(turns, turns[1:], strict=False)):
        raise ValueError(
            f"--tree-branch-turns must be increasing turn counts of at least 1 (a fork after "
            f"that many replies), such as '1,3'; got {text!r}"
        )
    return turns


@dataclass(frozen=True)
class TreeShape:
    """Where episodes fork (after ``branch_turns`` replies) and into how many."""

    branch_turns: tuple[int, ...]
    width: int

    @property
    def leaves(self) -> int:
        """Leaves (envs) per tree."""
        return self.width ** len(self.branch_turns)

    def problem(self, group_size: int) -> str | None:
        """Why this shape does not fit groups of ``group_size`` envs, or None."""
        if self.width < 2:
            return f"--tree-width must be >= 2 (children per fork), got {self.width}"
        if group_size % self.leaves:
            return (
                f"tree rollouts need --group-size to be a multiple of the leaves per tree: "
                f"{len(self.branch_turns)} fork(s) of width {self.width} make {self.leaves} "
                f"leaves, and --group-size is {group_size}; set --group-size to "
                f"{self.leaves * max(2, group_size // self.leaves)} (roots per group x leaves)"
            )
        return None

    # ------------------------------------------------------------ rollout
    def roots(self, group_size: int, num_envs: int, episodes: Sequence[Any]) -> list[int]:
        """The envs the roots play in (the first of each block), naming their episodes."""
        live = []
        for s in range(0, num_envs, self.leaves):
            episodes[s].tree_node = (s // group_size, (s % group_size) // self.leaves)
            live.append(s)
        return live

    def grow(
        self,
        envs: Any,
        episodes: list[Any],
        last_info: list[dict[str, Any]],
        live: list[int],
        turns: int,
    ) -> list[int]:
        """After ``turns`` replies: fork every live node if ``turns`` is a branch
        turn (`TextVectorEnv.branch`, the episode records copied with their
        loss masks cleared); returns the envs that play on."""
        if turns not in self.branch_turns:
            return live
        depth = self.branch_turns.index(turns)
        spacing = self.leaves // self.width ** (depth + 1)
        grown = []
        for s in live:
            parent = episodes[s]
            targets = [s + j * spacing for j in range(1, self.width)]
            envs.branch(s, targets)
            for j, t in enumerate(targets, start=1):
                child = copy.deepcopy(parent)
                child.tokens.loss_mask = [0] * len(child.tokens.loss_mask)
                child.tree_node = (*parent.tree_node, j)
                episodes[t] = child
                last_info[t] = copy.deepcopy(last_info[s])
            parent.tree_node = (*parent.tree_node, 0)
            grown.extend([s, *targets])
        return sorted(grown)

    def node_of_turn(self, leaf: Node, turn: int) -> Node:
        """The node that played turn ``turn`` (0-based) of the episode ending in ``leaf``."""
        depth = sum(1 for b in self.branch_turns if b <= turn)
        return leaf[: min(2 + depth, len(leaf))]


def tree_advantages(
    shape: TreeShape,
    leaves: Sequence[Node],
    rewards: Sequence[Sequence[float]],
    *,
    estimator: str = "grpo",
    scale_by_std: bool = True,
    eps: float = 1e-6,
) -> list[np.ndarray]:
    """Per-turn advantages of tree episodes (formulas: the module docstring).

    ``leaves[e]`` is episode ``e``'s ``tree_node`` and ``rewards[e]`` its
    per-turn rewards, prefix included."""
    if estimator not in TREE_ESTIMATORS:
        raise ValueError(
            f"tree rollouts take --estimator {' or '.join(TREE_ESTIMATORS)}, got {estimator!r}"
        )
    if len(leaves) != len(rewards):
        raise ValueError(f"{len(leaves)} leaves but {len(rewards)} reward lists; pass one each")
    returns = np.array([sum(float(r) for r in episode) for episode in rewards], dtype=np.float64)
    under: dict[Node, list[int]] = {}
    for e, leaf in enumerate(leaves):
        for depth in range(2, len(leaf) + 1):
            under.setdefault(leaf[:depth], []).append(e)
    nodes = list(under)
    sibling_sets: dict[Node, int] = {}
    groups = [sibling_sets.setdefault(n[:-1], len(sibling_sets)) for n in nodes]
    values = [[float(np.mean(returns[under[n]]))] for n in nodes]
    node_adv = compute_advantages(groups, values, estimator=estimator, scale_by_std=scale_by_std)
    by_node = {n: float(a[0]) for n, a in zip(nodes, node_adv, strict=True)}
    return [
        np.array([by_node[shape.node_of_turn(leaf, t)] for t in range(len(episode))])
        for leaf, episode in zip(leaves, rewards, strict=True)
    ]


def tree_counts(leaves: Sequence[Node]) -> tuple[int, int]:
    """``(nodes, leaves)`` of a step's trees, for the run log."""
    nodes = {leaf[:depth] for leaf in leaves for depth in range(2, len(leaf) + 1)}
    return len(nodes), len(leaves)
