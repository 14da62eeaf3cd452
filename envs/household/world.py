"""The world's tables: what a Household home holds and what each thing can do.

These are the documented rules of the world (which receptacles each area has,
where each kind of object is kept, which receptacles heat, cool and clean,
where lamps stand, what each task type may ask for). Home generation builds
homes from them, the command rules read them, and the oracle uses them the way
a person brings common sense to a kitchen.
"""

from __future__ import annotations

__all__ = [
    "AREAS",
    "CLEANABLE",
    "COOLABLE",
    "GOAL_TEXTS",
    "HEATABLE",
    "LAMP_HOSTS",
    "LAMP_TYPES",
    "LOOKABLE",
    "OBJECTS_FOR_TASK",
    "OPENABLE",
    "PLACES",
    "TASK_TYPES",
    "TOOLS",
    "TOOL_VERB",
    "kind_of",
]

TASK_TYPES = (
    "pick_and_place",
    "pick_two_and_place",
    "look_at_obj_in_light",
    "pick_clean_then_place",
    "pick_heat_then_place",
    "pick_cool_then_place",
)

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
#: receptacle type -> the verb it does ("microwave" -> "heat").
TOOL_VERB: dict[str, str] = {kind: verb for verb, kinds in TOOLS.values() for kind in kinds}
#: Areas that can hold a lamp: area -> (lamp type, receptacle types it stands on or by).
LAMP_HOSTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bedroom": ("desklamp", ("desk", "sidetable", "dresser")),
    "livingroom": ("floorlamp", ("sidetable", "armchair", "dresser")),
}
LAMP_TYPES: tuple[str, ...] = tuple(lamp for lamp, _ in LAMP_HOSTS.values())

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
    ),
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
    ),
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
    ),
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
    ),
    "statue": (
        "shelf",
        "coffeetable",
        "sidetable",
        "tvstand",
        "dresser",
        "safe",
        "diningtable",
        "desk",
    ),
    "watch": ("safe", *_SMALL),
    "newspaper": (
        "sofa",
        "coffeetable",
        "sidetable",
        "armchair",
        "diningtable",
        "garbagecan",
        "dresser",
    ),
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
    ),
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
    ),
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
#: task type -> the two ways its task text is written (ALFWorld's wording);
#: {obj} is an object type, {place} the target receptacle type or, for look-at,
#: the lamp type.
GOAL_TEXTS: dict[str, tuple[str, str]] = {
    "pick_and_place": ("put a {obj} in {place}.", "put some {obj} on {place}."),
    "pick_two_and_place": ("put two {obj} in {place}.", "find two {obj} and put them in {place}."),
    "look_at_obj_in_light": (
        "look at {obj} under the {place}.",
        "examine the {obj} with the {place}.",
    ),
    "pick_clean_then_place": (
        "put a clean {obj} in {place}.",
        "clean some {obj} and put it in {place}.",
    ),
    "pick_heat_then_place": (
        "put a hot {obj} in {place}.",
        "heat some {obj} and put it in {place}.",
    ),
    "pick_cool_then_place": (
        "put a cool {obj} in {place}.",
        "cool some {obj} and put it in {place}.",
    ),
}
#: task type -> the object types it may ask for (the other types may ask for any).
OBJECTS_FOR_TASK: dict[str, frozenset[str]] = {
    "pick_heat_then_place": HEATABLE,
    "pick_cool_then_place": COOLABLE,
    "pick_clean_then_place": CLEANABLE,
    "look_at_obj_in_light": LOOKABLE,
}


def kind_of(name: str) -> str:
    """The type of a numbered thing ("TYPE N"): "apple" for "apple 1"."""
    return name.rpartition(" ")[0]
