"""The Household command rules: the command grammar, what each command does to
the home, which commands are admissible, when the goal is met, and the feedback
text each command reads.

The env applies these rules to the true home; the oracle applies the same rules
to what it has seen, and the planner behind ``info["privileged"]["solution"]``
walks a home with them. Everything here works on names ("apple 1", "fridge 1"),
the way the agent writes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from envgym.envs.household.world import LAMP_TYPES, OPENABLE, TOOL_VERB, TOOLS, kind_of

__all__ = [
    "NOTHING",
    "PROCESS_VERBS",
    "READ_ONLY_VERBS",
    "VERBS",
    "Command",
    "Home",
    "HomeState",
    "a_list",
    "admissible",
    "canonical_command",
    "close_command",
    "describe",
    "examine_command",
    "feedback",
    "go_command",
    "goal_met",
    "in_reach",
    "listed_objects",
    "move_command",
    "object_text",
    "open_command",
    "parse_command",
    "room_view",
    "step_toward",
    "take_command",
    "tool_command",
    "use_command",
    "with_doors",
]

#: The feedback to a command that is not admissible now.
NOTHING = "Nothing happens."
#: The first word of every command in the grammar.
VERBS = frozenset(
    {"go", "open", "close", "take", "move", "put", "heat", "cool", "clean", "use", "examine",
     "look", "inventory"}
)  # fmt: skip
#: What tools do to an object: "heat", "cool", "clean".
PROCESS_VERBS = frozenset(verb for verb, _ in TOOLS.values())
#: Commands that change nothing.
READ_ONLY_VERBS = frozenset({"look", "inventory", "examine"})
_PUT = re.compile(r"^put (.+?) (?:in/on|in|on|into|onto) (.+)$")
_LISTED = re.compile(r"\ba ([a-z]+ \d+)")


# ------------------------------------------------------------------ grammar
def go_command(rec: str) -> str:
    return "go to " + rec


def open_command(rec: str) -> str:
    return "open " + rec


def close_command(rec: str) -> str:
    return "close " + rec


def take_command(obj: str, rec: str) -> str:
    return f"take {obj} from {rec}"


def move_command(obj: str, rec: str) -> str:
    return f"move {obj} to {rec}"


def tool_command(verb: str, obj: str, rec: str) -> str:
    """``heat O with R``, ``cool O with R`` or ``clean O with R``."""
    return f"{verb} {obj} with {rec}"


def use_command(lamp: str) -> str:
    return "use " + lamp


def examine_command(thing: str) -> str:
    return "examine " + thing


#: A command's parts: (verb, object, receptacle), None where it names none.
#: ``examine X`` puts X (a receptacle or the held object) in the receptacle's
#: place; ``use L`` puts the lamp in the object's.
Command = tuple[str, str | None, str | None]


def canonical_command(text: str) -> str:
    """A command as the grammar spells it: lower case, single spaces, no final
    period, and ``put O in R`` / ``put O on R`` written ``move O to R``."""
    cmd = " ".join(text.lower().split())
    if cmd.endswith("."):
        cmd = cmd[:-1].rstrip()
    if cmd.startswith("put "):
        match = _PUT.match(cmd)
        if match is not None:
            cmd = move_command(match.group(1), match.group(2))
    return cmd


def parse_command(cmd: str) -> Command:
    """The parts of a canonical command (the inverse of the ``*_command`` builders)."""
    verb, _, rest = cmd.partition(" ")
    if verb == "go":
        return verb, None, rest[3:]
    if verb == "take":
        obj, _, rec = rest.partition(" from ")
    elif verb == "move":
        obj, _, rec = rest.partition(" to ")
    elif verb in PROCESS_VERBS:
        obj, _, rec = rest.partition(" with ")
    elif verb == "use":
        return verb, rest, None
    elif rest:  # open, close, examine
        return verb, None, rest
    else:  # look, inventory
        return verb, None, None
    return verb, obj, rec


# -------------------------------------------------------------------- state
@dataclass(frozen=True, eq=False)
class Home:
    """Everything about a task that never changes during the episode."""

    task_id: str
    task_type: str
    goal: str
    obj_type: str
    target_type: str | None
    lamp_type: str | None
    #: receptacle names in the order the home lists them
    rec_names: tuple[str, ...]
    #: object name -> its type, in the order the objects were placed
    obj_kinds: dict[str, str]
    #: receptacle name -> the objects in it at the start
    contents: dict[str, tuple[str, ...]]
    #: the receptacles with a door (see `with_doors`)
    doors: tuple[str, ...]
    target_recs: tuple[str, ...]
    #: where the agent stands (None: the middle of the room) -> its "go to" commands
    go_actions: dict[str | None, tuple[str, ...]]
    intro: str
    solution: tuple[str, ...]

    def __deepcopy__(self, memo: dict[int, Any]) -> Home:
        return self  # immutable: snapshots share it


def with_doors(recs: Iterable[str]) -> tuple[str, ...]:
    """The receptacles among `recs` that have a door (their type is in ``OPENABLE``)."""
    return tuple(rec for rec in recs if kind_of(rec) in OPENABLE)


class HomeState:
    """What commands change: where the agent stands, what it holds, which doors
    are open, what lies in each receptacle, and which objects have been heated,
    cooled, cleaned or (lamps) turned on."""

    def __init__(self, contents: dict[str, list[str]], doors: Iterable[str]) -> None:
        self.loc: str | None = None
        self.held: str | None = None
        self.contents = contents
        #: receptacle with a door -> whether it is open; every door starts shut
        self.doors = dict.fromkeys(doors, False)
        self.hot: set[str] = set()
        self.cool: set[str] = set()
        self.clean: set[str] = set()
        self.lit: set[str] = set()

    @classmethod
    def at_start(cls, home: Home) -> HomeState:
        """The state `home` starts in: in the middle of the room, empty-handed."""
        contents = {rec: list(items) for rec, items in home.contents.items()}
        return cls(contents, home.doors)

    def processed_by(self, verb: str) -> set[str]:
        """The objects that `verb` ("heat", "cool" or "clean") has been done to."""
        return self.hot if verb == "heat" else self.cool if verb == "cool" else self.clean

    def do(self, command: Command) -> None:
        """Apply an admissible command (see `admissible`)."""
        verb, obj, rec = command
        if verb == "go":
            self.loc = rec
        elif verb == "take":
            self.contents[rec].remove(obj)
            self.held = obj
        elif verb == "move":
            self.contents[rec].append(obj)
            self.held = None
        elif verb == "open":
            self.doors[rec] = True
        elif verb == "close":
            self.doors[rec] = False
        elif verb in PROCESS_VERBS:
            self.processed_by(verb).add(obj)
        elif verb == "use":
            if obj in self.lit:
                self.lit.remove(obj)
            else:
                self.lit.add(obj)
        # look, inventory and examine change nothing


# -------------------------------------------------------------------- rules
def in_reach(state: HomeState, rec: str) -> bool:
    """Whether `rec`'s contents can be taken from and added to once there: it
    has no door, or its door is open."""
    return state.doors.get(rec, True)


def step_toward(state: HomeState, rec: str, inside: bool = True) -> str | None:
    """The next command toward standing at `rec` (and with `inside`, having its
    contents in reach); None when that is so already."""
    if state.loc != rec:
        return go_command(rec)
    if inside and not in_reach(state, rec):
        return open_command(rec)
    return None


def admissible(home: Home, state: HomeState) -> list[str]:
    """Every command that does something now, in ALFWorld's order: going
    elsewhere, the receptacle's door, examining, the objects there, the held
    object, then inventory and look."""
    loc, held = state.loc, state.held
    acts = list(home.go_actions[loc])
    if loc is not None:
        door = state.doors.get(loc)
        if door is not None:
            acts.append(close_command(loc) if door else open_command(loc))
        acts.append(examine_command(loc))
        reachable = in_reach(state, loc)
        kinds = home.obj_kinds
        for obj in state.contents[loc]:
            if kinds[obj] in LAMP_TYPES:  # lamps stay where they stand
                acts.append(use_command(obj))
            elif reachable and held is None:
                acts.append(take_command(obj, loc))
        if held is not None:
            if reachable:
                acts.append(move_command(held, loc))
            verb = TOOL_VERB.get(kind_of(loc))
            if verb is not None:
                acts.append(tool_command(verb, held, loc))
    if held is not None:
        acts.append(examine_command(held))
    acts.append("inventory")
    acts.append("look")
    return acts


def goal_met(home: Home, state: HomeState) -> bool:
    """ALFWorld's check: an object of the asked type (heated / cooled / cleaned
    where asked) lies in a receptacle of the asked type, two for pick-two; for
    look-at, one is held at a receptacle where a lamp of the asked type is on."""
    kinds, obj_type = home.obj_kinds, home.obj_type
    if home.task_type == "look_at_obj_in_light":
        held, loc = state.held, state.loc
        if held is None or loc is None or kinds[held] != obj_type:
            return False
        lamp_type, lit = home.lamp_type, state.lit
        return any(kinds[o] == lamp_type and o in lit for o in state.contents[loc])
    need = 2 if home.task_type == "pick_two_and_place" else 1
    tool = TOOLS.get(home.task_type)
    flags = state.processed_by(tool[0]) if tool is not None else None
    for rec in home.target_recs:
        count = 0
        for o in state.contents[rec]:
            if kinds[o] == obj_type and (flags is None or o in flags):
                count += 1
        if count >= need:
            return True
    return False


# ----------------------------------------------------------------- feedback
def a_list(names: list[str] | tuple[str, ...]) -> str:
    """ALFWorld's list style: 'a apple 1, a mug 2, and a egg 1'."""
    if not names:
        return "nothing"
    if len(names) == 1:
        return "a " + names[0]
    return ", ".join("a " + n for n in names[:-1]) + ", and a " + names[-1]


def room_view(recs: tuple[str, ...]) -> str:
    """What the agent sees from the middle of the room (at the start, and on ``look``)."""
    return f"You are in the middle of a room. Looking quickly around you, you see {a_list(recs)}."


def listed_objects(text: str) -> list[str]:
    """The objects a feedback line lists after "you see" (the inverse of `a_list`)."""
    _, found, rest = text.partition("you see ")
    return _LISTED.findall(rest) if found else []


def describe(state: HomeState, rec: str) -> str:
    """What the agent sees of `rec` when it arrives, opens or examines it."""
    door = state.doors.get(rec)
    if door is not None:
        if not door:
            return f"The {rec} is closed."
        return f"The {rec} is open. In it, you see {a_list(state.contents[rec])}."
    return f"On the {rec}, you see {a_list(state.contents[rec])}."


def feedback(home: Home, state: HomeState, command: Command) -> str:
    """The text for an admissible command, once `HomeState.do` has applied it."""
    verb, obj, rec = command
    if verb == "go":
        return f"You arrive at {rec}. " + describe(state, rec)
    if verb == "take":
        return f"You pick up the {obj} from the {rec}."
    if verb == "move":
        return f"You move the {obj} to the {rec}."
    if verb == "open":
        return f"You open the {rec}. " + describe(state, rec)
    if verb == "close":
        return f"You close the {rec}."
    if verb in PROCESS_VERBS:
        return f"You {verb} the {obj} using the {rec}."
    if verb == "use":
        return f"You turn {'on' if obj in state.lit else 'off'} the {obj}."
    if verb == "look":
        if state.loc is None:
            return room_view(home.rec_names)
        return f"You are facing the {state.loc}. Next to it, you see nothing."
    if verb == "inventory":
        if state.held is None:
            return "You are not carrying anything."
        return f"You are carrying: a {state.held}."
    if rec in state.contents:  # examine a receptacle
        return describe(state, rec)
    return f"There's nothing special about {rec}."  # examine the held object


def object_text(state: HomeState, obj: str) -> str:
    """An object's name with what has been done to it: "mug 1 hot clean"."""
    text = obj
    if obj in state.hot:
        text += " hot"
    if obj in state.cool:
        text += " cool"
    if obj in state.clean:
        text += " clean"
    if obj in state.lit:
        text += " on"
    return text
