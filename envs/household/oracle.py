"""The Household oracle: a planner that solves each task from what it reads.

It never looks at ``info["privileged"]`` or the env's state. It reads the task
and the receptacles from the first observation, keeps what it has seen with the
env's own command rules (`rules.py`: what each command does, what is in reach),
fills in what every ``go to`` / ``open`` showed, and uses the world's public
tables (where each kind of object is kept, which receptacles heat, cool and
clean, where lamps stand) to decide where to look first.
"""

from __future__ import annotations

import re
from typing import Any

from envgym.envs.household.rules import (
    HomeState,
    go_command,
    in_reach,
    listed_objects,
    move_command,
    open_command,
    parse_command,
    step_toward,
    take_command,
    tool_command,
    use_command,
    with_doors,
)
from envgym.envs.household.world import GOAL_TEXTS, LAMP_HOSTS, PLACES, TOOLS, kind_of

__all__ = ["HouseholdOracle", "parse_goal"]

#: The task texts as patterns: "put a hot {obj} in {place}." -> ^put a hot (?P<obj>\w+) ...
_GOALS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (
        re.compile(
            "^"
            + template.replace(".", r"\.")
            .replace("{obj}", r"(?P<obj>\w+)")
            .replace("{place}", r"(?P<place>\w+)")
            + "$"
        ),
        task_type,
    )
    for task_type, templates in GOAL_TEXTS.items()
    for template in templates
)
_LAMP_SPOTS = {kind: hosts for kind, hosts in LAMP_HOSTS.values()}


def parse_goal(text: str) -> tuple[str, str, str]:
    """(task type, object type, target receptacle type or lamp type) of a task text."""
    for pattern, task_type in _GOALS:
        match = pattern.match(text.strip())
        if match is not None:
            return task_type, match["obj"], match["place"]
    raise ValueError(f"not a Household task text: {text!r}")


class HouseholdOracle:
    """Explores likely receptacles first, remembers what it saw, then fetches,
    processes (heat / cool / clean / lamp) and delivers. Solves every generated
    task well within the default 50 turns."""

    name = "oracle"

    def __init__(self, env: Any = None) -> None:
        self.reset()

    def reset(self) -> None:
        self._task: tuple[str, str, str] | None = None
        self._recs: list[str] = []
        # The home as far as seen: contents only of the receptacles seen inside.
        self._known = HomeState({}, ())
        self._delivered: set[str] = set()
        self._target: str | None = None
        self._last = ""

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if "Your task is to: " in observation:
            self.reset()
            self._start(observation)
        else:
            self._update(observation)
        self._last = self._next()
        return self._last

    # ------------------------------------------------------------- memory
    def _start(self, observation: str) -> None:
        task_line = observation.rsplit("Your task is to: ", 1)[1].strip()
        self._task = parse_goal(task_line)
        self._recs = listed_objects(observation.split("\n\n")[1])
        self._known = HomeState({}, with_doors(self._recs))
        task_type, _, place = self._task
        if task_type != "look_at_obj_in_light":
            self._target = next(r for r in self._recs if kind_of(r) == place)

    def _update(self, feedback: str) -> None:
        if feedback.startswith("Nothing happens"):
            return
        command = parse_command(self._last)
        known = self._known
        known.do(command)
        verb, obj, rec = command
        if verb in ("go", "open") and in_reach(known, rec):
            known.contents[rec] = listed_objects(feedback)
        elif verb == "move":
            self._delivered.add(obj)

    # ------------------------------------------------------------ planning
    def _next(self) -> str:
        task_type, obj_type, place = self._task
        known = self._known
        held = known.held
        if task_type == "look_at_obj_in_light":
            if held is not None and kind_of(held) == obj_type:
                lamp = self._find(place, set())
                if lamp is None:
                    return self._explore(_LAMP_SPOTS[place])
                return step_toward(known, lamp[1], inside=False) or use_command(lamp[0])
            return self._fetch(obj_type)
        if held is None:
            return self._fetch(obj_type)
        if task_type in TOOLS:
            verb, kinds = TOOLS[task_type]
            if held not in known.processed_by(verb):
                tool = next(r for r in self._recs if kind_of(r) in kinds)
                return step_toward(known, tool, inside=False) or tool_command(verb, held, tool)
        return step_toward(known, self._target) or move_command(held, self._target)

    def _find(self, kind: str, skip: set[str]) -> tuple[str, str] | None:
        """A known (object, receptacle) of `kind`, not in `skip`; the current place first."""
        known = self._known
        for obj in known.contents.get(known.loc, []):
            if kind_of(obj) == kind and obj not in skip:
                return obj, known.loc
        for rec, items in known.contents.items():
            for obj in items:
                if kind_of(obj) == kind and obj not in skip and rec != self._target:
                    return obj, rec
        return None

    def _fetch(self, kind: str) -> str:
        found = self._find(kind, self._delivered)
        if found is None:
            return self._explore(PLACES.get(kind, ()))
        obj, rec = found
        return step_toward(self._known, rec) or take_command(obj, rec)

    def _explore(self, likely: tuple[str, ...]) -> str:
        known = self._known
        if known.loc is not None and not in_reach(known, known.loc):
            return open_command(known.loc)  # arrived at a closed one while exploring
        unseen = [r for r in self._recs if r not in known.contents]
        # Likely places first; among them open surfaces (one turn) before doors (two).
        unseen.sort(key=lambda r: (kind_of(r) not in likely, not in_reach(known, r)))
        return go_command(unseen[0]) if unseen else "look"
