"""The fictional world's vocabulary: the words, names and sentences it is written in.

Word lists (syllables, occupations, title words, organisation and event kinds),
the generator of unique invented names, and the sentence templates of every
document. The templates are the documented language of the world: the oracle
turns them into regular expressions and reads documents the way a person
reads English. Nothing here draws a random number except through the `Draw`
a caller passes in, so the world stays deterministic in its seed.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = [
    "ADJECTIVES",
    "CODAS",
    "EVENT_FLAVOURS",
    "EVENT_KINDS",
    "FIELD_KINDS",
    "FIELD_PATTERNS",
    "MENTIONS",
    "NOUNS",
    "OCCUPATIONS",
    "ONSETS",
    "ORG_KINDS",
    "ORG_KIND_NAMES",
    "TEMPLATES",
    "VOWELS",
    "WORK_KINDS",
    "WORK_KIND_NAMES",
    "Draw",
    "Namer",
    "article",
    "join_names",
    "title_key",
]

# ---------------------------------------------------------------- word lists
ONSETS = (
    tuple("b br c d dr f g gr h j k kr l m n p pr r s sh st t th tr v vr z w".split()) + ("",) * 3
)
VOWELS = tuple("a e i o u a e o ae ei ou ia y".split())
CODAS = tuple("n r l s th m x nd rn sk v k".split()) + ("",) * 3
OCCUPATIONS = tuple(
    (
        "architect astronomer botanist cartographer chemist composer economist engineer "
        "geologist historian illustrator journalist linguist mathematician painter "
        "philosopher photographer physician physicist poet sculptor novelist diplomat "
        "explorer inventor lawyer librarian merchant playwright surgeon violinist zoologist "
        "actor singer chef athlete banker pilot shipbuilder teacher"
    ).split()
)
ADJECTIVES = tuple(
    (
        "Amber Ashen Bitter Broken Burning Copper Crimson Distant Drowned Empty Falling "
        "Forgotten Frozen Gilded Glass Golden Hidden Hollow Iron Ivory Last Lonely Lost "
        "Midnight Northern Pale Quiet Restless Salt Scarlet Secret Silent Silver Sleeping "
        "Southern Stone Summer Sunken Velvet Wandering Western Wild Winter Wooden Hungry "
        "Patient Crooked Painted Burnt Narrow Endless Second Little Bright Dark Cold"
    ).split()
)
NOUNS = tuple(
    (
        "Anchor Archive Bell Bridge Candle Cathedral Compass Crown Desert Door Dream Echo "
        "Engine Feather Field Fire Forest Garden Gate Harbor Horizon House Island Lantern "
        "Letter Map Meridian Mirror Moon Mountain Orchard Passage Piano River Road Sea "
        "Shadow Ship Song Star Storm Tide Tower Train Valley Voyage Wall Window Wolf "
        "Clock Thread Kingdom Lighthouse Orchid Quarry Signal Theatre Violin Well"
    ).split()
)
EVENT_KINDS = tuple(
    (
        "Festival Summit Exhibition Conference Fair Regatta Games Congress Expedition Carnival"
    ).split()
)
EVENT_FLAVOURS = tuple(
    (
        "Lantern Harvest River Winter Spring Music Trade Science Film Maritime Book Garden "
        "Mountain Glass Art"
    ).split()
)
#: org kind -> (name suffixes, noun used in its document)
ORG_KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "company": (("Industries", "Holdings", "Group", "Works", "Systems", "Trading Company"),
                "company"),
    "publisher": (("Press", "Books", "Publishing"), "publishing house"),
    "studio": (("Pictures", "Studios", "Films"), "film studio"),
    "label": (("Records", "Music", "Sound"), "record label"),
    "university": (("University", "Institute", "College"), "university"),
}  # fmt: skip
ORG_KIND_NAMES = tuple(ORG_KINDS)
#: work kind -> org kind that publishes it
WORK_KINDS = {"novel": "publisher", "film": "studio", "album": "label"}
WORK_KIND_NAMES = tuple(WORK_KINDS)


# ------------------------------------------------------------------- names
class Draw:
    """Fast draws from one `random.Random` (its own choice/randint are 3x slower)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rand = self.rng.random

    def choice(self, seq: Any) -> Any:
        return seq[int(self.rand() * len(seq))]

    def randint(self, low: int, high: int) -> int:
        return low + int(self.rand() * (high - low + 1))


class Namer:
    """Unique fictional names from syllables."""

    def __init__(self, draw: Draw) -> None:
        self.draw = draw
        self.used: set[str] = set()

    def word(self, low: int = 2, high: int = 2) -> str:
        choice = self.draw.choice
        while True:
            parts = [
                choice(ONSETS) + choice(VOWELS) + choice(CODAS)
                for _ in range(self.draw.randint(low, high))
            ]
            word = "".join(parts)
            if len(word) >= 4 and word.isalpha():
                return word.capitalize()

    def unique(self, make: Any) -> str:
        while True:
            name = make()
            key = title_key(name)
            if key not in self.used:
                self.used.add(key)
                return name


def title_key(name: str) -> str:
    """A name as uniqueness sees it: lower case, without a leading "The "."""
    name = name.lower()
    return name[4:] if name.startswith("the ") else name


def article(word: str) -> str:
    """The indefinite article for a lower-case word: "a" or "an"."""
    return "an" if word[0] in "aeiou" else "a"


def join_names(names: list[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


# ----------------------------------------------------------- sentences
#: How each field is written in a document; the oracle turns templates into
#: regular expressions with these patterns.
FIELD_PATTERNS: dict[str, str] = {
    "name": r"[A-Z][A-Za-z' -]*?",
    "entity": r"[A-Z][A-Za-z' -]*?",
    "number": r"[0-9][0-9,]*",
    "word": r"[a-z][a-z ]*?",
    "art": r"an?",
}
#: field name -> pattern key in FIELD_PATTERNS
FIELD_KINDS: dict[str, str] = {
    "birthplace": "entity", "employer": "entity", "founder": "entity",
    "headquarters": "entity", "creator": "entity", "publisher": "entity",
    "location": "entity", "organizer": "entity", "country": "entity", "mayor": "entity",
    "capital": "entity", "surname": "entity", "place": "entity", "someone": "entity",
    "land": "entity", "prize": "entity",
    "birth_year": "number", "founded": "number", "year": "number", "population": "number",
    "count": "number", "occupation": "word", "kind": "word", "art": "art",
}  # fmt: skip

#: type -> slot -> sentence templates. ``{name}`` is the document's own entity.
TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {
    "person": {
        "lead": (
            "{name} (born {birth_year}) is {art} {occupation} from {birthplace}.",
            "{name} is {art} {occupation} who was born in {birthplace} in {birth_year}.",
            "{name} (born {birth_year} in {birthplace}) is {art} {occupation}.",
        ),
        "employer": (
            "{surname} worked for {employer} for most of the career that followed.",
            "For many years {surname} was employed by {employer}.",
            "{surname} later joined the staff of {employer}.",
        ),
        "filler": (
            "In {year}, {surname} received the {prize} Prize.",
            "{surname} spent several years in {place} before returning home.",
            "{surname} corresponded for decades with {someone}.",
        ),
    },
    "org": {
        "lead": (
            "{name} is {art} {kind} founded in {founded} by {founder}.",
            "{name} is {art} {kind} established by {founder} in {founded}.",
            "Founded by {founder} in {founded}, {name} is {art} {kind}.",
        ),
        "headquarters": (
            "Its headquarters are in {headquarters}.",
            "The organization is headquartered in {headquarters}.",
            "{name} is based in the city of {headquarters}.",
        ),
        "filler": (
            "In {year}, it opened a branch office in {place}.",
            "It employs about {count} people.",
            "In {year}, it was awarded the {prize} Medal.",
        ),
    },
    "work": {
        "lead": (
            "{name} is {art} {kind} by {creator}, first released in {year}.",
            "{name} is {art} {year} {kind} created by {creator}.",
            "Released in {year}, {name} is {art} {kind} by {creator}.",
        ),
        "publisher": (
            "It was brought out by {publisher}.",
            "The work was issued by {publisher}.",
            "{publisher} handled its release.",
        ),
        "filler": (
            "It won the {prize} Prize in {year}.",
            "Much of it is set in {place}.",
            "A revised edition appeared in {year}.",
        ),
    },
    "event": {
        "lead": (
            "{name} was {art} {kind} held in {location} in {year}.",
            "{name} took place in {location} in {year}.",
            "In {year}, {location} hosted the {kind} known as {name}.",
        ),
        "organizer": (
            "It was organized by {organizer}.",
            "The event was organized by {organizer}.",
            "{organizer} organized the event.",
        ),
        "filler": (
            "About {count} people attended.",
            "A smaller edition was later held in {place} in {year}.",
            "Its opening speech was given by {someone}.",
        ),
    },
    "city": {
        "lead": (
            "{name} is a city in {country}, founded in {founded}.",
            "{name} is a city in {country}. It was founded in {founded}.",
            "Founded in {founded}, {name} is a city in {country}.",
        ),
        "population": (
            "It has a population of {population}.",
            "The city has {population} inhabitants.",
            "As of the last census, {name} had {population} residents.",
        ),
        "mayor": (
            "The current mayor is {mayor}.",
            "{mayor} serves as its mayor.",
            "{name} is governed by mayor {mayor}.",
        ),
        "filler": (
            "The city lies {count} kilometres from {place}.",
            "It was twinned with {place} in {year}.",
            "A great fire damaged the old town in {year}.",
        ),
    },
    "country": {
        "lead": (
            "{name} is a country whose capital is {capital}.",
            "{name} is a nation with its capital at {capital}.",
            "The capital of the country {name} is {capital}.",
        ),
        "population": (
            "It has a population of {population}.",
            "The country has {population} inhabitants.",
            "As of the last census, {name} had {population} residents.",
        ),
        "filler": (
            "{name} declared independence in {year}.",
            "It shares a long border with {land}.",
            "Its parliament first met in {year}.",
        ),
    },
}

#: Back references: sentences naming related entities; they are what makes
#: a search for one entity also return others (distractors).
MENTIONS = {
    "born_here": "Notable people born in {name} include {list}.",
    "hq_here": "{name} is home to {list}.",
    "hosted": "Events held in {name} include {list}.",
    "cities": "Other cities in {name} include {list}.",
    "employees": "Notable employees have included {list}.",
    "catalogue": "Its catalogue includes {list}.",
    "organized": "It has organized {list}.",
    "founded_orgs": "{surname} founded {list}.",
    "created": "{surname} is known for {list}.",
    "mayor_of": "{surname} served as mayor of {list}.",
}
