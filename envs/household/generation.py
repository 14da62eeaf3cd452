"""Household home generation: task ids, and the home, its objects, the task and
a shortest plan built from a task id's seed.

A task id (``TASKTYPE-rRECEPTACLES-dDISTRACTORS-SEED``) names a task whole: the
home is drawn from the id's own seed, so the same id gives the same home in any
process and at any difficulty.
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import permutations
from typing import Any

import numpy as np

from envgym.arguments import MAX_TASK_SEED, check_int, match_task_id, task_id_parts
from envgym.envs.household.rules import (
    Home,
    HomeState,
    go_command,
    move_command,
    parse_command,
    room_view,
    step_toward,
    take_command,
    tool_command,
    use_command,
    with_doors,
)
from envgym.envs.household.world import (
    AREAS,
    GOAL_TEXTS,
    LAMP_HOSTS,
    OBJECTS_FOR_TASK,
    PLACES,
    TASK_TYPES,
    TOOL_VERB,
    TOOLS,
    kind_of,
)

__all__ = [
    "MAX_DISTRACTORS",
    "MAX_RECEPTACLES",
    "MIN_RECEPTACLES",
    "generate_home",
    "task_id_of",
    "parse_task_id",
]

MIN_RECEPTACLES, MAX_RECEPTACLES = 6, 60
MAX_DISTRACTORS = 80
WELCOME = "-= Welcome to TextWorld, ALFRED! =-"

_TASK_ID = re.compile(
    rf"^({'|'.join(map(re.escape, TASK_TYPES))})-r(\d{{1,4}})-d(\d{{1,4}})-(\d{{1,20}})$"
)
_OBJECT_TYPES = tuple(sorted(PLACES))
#: Receptacles a state task never names as its target (the tools themselves).
_NOT_TARGETS = {
    "pick_heat_then_place": ("microwave", "fridge"),
    "pick_cool_then_place": ("microwave", "fridge"),
    "pick_clean_then_place": ("sinkbasin", "bathtubbasin"),
}


def task_id_of(task_type: str, n_recs: int, n_distractors: int, seed: int) -> str:
    """The id that `parse_task_id` reads back and `generate_home` builds from."""
    return f"{task_type}-r{n_recs}-d{n_distractors}-{seed}"


def parse_task_id(task_id: Any) -> tuple[str, int, int, int]:
    """(task type, receptacles, distractors, seed) of a task id; a ValueError
    that says what a task id looks like when it is none this env makes."""
    match = match_task_id(
        task_id,
        _TASK_ID,
        "a Household task id",
        "e.g. 'pick_heat_then_place-r20-d15-123456' "
        f"(TASKTYPE-rRECEPTACLES-dDISTRACTORS-SEED, TASKTYPE one of {', '.join(TASK_TYPES)})",
    )
    task_type = match.group(1)
    n_recs, n_distractors, seed = (int(g) for g in match.groups()[1:])
    with task_id_parts(task_id, "names no task this env makes"):
        check_int(n_recs, "its receptacle count", MIN_RECEPTACLES, MAX_RECEPTACLES)
        check_int(n_distractors, "its distractor count", 0, MAX_DISTRACTORS)
        check_int(seed, "its seed", 0, MAX_TASK_SEED)
    return task_type, n_recs, n_distractors, seed


def generate_home(task_type: str, n_recs: int, n_distractors: int, seed: int) -> Home:
    """Build the home and task for one task id, from its own generator."""
    rng = np.random.default_rng(seed)

    def pick(seq: list[Any] | tuple[Any, ...]) -> Any:
        return seq[int(rng.integers(len(seq)))]

    # Areas: the one the task needs first, then others for larger homes.
    if task_type in ("pick_heat_then_place", "pick_cool_then_place"):
        first = "kitchen"
    elif task_type == "pick_clean_then_place":
        first = pick(("kitchen", "bathroom"))
    elif task_type == "look_at_obj_in_light":
        first = pick(("bedroom", "livingroom"))
    else:
        first = pick(tuple(AREAS))
    others = [a for a in AREAS if a != first]
    order = [first] + [others[i] for i in rng.permutation(len(others))]
    n_areas = 1 if n_recs <= 14 else 2 if n_recs <= 24 else 3
    areas = order[:n_areas]
    counts: dict[str, int] = {}
    caps: dict[str, int] = {}

    def add_area(area: str) -> None:
        for rtype, low, high in AREAS[area]:
            counts[rtype] = counts.get(rtype, 0) + low
            caps[rtype] = caps.get(rtype, 0) + high

    for area in areas:
        add_area(area)
    while sum(counts.values()) < n_recs:
        open_slots = [t for t in caps if counts[t] < caps[t]]
        if not open_slots:
            areas.append(order[len(areas)])
            add_area(areas[-1])
            continue
        counts[pick(open_slots)] += 1
    rec_list = [f"{t} {i}" for t in counts for i in range(1, counts[t] + 1)]
    rec_names = tuple(rec_list[i] for i in rng.permutation(len(rec_list)))
    by_type: dict[str, list[str]] = {}
    for rec in rec_names:
        by_type.setdefault(kind_of(rec), []).append(rec)

    # The goal: an object type, and a target type it plausibly goes to.
    spots_of = {t: [p for p in PLACES[t] if p in by_type] for t in _OBJECT_TYPES}
    present = [t for t in _OBJECT_TYPES if spots_of[t]]
    wanted = OBJECTS_FOR_TASK.get(task_type)
    choices: list[tuple[str, str | None]] = []
    for obj in present:
        if wanted is not None and obj not in wanted:
            continue
        spots = spots_of[obj]
        if task_type == "look_at_obj_in_light":
            choices.append((obj, None))
            continue
        if len(spots) < 2:  # it must be able to start somewhere other than the target
            continue
        for target in spots:
            if target not in _NOT_TARGETS.get(task_type, ()):
                choices.append((obj, target))
    if not choices:  # the area tables always offer one; guard against edits to them
        raise RuntimeError(f"no {task_type} task fits this home (seed {seed})")
    obj_type, target_type = pick(choices)
    # Lamps: one in the look-at task's area, maybe one in another lamp area.
    lamp_type = None
    lamps: list[tuple[str, str]] = []
    for area in areas:
        if area not in LAMP_HOSTS:
            continue
        kind, hosts = LAMP_HOSTS[area]
        needed = task_type == "look_at_obj_in_light" and area == first
        if needed or rng.random() < 0.5:
            host_types = [h for h in hosts if h in by_type]
            lamps.append((kind, pick(by_type[pick(host_types)])))
            if needed:
                lamp_type = kind

    obj_kinds: dict[str, str] = {}
    contents: dict[str, list[str]] = {rec: [] for rec in rec_names}
    numbers: dict[str, int] = {}

    def place(kind: str, rec: str) -> None:
        numbers[kind] = numbers.get(kind, 0) + 1
        name = f"{kind} {numbers[kind]}"
        contents[rec].append(name)
        obj_kinds[name] = kind

    for kind, host in lamps:
        place(kind, host)
    starts = [p for p in PLACES[obj_type] if p in by_type and p != target_type]
    n_goal = (
        int(rng.integers(2, 4)) if task_type == "pick_two_and_place" else int(rng.integers(1, 3))
    )
    for _ in range(n_goal):
        place(obj_type, pick(by_type[pick(starts)]))
    distractor_types = [t for t in present if t != obj_type]
    for _ in range(n_distractors):
        kind = pick(distractor_types)
        place(kind, pick(by_type[pick(spots_of[kind])]))

    goal = _goal_text(task_type, obj_type, target_type, lamp_type, rng)
    intro = f"{WELCOME}\n\n{room_view(rec_names)}\n\nYour task is to: {goal}"
    go_all = tuple(go_command(rec) for rec in rec_names)
    go_actions: dict[str | None, tuple[str, ...]] = {None: go_all}
    for r, rec in enumerate(rec_names):
        go_actions[rec] = go_all[:r] + go_all[r + 1 :]
    home = Home(
        task_id=task_id_of(task_type, n_recs, n_distractors, seed),
        task_type=task_type,
        goal=goal,
        obj_type=obj_type,
        target_type=target_type,
        lamp_type=lamp_type,
        rec_names=rec_names,
        obj_kinds=obj_kinds,
        contents={rec: tuple(items) for rec, items in contents.items()},
        doors=with_doors(rec_names),
        target_recs=tuple(by_type.get(target_type, ())) if target_type else (),
        go_actions=go_actions,
        intro=intro,
        solution=(),
    )
    return replace(home, solution=tuple(_shortest_plan(home)))


def _goal_text(
    task_type: str, obj: str, target: str | None, lamp: str | None, rng: np.random.Generator
) -> str:
    first = rng.random() < 0.5
    template = GOAL_TEXTS[task_type][0 if first else 1]
    return template.format(obj=obj, place=lamp if target is None else target)


def _shortest_plan(home: Home) -> list[str]:
    """A shortest command list that solves the task from the start, with full
    knowledge of the home (each "go to" is one turn, so only the choice of
    instances matters: try them all)."""
    obj_loc = {obj: rec for rec, items in home.contents.items() for obj in items}
    goal_objs = [obj for obj, kind in home.obj_kinds.items() if kind == home.obj_type]
    look_at = home.task_type == "look_at_obj_in_light"

    def build(sequence: tuple[str, ...], target: str | None, tool: str | None) -> list[str]:
        steps: list[str] = []
        # Only where the agent stands and which doors are open matter to the route.
        walker = HomeState({}, home.doors)

        def walk(rec: str, inside: bool) -> None:
            while (step := step_toward(walker, rec, inside)) is not None:
                steps.append(step)
                walker.do(parse_command(step))

        for obj in sequence:
            walk(obj_loc[obj], inside=True)
            steps.append(take_command(obj, obj_loc[obj]))
            if look_at:
                walk(obj_loc[tool], inside=False)
                steps.append(use_command(tool))
                continue
            if tool is not None:
                walk(tool, inside=False)
                steps.append(tool_command(TOOL_VERB[kind_of(tool)], obj, tool))
            walk(target, inside=True)
            steps.append(move_command(obj, target))
        return steps

    if look_at:
        lamps = [obj for obj, kind in home.obj_kinds.items() if kind == home.lamp_type]
        options = [build((obj,), None, lamp) for obj in goal_objs for lamp in lamps]
    else:
        size = 2 if home.task_type == "pick_two_and_place" else 1
        tools: list[str | None] = [None]
        if home.task_type in TOOLS:
            kinds = TOOLS[home.task_type][1]
            tools = [rec for rec in home.rec_names if kind_of(rec) in kinds]
        options = [
            build(seq, target, tool)
            for seq in permutations(goal_objs, size)
            for target in home.target_recs
            for tool in tools
        ]
    return min(options, key=len)
