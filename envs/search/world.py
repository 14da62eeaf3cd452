"""The fictional world of the search env: its entities, their facts, and their documents.

`build_world(seed, num_docs, distractors)` invents people, cities, countries,
organisations, works and events with attributes and relations, and writes one
Wikipedia-style document per entity (in the words and sentence templates of
`vocabulary`). Every name is unique in the world, so a model cannot answer
from memory and exact match is fair. `load_world` keeps a built world on disk,
so a later process loads it in a fraction of the build time. Generation is
deterministic in the world seed (Python's `random.Random`, never the process
hash seed). Questions about the world are made in `questions`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from envgym.envs.search.vocabulary import (
    ADJECTIVES,
    EVENT_FLAVOURS,
    EVENT_KINDS,
    MENTIONS,
    NOUNS,
    OCCUPATIONS,
    ORG_KIND_NAMES,
    ORG_KINDS,
    TEMPLATES,
    WORK_KIND_NAMES,
    WORK_KINDS,
    Draw,
    Namer,
    article,
    join_names,
)

__all__ = [
    "ATTRIBUTES",
    "MAX_DOCS",
    "MIN_DOCS",
    "NUMERIC",
    "RELATIONS",
    "TYPE_SHARES",
    "World",
    "build_world",
    "load_world",
]

MIN_DOCS, MAX_DOCS = 200, 2_000_000

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


@lru_cache(maxsize=4)
def build_world(seed: int = 0, num_docs: int = 100_000, distractors: float = 0.5) -> World:
    """Generate the world for `seed` (cached per process; a few seconds for 100,000 docs)."""
    if not isinstance(num_docs, int) or not MIN_DOCS <= num_docs <= MAX_DOCS:
        raise ValueError(f"num_docs must be an integer from {MIN_DOCS} to {MAX_DOCS}")
    if not 0.0 <= distractors <= 1.0:
        raise ValueError(f"distractors must be a number from 0 to 1, got {distractors!r}")
    draw = Draw(seed)
    namer = Namer(draw)
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
    orgs_by_kind: dict[str, list[int]] = {k: [] for k in ORG_KIND_NAMES}
    for j, i in enumerate(orgs):
        kind = ORG_KIND_NAMES[j % len(ORG_KIND_NAMES)]
        orgs_by_kind[kind].append(i)
        kinds[i] = kind
        suffix_options = ORG_KINDS[kind][0]
        names[i] = namer.unique(lambda s=suffix_options: namer.word() + " " + choice(s))
        founder = pick("person")
        rel["founder"][i] = founder
        attr["founded"][i] = min(2020, attr["birth_year"][founder] + randint(22, 60))
        rel["headquarters"][i] = pick("city")
    title_makers = (
        lambda: f"The {choice(ADJECTIVES)} {choice(NOUNS)}",
        lambda: f"{choice(ADJECTIVES)} {choice(NOUNS)}",
        lambda: f"The {choice(NOUNS)} of {namer.word()}",
        lambda: f"{namer.word()} {choice(NOUNS)}",
        lambda: f"The {choice(ADJECTIVES)} {namer.word()}",
    )
    for i in works:
        kind = choice(WORK_KIND_NAMES)
        kinds[i] = kind
        names[i] = namer.unique(lambda: choice(title_makers)())
        creator = pick("person")
        rel["creator"][i] = creator
        attr["year"][i] = min(2023, attr["birth_year"][creator] + randint(20, 65))
        rel["publisher"][i] = choice(orgs_by_kind[WORK_KINDS[kind]])
    for i in events:
        kind = choice(EVENT_KINDS)
        kinds[i] = kind.lower()
        names[i] = namer.unique(
            lambda k=kind: (
                f"{namer.word()} {choice(EVENT_FLAVOURS)} {k}"
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

    The file is keyed by the parameters and a hash of the generator's source
    (this module and `vocabulary`), so any change to the generator makes a new
    world. `cache_dir` defaults to the retrieval cache (``$ENVGYM_CACHE/search``
    or ``~/.cache/envgym/search``).
    """
    if cache_dir is None:
        from envgym.retrieval import default_cache_dir

        root = default_cache_dir()
    else:
        root = Path(cache_dir)
    path = root / f"world-{_generator_hash()}-s{seed}-n{num_docs}-d{distractors:g}.json"
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
    draw: Draw,
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
    back: dict[str, dict[int, list[int]]] = {key: {} for key in MENTIONS}
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
        mentions = [(MENTIONS[key], back[key]) for key in mentions_by_type[etype]]
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
                fields["kind"] = ORG_KINDS[kinds[i]][1]
            elif etype in ("work", "event"):
                fields["kind"] = kinds[i]
            else:
                fields["population"] = f"{fields['population']:,}"
            sentences = []
            for options in slots:
                template, art_field, _ = options[int(rand() * len(options))]
                if art_field is not None:
                    following = str(fields[art_field])
                    fields["art"] = "a" if following[0].isdigit() else article(following)
                sentences.append(template.format_map(fields))
            for template, linked_of in mentions:
                linked = linked_of.get(i)
                if linked and rand() < distractors:
                    shown = join_names([names[j] for j in linked[:3]])
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


def _generator_hash() -> str:
    """A hash of the generator's source: this module and the vocabulary it writes in."""
    digest = hashlib.sha256()
    for source in (Path(__file__), Path(__file__).with_name("vocabulary.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]
