"""The Household oracle: a planner that solves each task from what it reads.

It never looks at ``info["privileged"]`` or the env's state. It reads the task
and the receptacles from the first observation, remembers what every
``go to`` / ``open`` showed, and uses the world's public rules (where each kind
of object is kept, which receptacles heat, cool and clean, where lamps stand)
to decide where to look first.
"""

from __future__ import annotations

import re
from typing import Any

from envgym.envs.household.household import LAMP_HOSTS, OPENABLE, PLACES, TOOLS

__all__ = ["HouseholdOracle", "parse_goal"]

_GOALS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), task_type)
    for pattern, task_type in (
        (r"^put two (\w+) in (\w+)\.$", "pick_two_and_place"),
        (r"^find two (\w+) and put them in (\w+)\.$", "pick_two_and_place"),
        (r"^look at (\w+) under the (\w+)\.$", "look_at_obj_in_light"),
        (r"^examine the (\w+) with the (\w+)\.$", "look_at_obj_in_light"),
        (r"^put a clean (\w+) in (\w+)\.$", "pick_clean_then_place"),
        (r"^clean some (\w+) and put it in (\w+)\.$", "pick_clean_then_place"),
        (r"^put a hot (\w+) in (\w+)\.$", "pick_heat_then_place"),
        (r"^heat some (\w+) and put it in (\w+)\.$", "pick_heat_then_place"),
        (r"^put a cool (\w+) in (\w+)\.$", "pick_cool_then_place"),
        (r"^cool some (\w+) and put it in (\w+)\.$", "pick_cool_then_place"),
        (r"^put a (\w+) in (\w+)\.$", "pick_and_place"),
        (r"^put some (\w+) on (\w+)\.$", "pick_and_place"),
    )
)
_ITEM = re.compile(r"\ba ([a-z]+ \d+)")
_LAMP_SPOTS = {kind: hosts for kind, hosts in LAMP_HOSTS.values()}


def parse_goal(text: str) -> tuple[str, str, str]:
    """(task type, object type, target receptacle type or lamp type) of a task text."""
    for pattern, task_type in _GOALS:
        match = pattern.match(text.strip())
        if match is not None:
            return task_type, match.group(1), match.group(2)
    raise ValueError(f"not a Household task text: {text!r}")


def _kind(name: str) -> str:
    return name.rsplit(" ", 1)[0]


def _seen(text: str) -> list[str]:
    """The objects listed after "you see" in a feedback line."""
    _, found, rest = text.partition("you see ")
    return _ITEM.findall(rest) if found else []


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
        self._contents: dict[str, list[str]] = {}  # receptacles seen inside
        self._closed: set[str] = set()
        self._loc: str | None = None
        self._held: str | None = None
        self._processed: set[str] = set()
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
        self._recs = _seen(observation.split("\n\n")[1])
        task_type, _, place = self._task
        if task_type != "look_at_obj_in_light":
            self._target = next(r for r in self._recs if _kind(r) == place)

    def _update(self, feedback: str) -> None:
        if feedback.startswith("Nothing happens"):
            return
        verb, _, rest = self._last.partition(" ")
        if verb == "go":
            self._loc = rest[3:]
            self._read(self._loc, feedback)
        elif verb == "open":
            self._closed.discard(rest)
            self._read(rest, feedback)
        elif verb == "take":
            obj, _, rec = rest.partition(" from ")
            self._contents[rec].remove(obj)
            self._held = obj
        elif verb == "move":
            obj, _, rec = rest.partition(" to ")
            self._contents.setdefault(rec, []).append(obj)
            self._delivered.add(obj)
            self._held = None
        elif verb in ("heat", "cool", "clean"):
            self._processed.add(rest.partition(" with ")[0])

    def _read(self, rec: str, feedback: str) -> None:
        if f"The {rec} is closed." in feedback:
            self._closed.add(rec)
        else:
            self._contents[rec] = _seen(feedback)

    # ------------------------------------------------------------ planning
    def _next(self) -> str:
        task_type, obj_type, place = self._task
        held = self._held
        if task_type == "look_at_obj_in_light":
            if held is not None and _kind(held) == obj_type:
                lamp = self._find(place, set())
                if lamp is None:
                    return self._explore(_LAMP_SPOTS[place])
                if self._loc != lamp[1]:
                    return "go to " + lamp[1]
                return "use " + lamp[0]
            return self._fetch(obj_type)
        if held is None:
            return self._fetch(obj_type)
        if task_type in TOOLS and held not in self._processed:
            verb, kinds = TOOLS[task_type]
            tool = next(r for r in self._recs if _kind(r) in kinds)
            if self._loc != tool:
                return "go to " + tool
            return f"{verb} {held} with {tool}"
        return self._visit(self._target) or f"move {held} to {self._target}"

    def _find(self, kind: str, skip: set[str]) -> tuple[str, str] | None:
        """A known (object, receptacle) of `kind`, not in `skip`; the current place first."""
        here = self._contents.get(self._loc or "", [])
        for obj in here:
            if _kind(obj) == kind and obj not in skip:
                return obj, self._loc
        for rec, items in self._contents.items():
            for obj in items:
                if _kind(obj) == kind and obj not in skip and rec != self._target:
                    return obj, rec
        return None

    def _fetch(self, kind: str) -> str:
        found = self._find(kind, self._delivered)
        if found is None:
            return self._explore(PLACES.get(kind, ()))
        obj, rec = found
        return self._visit(rec) or f"take {obj} from {rec}"

    def _visit(self, rec: str) -> str | None:
        """The next step to stand at `rec` with it open, or None when there."""
        if self._loc != rec:
            return "go to " + rec
        if rec in self._closed:
            return "open " + rec
        return None

    def _explore(self, likely: tuple[str, ...]) -> str:
        if self._loc in self._closed:  # arrived at a closed one while exploring
            return "open " + self._loc
        unseen = [r for r in self._recs if r not in self._contents]
        # Likely places first; among them open surfaces (one turn) before doors (two).
        unseen.sort(key=lambda r: (_kind(r) not in likely, _kind(r) in OPENABLE))
        return "go to " + unseen[0] if unseen else "look"
