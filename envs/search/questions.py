"""Multi-hop questions about the fictional world, HotpotQA / MuSiQue style.

`make_question(world, kind, hops, seed)` draws a templated question (single-hop,
bridge, or comparison, 1 to 4 hops) with its gold answer and the ids of the
documents that support it, in reading order. The task id ``f"{kind}-h{hops}-{seed}"``
names the question, and `parse_task_id` reads one back. The question templates
are the documented language of the questions, which the oracle parses.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from envgym.arguments import match_task_id
from envgym.envs.search.vocabulary import title_key
from envgym.envs.search.world import ATTRIBUTES, NUMERIC, RELATIONS, World

__all__ = [
    "ATTRIBUTE_QUESTIONS",
    "COMPARISONS",
    "ENTITY_QUESTIONS",
    "MAX_HOPS",
    "NOUN_RELATIONS",
    "QUESTION_KINDS",
    "RELATION_NOUNS",
    "Question",
    "make_question",
    "parse_task_id",
]

QUESTION_KINDS = ("single", "bridge", "comparison")
MAX_HOPS = 4


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


# ----------------------------------------------------------------- templates
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


# --------------------------------------------------------------- generation
_TASK_ID = re.compile(r"^(single|bridge|comparison)-h([1-4])-(\d{1,19})$")


def parse_task_id(task_id: Any) -> tuple[str, int, int]:
    """(kind, hops, seed) of a generated question's task id."""
    match = match_task_id(
        task_id,
        _TASK_ID,
        "a Search task id",
        "such as 'bridge-h3-12345' (single-h1-SEED, bridge-h2 to h4, "
        "comparison-h2 or h4; SEED up to 19 digits)",
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
    if title_key(answer) in text.lower():
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
