"""Advantage estimators for multi-turn episodes: GRPO, RLOO, GiGPO and turn-level.

The trainer collects groups of episodes (every episode of one group plays the
same task from the same seed), keeps each turn's reward, and asks this module
for one advantage per turn; every token of a turn's reply is then weighted by
that turn's advantage. Everything here is plain numpy on plain lists, so a test
can write trajectories by hand and check the numbers with a pencil.

Definitions. An episode ``i`` has per-turn rewards ``r_0 .. r_{T-1}``; its
return is ``R_i = sum_t r_t``. "std" is the unbiased (ddof=1) standard
deviation, as TRL and verl take it (``torch.std``); ``eps`` keeps the division
finite when a group's values are all equal (the advantage is then 0).

``grpo``   DeepSeekMath (Shao et al. 2024, arXiv 2402.03300), outcome supervision:
           ``A_i = (R_i - mean_g R) / (std_g R + eps)``, or ``R_i - mean_g R`` with
           ``scale_by_std=False``; every turn of episode ``i`` gets ``A_i``.
``rloo``   Back to Basics (Ahmadian et al. 2024, arXiv 2402.14740): the baseline
           leaves the episode itself out, ``A_i = R_i - mean_{j in g, j != i} R_j``;
           never scaled by the std. Every turn gets ``A_i``.
``gigpo``  Group-in-Group Policy Optimization (Feng et al. 2025, arXiv 2505.10978):
           ``A = A^E + step_weight * A^S`` (the paper's Eq. 8, ``omega = 1``).
           ``A^E`` is the episode-relative advantage of Eq. 3, the ``grpo`` formula
           above with the same ``scale_by_std`` (the paper's ``F_norm`` is the std
           or 1). ``A^S`` is the step-relative advantage of Eqs. 5-7: the
           discounted return of turn ``t``, ``G_t = sum_{k>=t} gamma^(k-t) r_k``,
           is compared with the other turns taken in the same anchor state. Within
           one episode group ``g``, every turn whose ``state_key`` is ``s`` (not
           None) joins step group ``(g, s)``; a state an episode visits twice joins
           twice. ``A^S = (G_t - mean G) / (std G + eps)`` over the step group (or
           without the std). A step group of one turn, and a turn whose key is
           None, has nothing to be compared with: ``A^S = 0``, as in verl-agent.
           The paper uses ``gamma = 0.95``; pass it, the default here is 1.0.
``turn``   Turn-level credit assignment (Zeng et al. 2025, arXiv 2505.11821, MT-GRPO;
           also GTPO): each turn's discounted return ``G_t`` as above, normalised
           over all turns of all episodes of the group,
           ``A_t = (G_t - mean) / (std + eps)`` (or without the std). A reward
           earned mid-episode credits the turns before it, discounted by ``gamma``.
           MT-GRPO normalises its two-turn setting's turn and outcome rewards one
           turn position at a time; pooling discounted returns generalises it to
           any number of turns.

`turn_gae` is PPO's estimator (``trainers/ppo.py``) and needs no group: GAE over
one episode's turns against a critic's values (formula in its docstring).

A group of one episode (one turn in total for ``turn``) has no baseline and gets
advantage 0 everywhere, so `zero_variance_groups` lists it with the groups whose
episodes all scored alike: the trainer drops them, there is nothing to learn.
(verl's GRPO instead keeps a lone episode's raw return as its advantage.)
GiGPO's ``A^E`` takes one return per episode, as the paper's Eq. 3 writes it;
verl-agent by default weights each episode by its number of turns instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence

import numpy as np

__all__ = [
    "ESTIMATORS",
    "compute_advantages",
    "discounted_returns",
    "turn_gae",
    "zero_variance_groups",
]

#: The names `compute_advantages` takes as ``estimator``.
ESTIMATORS = ("grpo", "rloo", "gigpo", "turn")


def discounted_returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
    """``G_t = sum_{k>=t} gamma^(k-t) r_k`` for every turn ``t`` of one episode."""
    returns = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = float(rewards[t]) + gamma * running
        returns[t] = running
    return returns


def _group_relative(values: np.ndarray, scale_by_std: bool, eps: float) -> np.ndarray:
    """Each value minus the mean of all, over the std if asked; all 0 for fewer than two."""
    if len(values) < 2:
        return np.zeros(len(values), dtype=np.float64)
    centred = values - values.mean()
    if scale_by_std:
        centred = centred / (values.std(ddof=1) + eps)
    return centred


def _leave_one_out(values: np.ndarray) -> np.ndarray:
    """Each value minus the mean of the others; all 0 for fewer than two."""
    n = len(values)
    if n < 2:
        return np.zeros(n, dtype=np.float64)
    return values - (values.sum() - values) / (n - 1)


def _members_by_group(groups: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, group in enumerate(groups):
        members[group].append(index)
    return members


def _check_inputs(
    groups: Sequence[Hashable],
    rewards: Sequence[Sequence[float]],
    state_keys: Sequence[Sequence[str | None]] | None,
    estimator: str,
    gamma: float,
    eps: float,
) -> None:
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; pass one of {', '.join(ESTIMATORS)}")
    if len(groups) != len(rewards):
        raise ValueError(
            f"groups has {len(groups)} entries but rewards has {len(rewards)} episodes; "
            "pass one group id per episode"
        )
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma={gamma} is outside [0, 1]; pass a discount such as 0.95 or 1.0")
    if not eps > 0:
        # eps = 0 would turn a group of equal values into 0 / 0 = NaN.
        raise ValueError(f"eps={eps} must be positive; pass a small number such as 1e-6")
    for i, episode in enumerate(rewards):
        if len(episode) == 0:
            raise ValueError(
                f"episode {i} has no turns; pass at least one reward per episode "
                "(drop episodes that never reached the model)"
            )
        if not np.all(np.isfinite(np.asarray(episode, dtype=np.float64))):
            raise ValueError(f"episode {i} has a reward that is not a finite number: {episode}")
    if estimator == "gigpo" and state_keys is None:
        raise ValueError(
            "estimator 'gigpo' needs state_keys: pass each turn's info['state_key'] "
            "(None where the env gives none), one list per episode"
        )
    if state_keys is not None:
        if len(state_keys) != len(rewards):
            raise ValueError(
                f"state_keys has {len(state_keys)} episodes but rewards has {len(rewards)}; "
                "pass one list of keys per episode"
            )
        for i, (keys, episode) in enumerate(zip(state_keys, rewards, strict=True)):
            if len(keys) != len(episode):
                raise ValueError(
                    f"episode {i} has {len(episode)} rewards but {len(keys)} state keys; "
                    "pass one key per turn"
                )


def compute_advantages(
    groups: Sequence[int],
    rewards: Sequence[Sequence[float]],
    state_keys: Sequence[Sequence[str | None]] | None = None,
    *,
    estimator: str,
    gamma: float = 1.0,
    step_weight: float = 1.0,
    scale_by_std: bool = True,
    eps: float = 1e-6,
) -> list[np.ndarray]:
    """One float64 array of per-turn advantages for each episode (definitions: module docstring).

    ``groups[i]`` is episode ``i``'s group id (episodes of a group share a task),
    ``rewards[i]`` its per-turn rewards and ``state_keys[i]`` (needed by ``gigpo``)
    the ``info["state_key"]`` of the state each turn's reply was made in.
    ``gamma`` discounts per-turn returns for ``gigpo`` and ``turn``; ``grpo`` and
    ``rloo`` use the undiscounted episode return. ``step_weight`` is GiGPO's
    ``omega``. ``scale_by_std`` does not apply to ``rloo``.
    """
    _check_inputs(groups, rewards, state_keys, estimator, gamma, eps)
    members = _members_by_group(groups)
    returns = np.array([sum(float(r) for r in episode) for episode in rewards], dtype=np.float64)
    advantages = [np.zeros(len(episode), dtype=np.float64) for episode in rewards]

    if estimator in ("grpo", "rloo", "gigpo"):
        for indices in members.values():
            group_returns = returns[indices]
            if estimator == "rloo":
                episode_adv = _leave_one_out(group_returns)
            else:
                episode_adv = _group_relative(group_returns, scale_by_std, eps)
            for i, a in zip(indices, episode_adv, strict=True):
                advantages[i] += a

    if estimator in ("gigpo", "turn"):
        turn_returns = [discounted_returns(episode, gamma) for episode in rewards]
        for indices in members.values():
            if estimator == "turn":
                # Every turn of the group is one sample; the group's turns pooled.
                cells = [(i, t) for i in indices for t in range(len(rewards[i]))]
                pools = [cells]
            else:
                # Anchor states are compared only inside one episode group: the
                # same key under another task is another state.
                by_state: dict[str, list[tuple[int, int]]] = defaultdict(list)
                keys = state_keys if state_keys is not None else []
                for i in indices:
                    for t, key in enumerate(keys[i]):
                        if key is not None:
                            by_state[key].append((i, t))
                pools = list(by_state.values())
            weight = 1.0 if estimator == "turn" else step_weight
            for cells in pools:
                values = np.array([turn_returns[i][t] for i, t in cells], dtype=np.float64)
                relative = _group_relative(values, scale_by_std, eps)
                for (i, t), a in zip(cells, relative, strict=True):
                    advantages[i][t] += weight * a

    return advantages


def zero_variance_groups(
    groups: Sequence[int], advantages: Sequence[np.ndarray], atol: float = 1e-9
) -> set[int]:
    """Group ids in which every turn advantage of every episode is within ``atol`` of 0.

    Such a group moves no weight (all its episodes scored alike, or it had no
    baseline), so the trainer drops it and counts it in ``update/dropped_groups``.
    """
    if len(groups) != len(advantages):
        raise ValueError(
            f"groups has {len(groups)} entries but advantages has {len(advantages)} episodes; "
            "pass the list compute_advantages returned with the groups given to it"
        )
    flat: set[int] = set()
    for group, indices in _members_by_group(groups).items():
        if all(np.all(np.abs(np.asarray(advantages[i])) <= atol) for i in indices):
            flat.add(group)
    return flat


def turn_gae(
    rewards: Sequence[float],
    values: Sequence[float],
    *,
    gamma: float,
    lam: float,
    last_value: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalized Advantage Estimation over one episode's turns (Turn-PPO).

    A turn is a step: ``rewards[t]`` is the env's reward for turn ``t``'s reply
    and ``values[t]`` the critic's ``V(s_t)``, the value of the conversation just
    before that reply. With ``V(s_T) = last_value`` after the last turn
    (Schulman et al. 2016, arXiv 1506.02438)::

        delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)
        A_t     = delta_t + gamma * lam * A_{t+1}      (A_T = 0)
        R_t     = A_t + V(s_t)                         (the critic's target)

    ``lam = 1`` gives ``A_t = G_t + gamma^(T-t) * last_value - V(s_t)``, the
    discounted return minus the value; ``lam = 0`` gives the one-step TD error
    ``delta_t``. Returns ``(advantages, returns)``, float64 arrays of ``len(rewards)``.

    ``last_value`` is how the episode bootstraps. An episode the env
    *terminated* (goal reached, hole, game over) is worth nothing afterwards:
    0. An episode *truncated* by the env's turn limit is also 0 in envgym's
    trainers: the limit is part of the task (observations count the turns
    left, evaluation plays the same limit), so its return really ends there
    (Pardo et al. 2018, "Time Limits in Reinforcement Learning", arXiv 1712.00378).
    An episode the trainer cut because its next prompt would not fit the
    model's context (``Episode.context_full``) did not end in the task: pass
    the critic's value of that unanswered prompt, ``V(s_T)``, and the turns
    before it are credited with what the rest of the episode was expected to bring.
    """
    if len(rewards) != len(values):
        raise ValueError(
            f"rewards has {len(rewards)} turns but values has {len(values)}; "
            "pass one value per turn (the state before each reply)"
        )
    if not 0.0 <= gamma <= 1.0 or not 0.0 <= lam <= 1.0:
        raise ValueError(
            f"gamma={gamma} and lam={lam} must both be in [0, 1]; e.g. gamma 1.0, lam 0.95"
        )
    r = np.asarray(rewards, dtype=np.float64)
    v = np.append(np.asarray(values, dtype=np.float64), float(last_value))
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(v))):
        raise ValueError(f"rewards {list(r)} and values {list(v)} must be finite numbers")
    advantages = np.zeros(len(r), dtype=np.float64)
    running = 0.0
    for t in reversed(range(len(r))):
        delta = r[t] + gamma * v[t + 1] - v[t]
        running = delta + gamma * lam * running
        advantages[t] = running
    return advantages, advantages + v[:-1]
