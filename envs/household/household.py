"""envgym/Household-v0: ALFWorld-style household tasks in procedural homes.

One env, one file. The world tables (which receptacles a home has, where each
kind of object may lie, what can be heated, cooled or cleaned) are module
constants: they are the documented rules of the world, and the oracle reads
them the way a person brings common sense to a kitchen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import permutations
from typing import Any, ClassVar

import numpy as np

from envgym.core import MAX_TASK_SEED, TextEnv, Turn, check_int, short_repr
from envgym.parsing import parse_tag, strip_think

__all__ = [
    "AREAS",
    "COOLABLE",
    "CLEANABLE",
    "DIFFICULTY_PRESETS",
    "HEATABLE",
    "HouseholdEnv",
    "LAMP_HOSTS",
    "LOOKABLE",
    "OPENABLE",
    "PLACES",
    "TASK_TYPES",
    "TOOLS",
]

TASK_TYPES = (
    "pick_and_place",
    "pick_two_and_place",
    "look_at_obj_in_light",
    "pick_clean_then_place",
    "pick_heat_then_place",
    "pick_cool_then_place",
)
#: difficulty -> (receptacles, (min, max) distractor objects, task types)
DIFFICULTY_PRESETS: dict[str, tuple[int, tuple[int, int], tuple[str, ...]]] = {
    "easy": (12, (6, 10), ("pick_and_place", "look_at_obj_in_light")),
    "medium": (
        20,
        (12, 18),
        (
            "pick_and_place",
            "look_at_obj_in_light",
            "pick_clean_then_place",
            "pick_heat_then_place",
            "pick_cool_then_place",
        ),
    ),
    "hard": (30, (20, 30), TASK_TYPES),
}
MIN_RECEPTACLES, MAX_RECEPTACLES = 6, 60
MAX_DISTRACTORS = 80

#: area -> (receptacle type, minimum, maximum) in that part of the home.
AREAS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "kitchen": (
        ("countertop", 1, 3),
        ("cabinet", 1, 8),
        ("drawer", 0, 6),
        ("fridge", 1, 1),
        ("microwave", 1, 1),
        ("sinkbasin", 1, 1),
        ("stoveburner", 0, 4),
        ("coffeemachine", 0, 1),
        ("toaster", 0, 1),
        ("diningtable", 0, 1),
        ("garbagecan", 0, 1),
        ("shelf", 0, 3),
    ),
    "livingroom": (
        ("sofa", 1, 1),
        ("sidetable", 1, 2),
        ("coffeetable", 0, 1),
        ("armchair", 0, 2),
        ("tvstand", 0, 1),
        ("shelf", 0, 4),
        ("drawer", 0, 4),
        ("cabinet", 0, 3),
        ("diningtable", 0, 1),
        ("garbagecan", 0, 1),
        ("dresser", 0, 1),
        ("safe", 0, 1),
    ),
    "bedroom": (
        ("bed", 1, 1),
        ("sidetable", 1, 2),
        ("desk", 0, 1),
        ("dresser", 0, 1),
        ("drawer", 0, 6),
        ("shelf", 0, 4),
        ("safe", 0, 1),
        ("garbagecan", 0, 1),
        ("laundryhamper", 0, 1),
        ("armchair", 0, 1),
    ),
    "bathroom": (
        ("toilet", 1, 1),
        ("sinkbasin", 1, 2),
        ("bathtubbasin", 0, 1),
        ("countertop", 0, 1),
        ("cabinet", 1, 4),
        ("drawer", 0, 4),
        ("towelholder", 0, 1),
        ("handtowelholder", 0, 1),
        ("toiletpaperhanger", 0, 1),
        ("garbagecan", 0, 1),
        ("shelf", 0, 2),
    ),
}
#: Receptacles with a door or lid; they start closed and hide their contents.
OPENABLE = frozenset({"fridge", "microwave", "cabinet", "drawer", "safe"})
#: task type -> (verb, receptacle types that do it)
TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pick_heat_then_place": ("heat", ("microwave",)),
    "pick_cool_then_place": ("cool", ("fridge",)),
    "pick_clean_then_place": ("clean", ("sinkbasin", "bathtubbasin")),
}
_TOOL_VERB = {"microwave": "heat", "fridge": "cool", "sinkbasin": "clean", "bathtubbasin": "clean"}
#: Areas that can hold a lamp: area -> (lamp type, receptacle types it stands on or by).
LAMP_HOSTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bedroom": ("desklamp", ("desk", "sidetable", "dresser")),
    "livingroom": ("floorlamp", ("sidetable", "armchair", "dresser")),
}
LAMP_TYPES = ("desklamp", "floorlamp")

_FOOD = ("countertop", "diningtable", "fridge", "garbagecan", "sinkbasin", "microwave")
_CUTLERY = ("countertop", "diningtable", "drawer", "sinkbasin")
_SMALL = ("sidetable", "coffeetable", "dresser", "drawer", "desk", "shelf")
#: object type -> receptacle types where it may start (and be asked to go).
PLACES: dict[str, tuple[str, ...]] = {
    "apple": _FOOD,
    "tomato": _FOOD,
    "egg": _FOOD,
    "potato": _FOOD,
    "lettuce": ("countertop", "diningtable", "fridge", "garbagecan", "sinkbasin"),
    "bread": ("countertop", "diningtable", "fridge", "microwave", "cabinet"),
    "mug": (
        "countertop",
        "diningtable",
        "cabinet",
        "coffeemachine",
        "shelf",
        "sinkbasin",
        "microwave",
        "fridge",
        "desk",
    ),  # fmt: skip
    "cup": ("countertop", "diningtable", "cabinet", "fridge", "microwave", "sinkbasin", "shelf"),
    "bowl": (
        "countertop",
        "diningtable",
        "cabinet",
        "fridge",
        "microwave",
        "sinkbasin",
        "shelf",
        "desk",
    ),  # fmt: skip
    "plate": ("countertop", "diningtable", "cabinet", "fridge", "microwave", "sinkbasin", "shelf"),
    "pan": ("countertop", "stoveburner", "cabinet", "fridge", "sinkbasin"),
    "pot": ("countertop", "stoveburner", "cabinet", "fridge", "sinkbasin", "diningtable"),
    "kettle": ("countertop", "stoveburner", "cabinet", "sinkbasin"),
    "knife": _CUTLERY,
    "butterknife": _CUTLERY,
    "fork": _CUTLERY,
    "spoon": _CUTLERY,
    "spatula": _CUTLERY,
    "ladle": _CUTLERY,
    "dishsponge": ("countertop", "sinkbasin", "cabinet", "drawer", "garbagecan", "bathtubbasin"),
    "saltshaker": ("countertop", "diningtable", "cabinet", "drawer", "shelf"),
    "peppershaker": ("countertop", "diningtable", "cabinet", "drawer", "shelf"),
    "winebottle": ("countertop", "diningtable", "fridge", "cabinet", "shelf"),
    "soapbottle": ("countertop", "cabinet", "shelf", "toilet", "garbagecan"),
    "remotecontrol": (
        "sofa",
        "coffeetable",
        "sidetable",
        "armchair",
        "tvstand",
        "dresser",
        "drawer",
    ),  # fmt: skip
    "keychain": ("sofa", "armchair", "safe", *_SMALL),
    "creditcard": ("sofa", "armchair", "diningtable", "countertop", *_SMALL),
    "cellphone": ("bed", "sofa", *_SMALL),
    "book": ("bed", "sofa", *_SMALL),
    "pen": _SMALL,
    "pencil": _SMALL,
    "cd": ("safe", "garbagecan", *_SMALL),
    "alarmclock": ("desk", "sidetable", "dresser", "shelf"),
    "laptop": ("bed", "desk", "sofa", "coffeetable", "diningtable", "armchair", "dresser"),
    "pillow": ("bed", "sofa", "armchair"),
    "vase": (
        "shelf",
        "coffeetable",
        "sidetable",
        "tvstand",
        "dresser",
        "safe",
        "diningtable",
        "cabinet",
    ),  # fmt: skip
    "statue": (
        "shelf",
        "coffeetable",
        "sidetable",
        "tvstand",
        "dresser",
        "safe",
        "diningtable",
        "desk",
    ),  # fmt: skip
    "watch": ("safe", *_SMALL),
    "newspaper": (
        "sofa",
        "coffeetable",
        "sidetable",
        "armchair",
        "diningtable",
        "garbagecan",
        "dresser",
    ),  # fmt: skip
    "box": ("sofa", "coffeetable", "sidetable", "dresser", "shelf", "diningtable"),
    "teddybear": ("bed", "armchair", "dresser", "shelf"),
    "soapbar": ("sinkbasin", "bathtubbasin", "countertop", "toilet", "cabinet", "garbagecan"),
    "cloth": (
        "sinkbasin",
        "bathtubbasin",
        "countertop",
        "cabinet",
        "drawer",
        "toilet",
        "laundryhamper",
        "dresser",
    ),  # fmt: skip
    "towel": ("towelholder", "bathtubbasin", "countertop", "cabinet"),
    "handtowel": ("handtowelholder", "countertop", "cabinet"),
    "spraybottle": ("toilet", "countertop", "cabinet", "garbagecan", "shelf"),
    "toiletpaper": ("toiletpaperhanger", "toilet", "countertop", "cabinet", "garbagecan", "shelf"),
    "candle": (
        "countertop",
        "toilet",
        "shelf",
        "cabinet",
        "sidetable",
        "coffeetable",
        "bathtubbasin",
    ),  # fmt: skip
}
# What ALFWorld's heat / cool / clean / look-at tasks ask for.
HEATABLE = frozenset({"apple", "tomato", "egg", "potato", "bread", "mug", "cup", "plate"})
COOLABLE = frozenset({"apple", "tomato", "egg", "potato", "lettuce", "bread", "mug", "cup", "bowl",
                      "plate", "pan", "pot", "winebottle"})  # fmt: skip
CLEANABLE = frozenset({"apple", "tomato", "egg", "potato", "lettuce", "mug", "cup", "bowl", "plate",
                       "pan", "pot", "kettle", "knife", "butterknife", "fork", "spoon", "spatula",
                       "ladle", "dishsponge", "soapbar", "cloth"})  # fmt: skip
LOOKABLE = frozenset({"alarmclock", "book", "bowl", "cd", "cellphone", "creditcard", "keychain",
                      "laptop", "mug", "newspaper", "pen", "pencil", "pillow", "remotecontrol",
                      "statue", "vase", "watch", "box", "teddybear"})  # fmt: skip
_OBJECT_TYPES = tuple(sorted(PLACES))
_PROPERTY = {
    "pick_heat_then_place": HEATABLE,
    "pick_cool_then_place": COOLABLE,
    "pick_clean_then_place": CLEANABLE,
    "look_at_obj_in_light": LOOKABLE,
}
#: Receptacles a state task never names as its target (the tools themselves).
_NOT_TARGETS = {
    "pick_heat_then_place": ("microwave", "fridge"),
    "pick_cool_then_place": ("microwave", "fridge"),
    "pick_clean_then_place": ("sinkbasin", "bathtubbasin"),
}
_STATE_WORD = {
    "pick_heat_then_place": ("hot", "heat"),
    "pick_cool_then_place": ("cool", "cool"),
    "pick_clean_then_place": ("clean", "clean"),
}
_TASK_ID = re.compile(r"^([a-z_]{1,40})-r(\d{1,4})-d(\d{1,4})-(\d{1,20})$")
_VERBS = frozenset(
    {
        "go",
        "open",
        "close",
        "take",
        "move",
        "put",
        "heat",
        "cool",
        "clean",
        "use",
        "examine",
        "look",
        "inventory",
    }  # fmt: skip
)
_PUT = re.compile(r"^put (.+?) (?:in/on|in|on|into|onto) (.+)$")
WELCOME = "-= Welcome to TextWorld, ALFRED! =-"
NOTHING = "Nothing happens."
SUBGOAL_REWARD = 0.1


def _a_list(names: list[str] | tuple[str, ...]) -> str:
    """ALFWorld's list style: 'a apple 1, a mug 2, and a egg 1'."""
    if not names:
        return "nothing"
    if len(names) == 1:
        return "a " + names[0]
    return ", ".join("a " + n for n in names[:-1]) + ", and a " + names[-1]


@dataclass(frozen=True, eq=False)
class _Home:
    """Everything about a task that never changes during the episode."""

    task_id: str
    task_type: str
    goal: str
    obj_type: str
    target_type: str | None
    lamp_type: str | None
    rec_names: tuple[str, ...]
    rec_types: tuple[str, ...]
    openable: tuple[bool, ...]
    rec_index: dict[str, int]
    tool_verb: tuple[str | None, ...]
    obj_names: tuple[str, ...]
    obj_types: tuple[str, ...]
    portable: tuple[bool, ...]
    obj_index: dict[str, int]
    target_recs: tuple[int, ...]
    #: loc + 1 -> the "go to" actions from there (index 0: the middle of the room)
    go_actions: tuple[tuple[str, ...], ...]
    intro: str
    solution: tuple[str, ...]

    def __deepcopy__(self, memo: dict[int, Any]) -> _Home:
        return self  # immutable: snapshots share it


class HouseholdEnv(TextEnv):
    """Household: ALFWorld-style tasks in a procedural home.

    ## Description
    A text household in the style of ALFWorld (TextWorld's ALFRED scenes),
    generated procedurally so it needs no downloads and runs fast. A home is
    a set of numbered receptacles ("countertop 1", "cabinet 3", "fridge 1",
    "sidetable 2", ...) from one to four areas (kitchen, living room,
    bedroom, bathroom). Fridges, microwaves, cabinets, drawers and safes
    start closed and hide their contents until opened. Objects ("apple 1",
    "mug 2", "book 3", ...) lie where such things are kept (food in the
    fridge or on the countertop, books on shelves, soap in the bathroom: the
    table ``PLACES``), among distractors. Bedrooms and living rooms may have
    a lamp (``desklamp`` / ``floorlamp``) standing on or by a receptacle.

    Six task types, with ALFWorld's task text:

    * ``pick_and_place``: "put a apple in fridge." / "put some book on shelf."
    * ``pick_two_and_place``: "put two cellphone in sofa." / "find two X and
      put them in Y."
    * ``look_at_obj_in_light``: "look at alarmclock under the desklamp." /
      "examine the book with the floorlamp."
    * ``pick_clean_then_place``: "put a clean mug in countertop." / "clean
      some X and put it in Y." (clean with a sinkbasin or bathtubbasin)
    * ``pick_heat_then_place``: "put a hot potato in countertop." / "heat some
      X and put it in Y." (heat with the microwave)
    * ``pick_cool_then_place``: "put a cool tomato in diningtable." / "cool
      some X and put it in Y." (cool with the fridge)

    Success is checked after every action, as in ALFWorld: an object of the
    asked type lies in a receptacle of the asked type (for pick-two: two
    distinct such objects in the same receptacle). For hot / cool / clean the
    object must have been through ``heat`` / ``cool`` / ``clean`` (taken in
    hand, at the microwave / fridge / sinkbasin); putting it inside a fridge
    does not cool it. For look-at the agent must hold an object of the type
    at a receptacle where a lamp of the named type is on (``use`` turns it
    on or off). No task is solved at the start: no object of the asked type
    starts in a receptacle of the target type.

    ## Action Space
    Text: one command per turn, ALFWorld's grammar: ``go to R``, ``open R``,
    ``close R``, ``take O from R``, ``move O to R`` (``put O in R`` and ``put
    O on R`` also work), ``heat O with R``, ``cool O with R``, ``clean O with
    R``, ``use L`` (a lamp), ``examine R`` / ``examine O``, ``look``,
    ``inventory``. The reply may be the bare command (like ALFWorld) or wrap
    it in ``<answer>...</answer>``; ``<think>...</think>`` is ignored, case and
    extra spaces do not matter, a final period is dropped. The agent holds at
    most one object; ``take`` needs empty hands and ``take``/``move`` need an
    open receptacle. A command that is not admissible now uses up the turn
    and returns "Nothing happens." (a reply that is no command at all also
    gets a hint on the reply format).

    ## Observation Space
    Text, ALFWorld style. The first observation is the welcome line, the
    receptacles in view and "Your task is to: ...". Later ones are the
    feedback of the last command: "You arrive at fridge 1. The fridge 1 is
    closed.", "You open the fridge 1. The fridge 1 is open. In it, you see a
    apple 1, and a egg 2.", "You pick up the apple 1 from the fridge 1.",
    "You move the apple 1 to the countertop 1.", "You heat the apple 1 using
    the microwave 1.", "You turn on the desklamp 1.", "You are carrying: a
    apple 1.", "Nothing happens.". Printable ASCII only.

    ## Starting State
    The agent stands in the middle of the room, holding nothing. The home,
    the task and the objects come from the seed (or from
    ``options["task_id"]``): the task type is drawn from the level's mix,
    the home is built around what the task needs (a microwave for heating, a
    lamp for look-at, ...), then the goal objects (1-2, or 2-3 for pick-two)
    and the distractors are placed.

    ## Rewards
    Sparse, as ALFWorld: ``success`` 1.0 on the turn the goal is reached,
    else 0.0. With ``shaped=True`` a ``subgoal`` component adds 0.1 the first
    time an object of the goal type is picked up and 0.1 the first time one
    is heated / cooled / cleaned (state tasks). Invalid commands cost
    nothing (ALFWorld has no penalty); ``info["action_valid"]`` says which
    they were.

    ## Episode End
    Terminated when the goal is reached (``info["success"]`` is True).
    Truncated after ``max_turns`` turns (default 50, as ALFWorld; homes of
    more than 30 receptacles get 2 more turns per extra receptacle).

    ## Info
    ``admissible_actions`` (every command that does something now, as
    ALFWorld's admissible commands), ``state_key`` (the whole world state as
    text: location, held object, every object's place and hot/cool/clean
    flags, open receptacles, lamps on), ``privileged`` (``task_type``,
    ``goal``, ``solution``: a shortest plan from the start computed with
    full knowledge of the home, ``optimal_length``), plus the shared keys.

    ## Arguments
    ``difficulty``: ``easy`` (about 12 receptacles, 6-10 distractors, tasks
    pick_and_place and look_at_obj_in_light), ``medium`` (about 20, 12-18,
    plus clean / heat / cool) or ``hard`` (about 30, 20-30, all six
    types). ``task_types`` (a list of the names above), ``num_receptacles``
    (6 to 60; a home never has fewer than its areas' essentials) and
    ``num_distractors`` (0 to 80) override the level. ``shaped`` turns on the
    subgoal rewards. ``max_turns`` bounds the episode.
    ``reset(options={"task_id": ...})`` replays a task by its id (e.g.
    ``"pick_heat_then_place-r20-d15-123456"``: task type, receptacles 6 to 60,
    distractors 0 to 80, a seed below 2**63); ``options={"difficulty":
    ...}`` changes the level for this and later resets. A value out of these
    ranges is a ValueError that says what is allowed.

    ## Version History
    * v0: initial version. Since then the seed in a task id is bounded (below
      2**63) and each part of an id is checked before any home is built.
    """

    system_prompt: ClassVar[str] = (
        "You are in a household and must complete the task you are given. Each turn, reply "
        "with one command: go to R, open R, close R, take O from R, move O to R, heat O with "
        "R, cool O with R, clean O with R, use R, examine R, look, inventory (R a receptacle "
        "such as fridge 1, O an object such as apple 1). You can carry one object at a time. "
        "Write the command alone or inside <answer>...</answer>, e.g. <answer>go to fridge "
        "1</answer>."
    )
    default_max_turns: ClassVar[int] = 50
    _snapshot_fields: ClassVar[tuple[str, ...]] = (
        "_home",
        "_loc",
        "_held",
        "_is_open",
        "_obj_loc",
        "_contents",
        "_hot",
        "_cool",
        "_clean",
        "_lamp_on",
        "_subgoals",
        "_adm",
        "_adm_set",
        "_world_key",
    )

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        task_types: list[str] | tuple[str, ...] | None = None,
        num_receptacles: int | None = None,
        num_distractors: int | None = None,
        shaped: bool = False,
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(difficulty=difficulty, max_turns=max_turns, render_mode=render_mode)
        if task_types is not None:
            if isinstance(task_types, str) or not isinstance(task_types, list | tuple):
                raise ValueError(
                    f"task_types must be a list of task type names, got {task_types!r}; "
                    f"choose from {list(TASK_TYPES)}"
                )
            bad = [t for t in task_types if t not in TASK_TYPES]
            if bad or not task_types:
                raise ValueError(
                    f"unknown task type(s) {bad or task_types!r}; choose from {list(TASK_TYPES)}"
                )
            task_types = tuple(dict.fromkeys(task_types))
        if num_receptacles is not None:
            num_receptacles = check_int(
                num_receptacles, "num_receptacles", MIN_RECEPTACLES, MAX_RECEPTACLES
            )
        if num_distractors is not None:
            num_distractors = check_int(num_distractors, "num_distractors", 0, MAX_DISTRACTORS)
        if not isinstance(shaped, bool):
            raise ValueError(f"shaped must be True or False, got {shaped!r}")
        self._task_types_arg = task_types
        self._num_receptacles_arg = num_receptacles
        self._num_distractors_arg = num_distractors
        self.shaped = shaped
        self._apply_difficulty(self.difficulty)
        self._home: _Home | None = None

    # -------------------------------------------------------------- config
    def _apply_difficulty(self, difficulty: str) -> None:
        self.difficulty = difficulty
        receptacles, distractors, types = DIFFICULTY_PRESETS[difficulty]
        self.task_types = self._task_types_arg or types
        self.num_receptacles = self._num_receptacles_arg or receptacles
        self.distractor_range = (
            (self._num_distractors_arg, self._num_distractors_arg)
            if self._num_distractors_arg is not None
            else distractors
        )
        # ALFWorld's 50 turns; homes larger than the hard level get time to search them.
        extra = 2 * max(0, self.num_receptacles - DIFFICULTY_PRESETS["hard"][0])
        self.max_turns = self._max_turns_arg or self.default_max_turns + extra

    # ------------------------------------------------------------- episode
    def _new_task(self, options: dict[str, Any]) -> str:
        if "task_id" in options:
            task_type, n_recs, n_distractors, task_seed = _parse_task_id(options["task_id"])
        else:
            rng = self.np_random
            task_type = self.task_types[int(rng.integers(len(self.task_types)))]
            low, high = self.distractor_range
            n_recs = self.num_receptacles
            n_distractors = int(rng.integers(low, high + 1))
            task_seed = int(rng.integers(0, 2**62))
        home, contents = _generate_home(task_type, n_recs, n_distractors, task_seed)
        self._home = home
        self.task_id = home.task_id
        n_objs = len(home.obj_names)
        self._loc = -1
        self._held = -1
        self._is_open = [False] * len(home.rec_names)
        self._contents = [list(c) for c in contents]
        self._obj_loc = [-1] * n_objs
        for r, items in enumerate(self._contents):
            for o in items:
                self._obj_loc[o] = r
        self._hot = [False] * n_objs
        self._cool = [False] * n_objs
        self._clean = [False] * n_objs
        self._lamp_on = [False] * n_objs
        self._subgoals: list[str] = []
        self._adm: list[str] | None = None
        self._adm_set: frozenset[str] = frozenset()
        self._world_key: str | None = None
        return home.intro

    # --------------------------------------------------------------- rules
    def _admissible(self) -> list[str]:
        if self._adm is not None:
            return self._adm
        home = self._home
        loc, held = self._loc, self._held
        acts = list(home.go_actions[loc + 1])
        if loc >= 0:
            name = home.rec_names[loc]
            accessible = True
            if home.openable[loc]:
                if self._is_open[loc]:
                    acts.append("close " + name)
                else:
                    acts.append("open " + name)
                    accessible = False
            acts.append("examine " + name)
            obj_names, portable = home.obj_names, home.portable
            for o in self._contents[loc]:
                if not portable[o]:
                    acts.append("use " + obj_names[o])
                elif accessible and held < 0:
                    acts.append(f"take {obj_names[o]} from {name}")
            if held >= 0:
                held_name = obj_names[held]
                if accessible:
                    acts.append(f"move {held_name} to {name}")
                verb = home.tool_verb[loc]
                if verb is not None:
                    acts.append(f"{verb} {held_name} with {name}")
        if held >= 0:
            acts.append("examine " + home.obj_names[held])
        acts.append("inventory")
        acts.append("look")
        self._adm = acts
        self._adm_set = frozenset(acts)
        return acts

    def _act(self, action: str) -> Turn:
        if "<" in action:
            tagged = parse_tag(action, "answer")
            action = tagged.value if tagged.ok else strip_think(action)
        cmd = " ".join(action.lower().split())
        if cmd.endswith("."):
            cmd = cmd[:-1].rstrip()
        if cmd.startswith("put "):
            match = _PUT.match(cmd)
            if match is not None:
                cmd = f"move {match.group(1)} to {match.group(2)}"
        self._admissible()
        components = {"success": 0.0, "subgoal": 0.0} if self.shaped else {"success": 0.0}
        if cmd not in self._adm_set:
            text = NOTHING
            if cmd.partition(" ")[0] not in _VERBS:
                text += (
                    " Reply with one admissible command, such as look or go to a receptacle, "
                    "alone or inside <answer>...</answer>."
                )
            return Turn(text, components, action_valid=False)
        home = self._home
        verb, _, rest = cmd.partition(" ")
        changed = True
        if verb == "go":
            r = home.rec_index[rest[3:]]
            self._loc = r
            text = f"You arrive at {rest[3:]}. " + self._describe(r)
        elif verb == "take":
            o_name, _, r_name = rest.partition(" from ")
            o, r = home.obj_index[o_name], home.rec_index[r_name]
            self._contents[r].remove(o)
            self._obj_loc[o] = -1
            self._held = o
            self._world_key = None
            text = f"You pick up the {o_name} from the {r_name}."
            if home.obj_types[o] == home.obj_type and "pick" not in self._subgoals:
                self._subgoals.append("pick")
                if self.shaped:
                    components["subgoal"] = SUBGOAL_REWARD
        elif verb == "move":
            o_name, _, r_name = rest.partition(" to ")
            o, r = home.obj_index[o_name], home.rec_index[r_name]
            self._contents[r].append(o)
            self._obj_loc[o] = r
            self._held = -1
            self._world_key = None
            text = f"You move the {o_name} to the {r_name}."
        elif verb == "open":
            r = home.rec_index[rest]
            self._is_open[r] = True
            self._world_key = None
            text = f"You open the {rest}. " + self._describe(r)
        elif verb == "close":
            r = home.rec_index[rest]
            self._is_open[r] = False
            self._world_key = None
            text = f"You close the {rest}."
        elif verb in ("heat", "cool", "clean"):
            o_name, _, r_name = rest.partition(" with ")
            o = home.obj_index[o_name]
            flags = self._hot if verb == "heat" else self._cool if verb == "cool" else self._clean
            flags[o] = True
            self._world_key = None
            text = f"You {verb} the {o_name} using the {r_name}."
            if home.obj_types[o] == home.obj_type and verb not in self._subgoals:
                self._subgoals.append(verb)
                if self.shaped and _STATE_WORD.get(home.task_type, ("", ""))[1] == verb:
                    components["subgoal"] = SUBGOAL_REWARD
        elif verb == "use":
            o = home.obj_index[rest]
            on = not self._lamp_on[o]
            self._lamp_on[o] = on
            self._world_key = None
            text = f"You turn {'on' if on else 'off'} the {rest}."
        else:
            changed = False
            if verb == "look":
                text = self._look()
            elif verb == "inventory":
                held = self._held
                text = (
                    f"You are carrying: a {home.obj_names[held]}."
                    if held >= 0
                    else "You are not carrying anything."
                )
            elif rest in home.rec_index:  # examine a receptacle
                text = self._describe(home.rec_index[rest])
            else:  # examine the held object
                text = f"There's nothing special about {rest}."
        if changed:
            self._adm = None
        success = self._goal_met()
        if success:
            components["success"] = 1.0
        return Turn(text, components, terminated=success, success=success)

    def _describe(self, r: int) -> str:
        home = self._home
        name = home.rec_names[r]
        names = [home.obj_names[o] for o in self._contents[r]]
        if home.openable[r]:
            if not self._is_open[r]:
                return f"The {name} is closed."
            return f"The {name} is open. In it, you see {_a_list(names)}."
        return f"On the {name}, you see {_a_list(names)}."

    def _look(self) -> str:
        home = self._home
        if self._loc < 0:
            return (
                "You are in the middle of a room. Looking quickly around you, you see "
                f"{_a_list(home.rec_names)}."
            )
        return f"You are facing the {home.rec_names[self._loc]}. Next to it, you see nothing."

    def _goal_met(self) -> bool:
        home = self._home
        task_type, obj_type, obj_types = home.task_type, home.obj_type, home.obj_types
        if task_type == "look_at_obj_in_light":
            held, loc = self._held, self._loc
            if held < 0 or loc < 0 or obj_types[held] != obj_type:
                return False
            lamp_type, lamp_on = home.lamp_type, self._lamp_on
            return any(obj_types[o] == lamp_type and lamp_on[o] for o in self._contents[loc])
        need = 2 if task_type == "pick_two_and_place" else 1
        flags = (
            self._hot
            if task_type == "pick_heat_then_place"
            else self._cool
            if task_type == "pick_cool_then_place"
            else self._clean
            if task_type == "pick_clean_then_place"
            else None
        )
        for r in home.target_recs:
            count = 0
            for o in self._contents[r]:
                if obj_types[o] == obj_type and (flags is None or flags[o]):
                    count += 1
            if count >= need:
                return True
        return False

    def _task_info(self) -> dict[str, Any]:
        home = self._home
        if self._world_key is None:
            self._world_key = self._make_world_key()
        held = home.obj_names[self._held] if self._held >= 0 else "nothing"
        loc = home.rec_names[self._loc] if self._loc >= 0 else "middle of the room"
        return {
            "state_key": f"at: {loc}; holding: {held}; {self._world_key}",
            "admissible_actions": list(self._admissible()),
            "privileged": {
                "task_type": home.task_type,
                "goal": home.goal,
                "solution": list(home.solution),
                "optimal_length": len(home.solution),
            },
        }

    def _make_world_key(self) -> str:
        home = self._home
        parts = [home.task_id]
        for r, items in enumerate(self._contents):
            is_open = "open " if self._is_open[r] else ""
            inside = ",".join(self._obj_text(o) for o in items)
            parts.append(f"{is_open}{home.rec_names[r]}: {inside}")
        if self._held >= 0:
            parts.append("hand: " + self._obj_text(self._held))
        return "; ".join(parts)

    def _obj_text(self, o: int) -> str:
        text = self._home.obj_names[o]
        if self._hot[o]:
            text += " hot"
        if self._cool[o]:
            text += " cool"
        if self._clean[o]:
            text += " clean"
        if self._lamp_on[o]:
            text += " on"
        return text

    def _render_text(self) -> str:
        home = self._home
        if home is None:
            return ""
        lines = [f"Task: {home.goal}"]
        lines.append(
            "At: " + (home.rec_names[self._loc] if self._loc >= 0 else "middle of the room")
        )
        lines.append("Holding: " + (self._obj_text(self._held) if self._held >= 0 else "nothing"))
        for r, name in enumerate(home.rec_names):
            state = (" (open)" if self._is_open[r] else " (closed)") if home.openable[r] else ""
            inside = ", ".join(self._obj_text(o) for o in self._contents[r]) or "-"
            lines.append(f"{name}{state}: {inside}")
        return "\n".join(lines)


# ------------------------------------------------------------------ generation
def _parse_task_id(task_id: Any) -> tuple[str, int, int, int]:
    match = _TASK_ID.match(task_id) if isinstance(task_id, str) else None
    if match is None or match.group(1) not in TASK_TYPES:
        raise ValueError(
            f"task_id {short_repr(task_id)} is not a Household task id; use an id from "
            "info['task_id'], e.g. 'pick_heat_then_place-r20-d15-123456' "
            f"(TASKTYPE-rRECEPTACLES-dDISTRACTORS-SEED, TASKTYPE one of {', '.join(TASK_TYPES)})"
        )
    task_type = match.group(1)
    n_recs, n_distractors, seed = (int(g) for g in match.groups()[1:])
    try:
        check_int(n_recs, "its receptacle count", MIN_RECEPTACLES, MAX_RECEPTACLES)
        check_int(n_distractors, "its distractor count", 0, MAX_DISTRACTORS)
        check_int(seed, "its seed", 0, MAX_TASK_SEED)
    except ValueError as exc:
        raise ValueError(
            f"task_id {short_repr(task_id)} names no task this env makes: {exc}; use an id "
            "from info['task_id']"
        ) from None
    return task_type, n_recs, n_distractors, seed


def _generate_home(
    task_type: str, n_recs: int, n_distractors: int, seed: int
) -> tuple[_Home, list[list[int]]]:
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
    rec_types = tuple(n.rsplit(" ", 1)[0] for n in rec_names)
    by_type: dict[str, list[int]] = {}
    for r, t in enumerate(rec_types):
        by_type.setdefault(t, []).append(r)

    # The goal: an object type, and a target type it plausibly goes to.
    present = [t for t in _OBJECT_TYPES if any(p in by_type for p in PLACES[t])]
    wanted = _PROPERTY.get(task_type)
    choices: list[tuple[str, str | None]] = []
    for obj in present:
        if wanted is not None and obj not in wanted:
            continue
        spots = [p for p in PLACES[obj] if p in by_type]
        if task_type == "look_at_obj_in_light":
            choices.append((obj, None))
            continue
        for target in spots:
            if target in _NOT_TARGETS.get(task_type, ()):
                continue
            if any(s != target for s in spots):
                choices.append((obj, target))
    if not choices:  # the area tables always offer one; guard against edits to them
        raise RuntimeError(f"no {task_type} task fits this home (seed {seed})")
    obj_type, target_type = pick(choices)
    # Lamps: one in the look-at task's area, maybe one in another lamp area.
    lamp_type = None
    lamps: list[tuple[str, int]] = []
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

    obj_names: list[str] = []
    obj_types: list[str] = []
    contents: list[list[int]] = [[] for _ in rec_names]
    numbers: dict[str, int] = {}

    def place(kind: str, r: int) -> None:
        numbers[kind] = numbers.get(kind, 0) + 1
        contents[r].append(len(obj_names))
        obj_names.append(f"{kind} {numbers[kind]}")
        obj_types.append(kind)

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
        spots = [p for p in PLACES[kind] if p in by_type]
        place(kind, pick(by_type[pick(spots)]))

    goal = _goal_text(task_type, obj_type, target_type, lamp_type, rng)
    task_id = f"{task_type}-r{n_recs}-d{n_distractors}-{seed}"
    intro = (
        f"{WELCOME}\n\nYou are in the middle of a room. Looking quickly around you, you see "
        f"{_a_list(rec_names)}.\n\nYour task is to: {goal}"
    )
    openable = tuple(t in OPENABLE for t in rec_types)
    go_all = tuple("go to " + n for n in rec_names)
    go_actions = (go_all,) + tuple(go_all[:r] + go_all[r + 1 :] for r in range(len(rec_names)))
    home = _Home(
        task_id=task_id,
        task_type=task_type,
        goal=goal,
        obj_type=obj_type,
        target_type=target_type,
        lamp_type=lamp_type,
        rec_names=rec_names,
        rec_types=rec_types,
        openable=openable,
        rec_index={n: r for r, n in enumerate(rec_names)},
        tool_verb=tuple(_TOOL_VERB.get(t) for t in rec_types),
        obj_names=tuple(obj_names),
        obj_types=tuple(obj_types),
        portable=tuple(t not in LAMP_TYPES for t in obj_types),
        obj_index={n: o for o, n in enumerate(obj_names)},
        target_recs=tuple(by_type.get(target_type, ())) if target_type else (),
        go_actions=go_actions,
        intro=intro,
        solution=(),
    )
    return replace(home, solution=tuple(_shortest_plan(home, contents))), contents


def _goal_text(
    task_type: str, obj: str, target: str | None, lamp: str | None, rng: np.random.Generator
) -> str:
    first = rng.random() < 0.5
    if task_type == "pick_and_place":
        return f"put a {obj} in {target}." if first else f"put some {obj} on {target}."
    if task_type == "pick_two_and_place":
        return (
            f"put two {obj} in {target}." if first else f"find two {obj} and put them in {target}."
        )
    if task_type == "look_at_obj_in_light":
        return (
            f"look at {obj} under the {lamp}." if first else f"examine the {obj} with the {lamp}."
        )
    adjective, verb = _STATE_WORD[task_type]
    if first:
        return f"put a {adjective} {obj} in {target}."
    return f"{verb} some {obj} and put it in {target}."


def _shortest_plan(home: _Home, contents: list[list[int]]) -> list[str]:
    """A shortest command list that solves the task from the start, with full
    knowledge of the home (each "go to" is one turn, so only the choice of
    instances matters: try them all)."""
    obj_loc = {o: r for r, items in enumerate(contents) for o in items}
    goal_objs = [o for o, t in enumerate(home.obj_types) if t == home.obj_type]
    names, objs = home.rec_names, home.obj_names

    def build(sequence: tuple[int, ...], target: int | None, tool: int | None) -> list[str]:
        steps: list[str] = []
        loc = -1
        opened: set[int] = set()

        def go(r: int) -> None:
            nonlocal loc
            if loc != r:
                steps.append("go to " + names[r])
                loc = r

        def open_(r: int) -> None:
            if home.openable[r] and r not in opened:
                steps.append("open " + names[r])
                opened.add(r)

        for o in sequence:
            r = obj_loc[o]
            go(r)
            open_(r)
            steps.append(f"take {objs[o]} from {names[r]}")
            if home.task_type == "look_at_obj_in_light":
                go(obj_loc[tool])
                steps.append("use " + objs[tool])
                continue
            if tool is not None:
                verb = home.tool_verb[tool]
                go(tool)
                steps.append(f"{verb} {objs[o]} with {names[tool]}")
            go(target)
            open_(target)
            steps.append(f"move {objs[o]} to {names[target]}")
        return steps

    if home.task_type == "look_at_obj_in_light":
        lamps = [o for o, t in enumerate(home.obj_types) if t == home.lamp_type]
        options = [build((o,), None, lamp) for o in goal_objs for lamp in lamps]
    else:
        size = 2 if home.task_type == "pick_two_and_place" else 1
        tools: list[int | None] = [None]
        if home.task_type in TOOLS:
            kinds = TOOLS[home.task_type][1]
            tools = [r for r, t in enumerate(home.rec_types) if t in kinds]
        options = [
            build(seq, target, tool)
            for seq in permutations(goal_objs, size)
            for target in home.target_recs
            for tool in tools
        ]
    return min(options, key=len)
