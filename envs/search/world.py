"""A fictional world for the search env: entities, encyclopedia documents, questions.

`build_world(seed, num_docs, distractors)` invents people, cities, countries,
organisations, works and events with attributes and relations, and writes one
Wikipedia-style document per entity. Every name is made of generated syllables
and unique in the world, so a model cannot answer from memory and exact match
is fair. `make_question(world, kind, hops, seed)` draws a templated question
(single-hop, bridge, or comparison, 1 to 4 hops) with its gold answer and the
ids of the documents that support it.

The sentence and question templates are module constants: they are the
documented language of the world, which the oracle reads the way a person
reads English. Generation is deterministic in the world seed (Python's
`random.Random`, never the process hash seed).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import string
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from envgym.core import short_repr

__all__ = [
    "COMPARISONS",
    "ENTITY_QUESTIONS",
    "ATTRIBUTE_QUESTIONS",
    "FIELD_PATTERNS",
    "NOUN_RELATIONS",
    "QUESTION_KINDS",
    "Question",
    "TEMPLATES",
    "World",
    "build_world",
    "load_world",
    "make_question",
    "normalize_answer",
    "parse_task_id",
]

QUESTION_KINDS = ("single", "bridge", "comparison")
MIN_DOCS, MAX_DOCS = 200, 2_000_000
MAX_HOPS = 4

#: Share of the documents each entity type gets (countries at least 8).
TYPE_SHARES = (
    ("country", 0.0015),
    ("city", 0.08),
    ("person", 0.5),
    ("org", 0.14),
    ("work", 0.2),
    ("event", 0.0785),
)
#: type -> relation -> type of the related entity. Every relation is total:
#: each entity of the type has exactly one, so any chain can be followed.
RELATIONS: dict[str, dict[str, str]] = {
    "person": {"birthplace": "city", "employer": "org"},
    "org": {"founder": "person", "headquarters": "city"},
    "work": {"creator": "person", "publisher": "org"},
    "event": {"location": "city", "organizer": "org"},
    "city": {"country": "country", "mayor": "person"},
    "country": {"capital": "city"},
}
#: type -> attributes with a value (numbers compare in comparison questions).
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "person": ("birth_year", "occupation"),
    "org": ("founded",),
    "work": ("year",),
    "event": ("year",),
    "city": ("founded", "population"),
    "country": ("population",),
}
NUMERIC = frozenset({"birth_year", "founded", "year", "population"})

# ---------------------------------------------------------------- vocabulary
_ONSETS = (
    tuple("b br c d dr f g gr h j k kr l m n p pr r s sh st t th tr v vr z w".split()) + ("",) * 3
)
_VOWELS = tuple("a e i o u a e o ae ei ou ia y".split())
_CODAS = tuple("n r l s th m x nd rn sk v k".split()) + ("",) * 3
OCCUPATIONS = tuple(
    (
        "architect astronomer botanist cartographer chemist composer economist engineer "
        "geologist historian illustrator journalist linguist mathematician painter "
        "philosopher photographer physician physicist poet sculptor novelist diplomat "
        "explorer inventor lawyer librarian merchant playwright surgeon violinist zoologist "
        "actor singer chef athlete banker pilot shipbuilder teacher"
    ).split()
)
_ADJECTIVES = tuple(
    (
        "Amber Ashen Bitter Broken Burning Copper Crimson Distant Drowned Empty Falling "
        "Forgotten Frozen Gilded Glass Golden Hidden Hollow Iron Ivory Last Lonely Lost "
        "Midnight Northern Pale Quiet Restless Salt Scarlet Secret Silent Silver Sleeping "
        "Southern Stone Summer Sunken Velvet Wandering Western Wild Winter Wooden Hungry "
        "Patient Crooked Painted Burnt Narrow Endless Second Little Bright Dark Cold"
    ).split()
)
_NOUNS = tuple(
    (
        "Anchor Archive Bell Bridge Candle Cathedral Compass Crown Desert Door Dream Echo "
        "Engine Feather Field Fire Forest Garden Gate Harbor Horizon House Island Lantern "
        "Letter Map Meridian Mirror Moon Mountain Orchard Passage Piano River Road Sea "
        "Shadow Ship Song Star Storm Tide Tower Train Valley Voyage Wall Window Wolf "
        "Clock Thread Kingdom Lighthouse Orchid Quarry Signal Theatre Violin Well"
    ).split()
)
_EVENT_KINDS = tuple(
    (
        "Festival Summit Exhibition Conference Fair Regatta Games Congress Expedition Carnival"
    ).split()
)
_EVENT_FLAVOURS = tuple(
    (
        "Lantern Harvest River Winter Spring Music Trade Science Film Maritime Book Garden "
        "Mountain Glass Art"
    ).split()
)
#: org kind -> (name suffixes, noun used in its document)
_ORG_KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "company": (("Industries", "Holdings", "Group", "Works", "Systems", "Trading Company"),
                "company"),
    "publisher": (("Press", "Books", "Publishing"), "publishing house"),
    "studio": (("Pictures", "Studios", "Films"), "film studio"),
    "label": (("Records", "Music", "Sound"), "record label"),
    "university": (("University", "Institute", "College"), "university"),
}  # fmt: skip
_ORG_KIND_NAMES = tuple(_ORG_KINDS)
#: work kind -> org kind that publishes it
WORK_KINDS = {"novel": "publisher", "film": "studio", "album": "label"}
_WORK_KIND_NAMES = tuple(WORK_KINDS)

# ----------------------------------------------------------------- templates
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
_MENTIONS = {
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

# --------------------------------------------------------------- questions
#: (type, field) -> question templates about one entity or chain ``{x}``.
ATTRIBUTE_QUESTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("person", "birth_year"): ("In what year was {x} born?", "When was {x} born?"),
    ("person", "occupation"): ("What is the occupation of {x}?", "What kind of work does {x} do?"),
    ("org", "founded"): ("In what year was {x} founded?", "When was {x} established?"),
    ("city", "founded"): ("In what year was {x} founded?", "When was {x} established?"),
    ("work", "year"): ("In what year was {x} released?", "When did {x} come out?"),
    ("event", "year"): ("In what year did {x} take place?", "When was {x} held?"),
    ("city", "population"): ("What is the population of {x}?", "How many people live in {x}?"),
    ("country", "population"): ("What is the population of {x}?", "How many people live in {x}?"),
}
#: type of the answer entity -> question templates whose answer is a name.
ENTITY_QUESTIONS: dict[str, tuple[str, ...]] = {
    "person": ("Who is {x}?",),
    "city": ("What is {x}?",),
    "org": ("What is {x}?",),
    "country": ("What is {x}?",),
}
#: (type, relation) -> noun in a chain phrase "the NOUN of X" (works: per kind).
RELATION_NOUNS: dict[tuple[str, str], str] = {
    ("person", "birthplace"): "birthplace",
    ("person", "employer"): "employer",
    ("org", "founder"): "founder",
    ("org", "headquarters"): "headquarters city",
    ("event", "location"): "host city",
    ("event", "organizer"): "organizer",
    ("city", "country"): "country",
    ("city", "mayor"): "mayor",
    ("country", "capital"): "capital",
}
_WORK_NOUNS = {
    "creator": {"novel": "author", "film": "director", "album": "artist"},
    "publisher": {"novel": "publisher", "film": "studio", "album": "record label"},
}
#: noun in a question -> relation it names
NOUN_RELATIONS: dict[str, str] = {
    **{noun: rel for (_, rel), noun in RELATION_NOUNS.items()},
    **{noun: rel for rel, nouns in _WORK_NOUNS.items() for noun in nouns.values()},
}
#: verb phrase of a comparison question -> (field, True if the larger value wins)
COMPARISONS: dict[str, tuple[str, bool]] = {
    "was born first": ("birth_year", False),
    "was born later": ("birth_year", True),
    "was founded first": ("founded", False),
    "was founded more recently": ("founded", True),
    "was released first": ("year", False),
    "was released more recently": ("year", True),
    "took place first": ("year", False),
    "took place more recently": ("year", True),
    "has the larger population": ("population", True),
    "has the smaller population": ("population", False),
}
_COMPARE_PHRASES: dict[tuple[str, str], tuple[str, str]] = {
    ("person", "birth_year"): ("was born first", "was born later"),
    ("org", "founded"): ("was founded first", "was founded more recently"),
    ("city", "founded"): ("was founded first", "was founded more recently"),
    ("work", "year"): ("was released first", "was released more recently"),
    ("event", "year"): ("took place first", "took place more recently"),
    ("city", "population"): ("has the larger population", "has the smaller population"),
    ("country", "population"): ("has the larger population", "has the smaller population"),
}


@dataclass(frozen=True)
class Question:
    """One question with its gold answers and supporting documents."""

    task_id: str
    question: str
    answers: tuple[str, ...]
    supporting_ids: tuple[str, ...]
    hops: int | None
    kind: str

    def __deepcopy__(self, memo: dict[int, Any]) -> Question:
        return self  # immutable: snapshots share it


@dataclass(frozen=True, eq=False)
class World:
    """Entities (by global index), their facts and their documents.

    Relation lists hold the index of the related entity, or -1 where the
    relation does not apply to an entity's type; attribute lists hold the value
    or None. ``doc_ids[i]``, ``titles[i]`` and ``texts[i]`` are entity i's document.
    """

    seed: int
    num_docs: int
    distractors: float
    types: tuple[str, ...]
    ranges: dict[str, range]
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    relations: dict[str, list[int]]
    attributes: dict[str, list[Any]]
    doc_ids: tuple[str, ...]
    titles: tuple[str, ...]
    texts: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)

    def __deepcopy__(self, memo: dict[int, Any]) -> World:
        return self

    def value(self, entity: int, field: str) -> Any:
        """An attribute's value, or the related entity's index for a relation."""
        if field in self.relations:
            return self.relations[field][entity]
        return self.attributes[field][entity]


# ------------------------------------------------------------------ building
def _type_counts(num_docs: int) -> dict[str, int]:
    counts = {t: max(8, int(num_docs * share)) for t, share in TYPE_SHARES[:-1]}
    counts[TYPE_SHARES[-1][0]] = num_docs - sum(counts.values())
    if counts[TYPE_SHARES[-1][0]] < 8:
        raise ValueError(f"num_docs must be at least {MIN_DOCS}, got {num_docs}")
    return counts


class _Draw:
    """Fast draws from one `random.Random` (its own choice/randint are 3x slower)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rand = self.rng.random

    def choice(self, seq: Any) -> Any:
        return seq[int(self.rand() * len(seq))]

    def randint(self, low: int, high: int) -> int:
        return low + int(self.rand() * (high - low + 1))


class _Namer:
    """Unique fictional names from syllables."""

    def __init__(self, draw: _Draw) -> None:
        self.draw = draw
        self.used: set[str] = set()

    def word(self, low: int = 2, high: int = 2) -> str:
        choice = self.draw.choice
        while True:
            parts = [
                choice(_ONSETS) + choice(_VOWELS) + choice(_CODAS)
                for _ in range(self.draw.randint(low, high))
            ]
            word = "".join(parts)
            if len(word) >= 4 and word.isalpha():
                return word.capitalize()

    def unique(self, make: Any) -> str:
        while True:
            name = make()
            key = _title_key(name)
            if key not in self.used:
                self.used.add(key)
                return name


def _title_key(name: str) -> str:
    name = name.lower()
    return name[4:] if name.startswith("the ") else name


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _join(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


@lru_cache(maxsize=4)
def build_world(seed: int = 0, num_docs: int = 100_000, distractors: float = 0.5) -> World:
    """Generate the world for `seed` (cached per process; a few seconds for 100,000 docs)."""
    if not isinstance(num_docs, int) or not MIN_DOCS <= num_docs <= MAX_DOCS:
        raise ValueError(f"num_docs must be an integer from {MIN_DOCS} to {MAX_DOCS}")
    if not 0.0 <= distractors <= 1.0:
        raise ValueError(f"distractors must be a number from 0 to 1, got {distractors!r}")
    draw = _Draw(seed)
    namer = _Namer(draw)
    counts = _type_counts(num_docs)
    ranges: dict[str, range] = {}
    start = 0
    for etype, _ in TYPE_SHARES:
        ranges[etype] = range(start, start + counts[etype])
        start += counts[etype]
    n = start
    types: list[str] = [""] * n
    for etype, r in ranges.items():
        types[r.start : r.stop] = [etype] * len(r)
    names: list[str] = [""] * n
    kinds: list[str] = [""] * n
    rel = {r: [-1] * n for rels in RELATIONS.values() for r in rels}
    attr: dict[str, list[Any]] = {a: [None] * n for attrs in ATTRIBUTES.values() for a in attrs}
    randint, choice, rand = draw.randint, draw.choice, draw.rand

    def pick(etype: str) -> int:
        r = ranges[etype]
        return r.start + int(rand() * len(r))

    countries, cities = ranges["country"], ranges["city"]
    persons, orgs, works, events = ranges["person"], ranges["org"], ranges["work"], ranges["event"]
    suffixes = ("ia", "land", "ora", "istan", "ova", "ica", "heim", "mark")
    for i in countries:
        names[i] = namer.unique(lambda: namer.word() + choice(suffixes))
        attr["population"][i] = int(10 ** (5.5 + 2.5 * rand()))
    city_suffixes = (
        "",
        "",
        "",
        "",
        "ton",
        "ford",
        "holm",
        "burg",
        "mouth",
        "stead",
        "grad",
        "port",
    )
    for j, i in enumerate(cities):
        names[i] = namer.unique(lambda: namer.word() + choice(city_suffixes))
        # every country gets at least one city: its capital
        rel["country"][i] = countries.start + j if j < len(countries) else pick("country")
        attr["founded"][i] = randint(700, 1900)
        attr["population"][i] = int(10 ** (3.3 + 3.2 * rand()))
    for j, i in enumerate(countries):
        rel["capital"][i] = cities.start + j
    first_names = [namer.word() for _ in range(max(50, len(persons) // 16))]
    surnames = [namer.word() for _ in range(max(50, len(persons) // 3))]
    for i in persons:
        names[i] = namer.unique(lambda: choice(first_names) + " " + choice(surnames))
        attr["birth_year"][i] = randint(1700, 1995)
        attr["occupation"][i] = choice(OCCUPATIONS)
        rel["birthplace"][i] = pick("city")
        rel["employer"][i] = pick("org")
    orgs_by_kind: dict[str, list[int]] = {k: [] for k in _ORG_KIND_NAMES}
    for j, i in enumerate(orgs):
        kind = _ORG_KIND_NAMES[j % len(_ORG_KIND_NAMES)]
        orgs_by_kind[kind].append(i)
        kinds[i] = kind
        suffix_options = _ORG_KINDS[kind][0]
        names[i] = namer.unique(lambda s=suffix_options: namer.word() + " " + choice(s))
        founder = pick("person")
        rel["founder"][i] = founder
        attr["founded"][i] = min(2020, attr["birth_year"][founder] + randint(22, 60))
        rel["headquarters"][i] = pick("city")
    title_makers = (
        lambda: f"The {choice(_ADJECTIVES)} {choice(_NOUNS)}",
        lambda: f"{choice(_ADJECTIVES)} {choice(_NOUNS)}",
        lambda: f"The {choice(_NOUNS)} of {namer.word()}",
        lambda: f"{namer.word()} {choice(_NOUNS)}",
        lambda: f"The {choice(_ADJECTIVES)} {namer.word()}",
    )
    for i in works:
        kind = choice(_WORK_KIND_NAMES)
        kinds[i] = kind
        names[i] = namer.unique(lambda: choice(title_makers)())
        creator = pick("person")
        rel["creator"][i] = creator
        attr["year"][i] = min(2023, attr["birth_year"][creator] + randint(20, 65))
        rel["publisher"][i] = choice(orgs_by_kind[WORK_KINDS[kind]])
    for i in events:
        kind = choice(_EVENT_KINDS)
        kinds[i] = kind.lower()
        names[i] = namer.unique(
            lambda k=kind: (
                f"{namer.word()} {choice(_EVENT_FLAVOURS)} {k}"
                if rand() < 0.5
                else f"{namer.word()} {k}"
            )
        )
        attr["year"][i] = randint(1780, 2023)
        rel["location"][i] = pick("city")
        rel["organizer"][i] = pick("org")
    for i in cities:
        rel["mayor"][i] = pick("person")

    texts = _write_documents(draw, ranges, types, names, kinds, rel, attr, distractors)
    return _assemble(seed, distractors, names, kinds, rel, attr, texts)


def _assemble(
    seed: int,
    distractors: float,
    names: list[str],
    kinds: list[str],
    relations: dict[str, list[int]],
    attributes: dict[str, list[Any]],
    texts: list[str],
) -> World:
    n = len(names)
    ranges: dict[str, range] = {}
    types: list[str] = []
    for etype, count in _type_counts(n).items():
        ranges[etype] = range(len(types), len(types) + count)
        types.extend([etype] * count)
    return World(
        seed=seed,
        num_docs=n,
        distractors=distractors,
        types=tuple(types),
        ranges=ranges,
        names=tuple(names),
        kinds=tuple(kinds),
        relations=relations,
        attributes=attributes,
        doc_ids=tuple(str(i) for i in range(n)),
        titles=tuple(names),
        texts=tuple(texts),
    )


@lru_cache(maxsize=4)
def load_world(
    seed: int = 0,
    num_docs: int = 100_000,
    distractors: float = 0.5,
    cache_dir: str | None = None,
) -> World:
    """`build_world`, kept on disk: a later process loads it in a fraction of the time.

    The file is keyed by the parameters and a hash of this module's source, so
    any change to the generator makes a new world. `cache_dir` defaults to the
    retrieval cache (``$ENVGYM_CACHE/search`` or ``~/.cache/envgym/search``).
    """
    if cache_dir is None:
        from envgym.envs.search.retrieval import default_cache_dir

        root = default_cache_dir()
    else:
        root = Path(cache_dir)
    source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    path = root / f"world-{source}-s{seed}-n{num_docs}-d{distractors:g}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return _assemble(
            seed, distractors, data["names"], data["kinds"], data["relations"],
            data["attributes"], data["texts"],
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        pass  # not cached yet (or a damaged file): build it
    world = build_world(seed, num_docs, distractors)
    payload = {
        "names": world.names,
        "kinds": world.kinds,
        "relations": world.relations,
        "attributes": world.attributes,
        "texts": world.texts,
    }
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=root, suffix=".tmp", delete=False) as f:
            tmp = f.name
            f.write(json.dumps(payload))  # one C-encoded string: dump() streams slowly
        os.replace(tmp, path)  # atomic: concurrent processes never read half a file
        for stale in root.glob(f"world-*-s{seed}-n{num_docs}-d{distractors:g}.json"):
            if stale != path:  # made by an older generator: never read again
                stale.unlink(missing_ok=True)
    except OSError:  # a read-only cache only costs the next process the build time
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return world


def _write_documents(
    draw: _Draw,
    ranges: dict[str, range],
    types: list[str],
    names: list[str],
    kinds: list[str],
    rel: dict[str, list[int]],
    attr: dict[str, list[Any]],
    distractors: float,
) -> list[str]:
    n = len(names)
    randint, rand = draw.randint, draw.rand
    back: dict[str, dict[int, list[int]]] = {key: {} for key in _MENTIONS}
    for i in ranges["person"]:
        back["born_here"].setdefault(rel["birthplace"][i], []).append(i)
        back["employees"].setdefault(rel["employer"][i], []).append(i)
    for i in ranges["org"]:
        back["founded_orgs"].setdefault(rel["founder"][i], []).append(i)
        back["hq_here"].setdefault(rel["headquarters"][i], []).append(i)
    for i in ranges["work"]:
        back["created"].setdefault(rel["creator"][i], []).append(i)
        back["catalogue"].setdefault(rel["publisher"][i], []).append(i)
    for i in ranges["event"]:
        back["hosted"].setdefault(rel["location"][i], []).append(i)
        back["organized"].setdefault(rel["organizer"][i], []).append(i)
    for i in ranges["city"]:
        back["mayor_of"].setdefault(rel["mayor"][i], []).append(i)
        if rel["capital"][rel["country"][i]] != i:
            back["cities"].setdefault(rel["country"][i], []).append(i)
    mentions_by_type = {
        "person": ("founded_orgs", "created", "mayor_of"),
        "org": ("employees", "catalogue", "organized"),
        "work": (),
        "event": (),
        "city": ("born_here", "hq_here", "hosted"),
        "country": ("cities",),
    }

    def pick(etype: str) -> int:
        r = ranges[etype]
        return r.start + int(rand() * len(r))

    extras: dict[str, Any] = {
        "place": lambda: names[pick("city")],
        "someone": lambda: names[pick("person")],
        "land": lambda: names[pick("country")],
        "prize": lambda: names[pick("person")].rsplit(" ", 1)[1],
        "count": lambda: f"{randint(20, 9000):,}",
        "year": lambda: randint(1800, 2023),  # a year that answers nothing: a distractor
    }
    texts: list[str] = [""] * n
    for etype, entities in ranges.items():
        slots = [_compiled(t) for slot, t in TEMPLATES[etype].items() if slot != "filler"]
        fillers = _compiled(TEMPLATES[etype]["filler"])
        relations = [(r_name, rel[r_name]) for r_name in RELATIONS[etype]]
        attributes = [(a_name, attr[a_name]) for a_name in ATTRIBUTES[etype]]
        mentions = [(_MENTIONS[key], back[key]) for key in mentions_by_type[etype]]
        for i in entities:
            name = names[i]
            fields: dict[str, Any] = {"name": name}
            for r_name, targets in relations:
                fields[r_name] = names[targets[i]]
            for a_name, values in attributes:
                fields[a_name] = values[i]
            if etype == "person":
                fields["surname"] = name.rsplit(" ", 1)[1]
            elif etype == "org":
                fields["kind"] = _ORG_KINDS[kinds[i]][1]
            elif etype in ("work", "event"):
                fields["kind"] = kinds[i]
            else:
                fields["population"] = f"{fields['population']:,}"
            sentences = []
            for options in slots:
                template, art_field, _ = options[int(rand() * len(options))]
                if art_field is not None:
                    following = str(fields[art_field])
                    fields["art"] = "a" if following[0].isdigit() else _article(following)
                sentences.append(template.format_map(fields))
            for template, linked_of in mentions:
                linked = linked_of.get(i)
                if linked and rand() < distractors:
                    shown = _join([names[j] for j in linked[:3]])
                    sentences.append(
                        template.format(name=name, surname=fields.get("surname"), list=shown)
                    )
            first = int(rand() * len(fillers))
            chosen = (
                (first, (first + 1 + int(rand() * 2)) % 3) if rand() < distractors else (first,)
            )
            for k in chosen:
                template, _, needs = fillers[k]
                for key in needs:
                    fields[key] = extras[key]()
                sentence = template.format_map(fields)
                if name not in sentence[len(name) :]:  # never "twinned with" itself
                    sentences.append(sentence)
            texts[i] = " ".join(sentences)
    return texts


_ART_NEXT = re.compile(r"\{art\} \{(\w+)\}")
_EXTRA_FIELDS = ("place", "someone", "land", "prize", "count", "year")


def _compiled(templates: tuple[str, ...]) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """(template, the field its {art} agrees with, the filler fields it needs) per template."""
    out = []
    for template in templates:
        match = _ART_NEXT.search(template)
        needs = tuple(f for f in _EXTRA_FIELDS if "{" + f + "}" in template)
        out.append((template, match.group(1) if match else None, needs))
    return out


# ----------------------------------------------------------------- questions
_TASK_ID = re.compile(r"^(single|bridge|comparison)-h([1-4])-(\d{1,19})$")


def parse_task_id(task_id: Any) -> tuple[str, int, int]:
    """(kind, hops, seed) of a generated question's task id."""
    match = _TASK_ID.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise ValueError(
            f"task_id {short_repr(task_id)} is not a Search task id; use an id from "
            "info['task_id'], such as 'bridge-h3-12345' (single-h1-SEED, bridge-h2 to h4, "
            "comparison-h2 or h4; SEED up to 19 digits)"
        )
    return match.group(1), int(match.group(2)), int(match.group(3))


def _noun(world: World, entity: int, relation: str) -> str:
    etype = world.types[entity]
    if etype == "work":
        return _WORK_NOUNS[relation][world.kinds[entity]]
    return RELATION_NOUNS[(etype, relation)]


def _walk(world: World, rng: random.Random, start: int, steps: int) -> list[tuple[int, str]]:
    """A chain of `steps` relations from `start` through distinct entities, or []."""
    chain: list[tuple[int, str]] = []
    seen = {start}
    current = start
    for _ in range(steps):
        relation = rng.choice(tuple(RELATIONS[world.types[current]]))
        nxt = world.relations[relation][current]
        if nxt in seen:
            return []
        chain.append((current, relation))
        seen.add(nxt)
        current = nxt
    return chain


def _phrase(world: World, chain: list[tuple[int, str]]) -> str:
    """ "the founder of the publisher of X" for chain [(X, publisher), (P, founder)]."""
    text = world.names[chain[0][0]] if chain else ""
    for entity, relation in chain:
        text = f"the {_noun(world, entity, relation)} of {text}"
    return text


def _pick_entity(world: World, rng: random.Random, types: tuple[str, ...] | None = None) -> int:
    if types is None:
        return int(rng.random() * len(world))
    r = world.ranges[rng.choice(types)]
    return r.start + int(rng.random() * len(r))


def make_question(world: World, kind: str, hops: int, seed: int) -> Question:
    """The question of task id ``f"{kind}-h{hops}-{seed}"`` in `world`.

    ``single`` needs ``hops == 1``; ``bridge`` 2 to 4; ``comparison`` 2 or 4.
    """
    if kind == "single" and hops != 1 or kind == "bridge" and not 2 <= hops <= MAX_HOPS:
        raise ValueError(f"a {kind} question cannot have {hops} hops")
    if kind == "comparison" and hops not in (2, 4):
        raise ValueError("a comparison question has 2 or 4 hops")
    rng = random.Random(seed)
    task_id = f"{kind}-h{hops}-{seed}"
    for _ in range(1000):
        made = _comparison(world, rng, hops) if kind == "comparison" else _bridge(world, rng, hops)
        if made is not None:
            text, answer, support = made
            return Question(
                task_id=task_id,
                question=text,
                answers=(answer,),
                supporting_ids=tuple(world.doc_ids[e] for e in support),
                hops=hops,
                kind=kind,
            )
    raise RuntimeError(f"could not make a {kind} question with {hops} hops in this world")


def _bridge(world: World, rng: random.Random, hops: int) -> tuple[str, str, list[int]] | None:
    start = _pick_entity(world, rng)
    if rng.random() < 0.6:  # ends in an attribute: hops - 1 relations, then the value
        chain = _walk(world, rng, start, hops - 1)
        if hops > 1 and not chain:
            return None
        last = world.relations[chain[-1][1]][chain[-1][0]] if chain else start
        etype = world.types[last]
        field = rng.choice(ATTRIBUTES[etype])
        template = rng.choice(ATTRIBUTE_QUESTIONS[(etype, field)])
        phrase = _phrase(world, chain) if chain else world.names[start]
        value = world.attributes[field][last]
        answer = f"{value:,}" if field == "population" else str(value)
        support = [e for e, _ in chain] + [last]
    else:  # ends in a name: hops relations, the last one read off the last document
        chain = _walk(world, rng, start, hops)
        if not chain:
            return None
        last = world.relations[chain[-1][1]][chain[-1][0]]
        template = rng.choice(ENTITY_QUESTIONS[world.types[last]])
        phrase = _phrase(world, chain)
        answer = world.names[last]
        support = [e for e, _ in chain]
    text = template.format(x=phrase)
    if _title_key(answer) in text.lower():
        return None  # the question would give its answer away
    return text, answer, support


def _comparison(world: World, rng: random.Random, hops: int) -> tuple[str, str, list[int]] | None:
    if hops == 2:
        etype, field = rng.choice(tuple(_COMPARE_PHRASES))
        a, b = (_pick_entity(world, rng, (etype,)) for _ in range(2))
        targets = (a, b)
        wh = "Who" if etype == "person" else "Which"
        support = [a, b]
    else:
        etype = rng.choice(("person", "org", "work", "event", "city"))
        relation = rng.choice(tuple(RELATIONS[etype]))
        a, b = (_pick_entity(world, rng, (etype,)) for _ in range(2))
        if etype == "work" and world.kinds[a] != world.kinds[b]:
            return None
        ta, tb = world.relations[relation][a], world.relations[relation][b]
        target_type = RELATIONS[etype][relation]
        options = [f for f in ATTRIBUTES[target_type] if f in NUMERIC]
        if not options or ta == tb:
            return None
        field = rng.choice(options)
        targets = (ta, tb)
        wh = "Whose " + _noun(world, a, relation)
        support = [a, ta, b, tb]
        etype = target_type
    if a == b or len(set(support)) != len(support):
        return None
    va, vb = (world.attributes[field][t] for t in targets)
    if va == vb:
        return None
    phrase = rng.choice(_COMPARE_PHRASES[(etype, field)])
    larger_wins = COMPARISONS[phrase][1]
    winner = a if (va > vb) == larger_wins else b
    text = f"{wh} {phrase}, {world.names[a]} or {world.names[b]}?"
    return text, world.names[winner], support


# ----------------------------------------------------------------- scoring
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower().translate(_NO_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())
