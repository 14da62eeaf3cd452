"""envgym/Household-v0, the env: reads the agent's reply, applies the command
rules to the home, and reports the feedback, the reward and the info keys.

The rules live in `rules.py`, the world's tables in `world.py`, and the homes
and task ids in `generation.py`; this module is the Gymnasium face of them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from envgym.core import Preset, TextEnv, Turn, setting, short_repr
from envgym.envs.household.generation import (
    MAX_DISTRACTORS,
    MAX_RECEPTACLES,
    MIN_RECEPTACLES,
    generate_home,
    parse_task_id,
)
from envgym.envs.household.rules import (
    NOTHING,
    PROCESS_VERBS,
    READ_ONLY_VERBS,
    VERBS,
    Home,
    HomeState,
    admissible,
    canonical_command,
    feedback,
    goal_met,
    object_text,
    parse_command,
)
from envgym.envs.household.world import TASK_TYPES, TOOLS
from envgym.parsing import parse_tag, strip_think

__all__ = ["DIFFICULTY_PRESETS", "TASK_TYPES", "HouseholdEnv", "HouseholdPreset"]

#: ALFWorld's turn limit.
ALFWORLD_TURNS = 50
SUBGOAL_REWARD = 0.1


@dataclass(frozen=True)
class HouseholdPreset(Preset):
    """What a Household difficulty level sets."""

    num_receptacles: int = setting(12, MIN_RECEPTACLES, MAX_RECEPTACLES, "receptacles in the home")
    #: (fewest, most) distractor objects; each task draws its count from this range
    distractor_range: tuple[int, int] = (6, 10)
    #: a fixed distractor count that replaces the range (None: use the range)
    num_distractors: int | None = setting(None, 0, MAX_DISTRACTORS, "distractor objects")
    #: the task types drawn from (checked by the env: names from TASK_TYPES)
    task_types: tuple[str, ...] = setting(("pick_and_place", "look_at_obj_in_light"))


DIFFICULTY_PRESETS: dict[str, HouseholdPreset] = {
    "easy": HouseholdPreset(
        max_turns=ALFWORLD_TURNS,
        num_receptacles=12,
        distractor_range=(6, 10),
        task_types=("pick_and_place", "look_at_obj_in_light"),
    ),
    "medium": HouseholdPreset(
        max_turns=ALFWORLD_TURNS,
        num_receptacles=20,
        distractor_range=(12, 18),
        task_types=(
            "pick_and_place",
            "look_at_obj_in_light",
            "pick_clean_then_place",
            "pick_heat_then_place",
            "pick_cool_then_place",
        ),
    ),
    "hard": HouseholdPreset(
        max_turns=ALFWORLD_TURNS,
        num_receptacles=30,
        distractor_range=(20, 30),
        task_types=TASK_TYPES,
    ),
}


def _check_task_types(task_types: Any) -> tuple[str, ...]:
    """`task_types` as a tuple without repeats; a ValueError naming the choices
    when it is not a non-empty list of known task types."""
    if isinstance(task_types, str) or not isinstance(task_types, list | tuple):
        raise ValueError(
            f"task_types must be a list of task type names, got {short_repr(task_types)}; "
            f"choose from {list(TASK_TYPES)}"
        )
    bad = [t for t in task_types if t not in TASK_TYPES]
    if bad or not task_types:
        raise ValueError(
            f"unknown task type(s) {short_repr(bad or task_types)}; choose from {list(TASK_TYPES)}"
        )
    return tuple(dict.fromkeys(task_types))


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
    ``difficulty``: a level of ``DIFFICULTY_PRESETS`` (``env.config`` holds
    the settings in use): ``easy`` (12 receptacles, 6-10 distractors, tasks
    pick_and_place and look_at_obj_in_light), ``medium`` (20, 12-18, plus
    clean / heat / cool) or ``hard`` (30, 20-30, all six types).
    ``task_types`` (a non-empty list of the names above), ``num_receptacles``
    (6 to 60; a home never has fewer than its areas' essentials) and
    ``num_distractors`` (0 to 80, the same count in every home) override the
    level, and go on doing so when a reset option changes it. ``shaped`` turns
    on the subgoal rewards. ``max_turns`` (1 to 100000) bounds the episode;
    without it the limit is 50 plus 2 per receptacle beyond 30.
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
    presets: ClassVar[dict[str, HouseholdPreset]] = DIFFICULTY_PRESETS
    #: `shaped` is a choice of reward, not episode state.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("shaped",)
    fast_calls: ClassVar[bool] = True
    config: HouseholdPreset

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
        if task_types is not None:
            task_types = _check_task_types(task_types)
        if not isinstance(shaped, bool):
            raise ValueError(f"shaped must be True or False, got {short_repr(shaped)}")
        self.shaped = shaped
        super().__init__(
            difficulty=difficulty,
            render_mode=render_mode,
            task_types=task_types,
            num_receptacles=num_receptacles,
            num_distractors=num_distractors,
            max_turns=max_turns,
        )
        self._home: Home | None = None
        self._state: HomeState | None = None

    def _configure(self, config: HouseholdPreset) -> HouseholdPreset:
        if config.num_distractors is not None:
            config = replace(config, distractor_range=(config.num_distractors,) * 2)
        if "max_turns" not in self.overrides:
            # ALFWorld's 50 turns; homes larger than the hard level get time to search them.
            larger = config.num_receptacles - DIFFICULTY_PRESETS["hard"].num_receptacles
            config = replace(config, max_turns=config.max_turns + 2 * max(0, larger))
        return config

    # ------------------------------------------------------------- episode
    def _new_task(self, options: dict[str, Any]) -> str:
        if "task_id" in options:
            task_type, n_recs, n_distractors, task_seed = parse_task_id(options["task_id"])
        else:
            rng, config = self.np_random, self.config
            task_type = config.task_types[int(rng.integers(len(config.task_types)))]
            low, high = config.distractor_range
            n_recs = config.num_receptacles
            n_distractors = int(rng.integers(low, high + 1))
            task_seed = int(rng.integers(0, 2**62))
        home = generate_home(task_type, n_recs, n_distractors, task_seed)
        self._home = home
        self.task_id = home.task_id
        self._state = HomeState.at_start(home)
        self._subgoals: list[str] = []
        # Caches of what the state implies, cleared when a command changes it.
        self._adm: list[str] | None = None
        self._adm_set: frozenset[str] = frozenset()
        self._world_key: str | None = None
        return home.intro

    def _admissible(self) -> list[str]:
        if self._adm is None:
            self._adm = admissible(self._home, self._state)
            self._adm_set = frozenset(self._adm)
        return self._adm

    def _act(self, action: str) -> Turn:
        self._admissible()
        # An admissible command is already canonical: most replies skip the rewriting.
        cmd = action
        if cmd not in self._adm_set:
            if "<" in cmd:
                tagged = parse_tag(cmd, "answer")
                cmd = tagged.value if tagged.ok else strip_think(cmd)
            if cmd not in self._adm_set:
                cmd = canonical_command(cmd)
        components = {"success": 0.0, "subgoal": 0.0} if self.shaped else {"success": 0.0}
        if cmd not in self._adm_set:
            text = NOTHING
            if cmd.partition(" ")[0] not in VERBS:
                text += (
                    " Reply with one admissible command, such as look or go to a receptacle, "
                    "alone or inside <answer>...</answer>."
                )
            return Turn(text, components, action_valid=False)
        home, state = self._home, self._state
        command = parse_command(cmd)
        state.do(command)
        text = feedback(home, state, command)
        verb, obj, _ = command
        if verb not in READ_ONLY_VERBS:
            self._adm = None
            if verb != "go":  # where the agent stands is not part of the world key
                self._world_key = None
            if verb == "take" or verb in PROCESS_VERBS:
                self._count_subgoal(verb, obj, components)
        success = goal_met(home, state)
        if success:
            components["success"] = 1.0
        return Turn(text, components, terminated=success, success=success)

    def _count_subgoal(self, verb: str, obj: str, components: dict[str, float]) -> None:
        """The first pick-up of a goal-type object, and the first heat / cool /
        clean of one, are subgoals; shaping pays the pick-up and the task's own
        verb."""
        home = self._home
        subgoal = "pick" if verb == "take" else verb
        if home.obj_kinds[obj] != home.obj_type or subgoal in self._subgoals:
            return
        self._subgoals.append(subgoal)
        if self.shaped and (verb == "take" or TOOLS.get(home.task_type, ("",))[0] == verb):
            components["subgoal"] = SUBGOAL_REWARD

    # ---------------------------------------------------------------- info
    def _task_info(self) -> dict[str, Any]:
        home, state = self._home, self._state
        if self._world_key is None:
            self._world_key = self._make_world_key()
        held = state.held if state.held is not None else "nothing"
        loc = state.loc if state.loc is not None else "middle of the room"
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
        home, state = self._home, self._state
        parts = [home.task_id]
        for rec in home.rec_names:
            is_open = "open " if state.doors.get(rec) else ""
            inside = ",".join(object_text(state, o) for o in state.contents[rec])
            parts.append(f"{is_open}{rec}: {inside}")
        if state.held is not None:
            parts.append("hand: " + object_text(state, state.held))
        return "; ".join(parts)

    def _render_text(self) -> str:
        home, state = self._home, self._state
        if home is None:
            return ""
        lines = [f"Task: {home.goal}"]
        lines.append("At: " + (state.loc if state.loc is not None else "middle of the room"))
        held = object_text(state, state.held) if state.held is not None else "nothing"
        lines.append("Holding: " + held)
        for rec in home.rec_names:
            door = state.doors.get(rec)
            door_text = "" if door is None else " (open)" if door else " (closed)"
            inside = ", ".join(object_text(state, o) for o in state.contents[rec]) or "-"
            lines.append(f"{rec}{door_text}: {inside}")
        return "\n".join(lines)
