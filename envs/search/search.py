"""envgym/Search-v0: answer questions by searching a corpus (Search-R1 style).

The env itself: its difficulty presets, the reply formats it reads, the
observations it writes and the rewards it pays. The corpus is the generated
fictional world of `world.py` (no downloads) or a real corpus and question set
from `loaders.py`; `sources.py` builds the retriever (in process or a retrieval
server) and shares worlds and indexes by every env in a process, and indexes
are cached on disk, so a reset costs milliseconds. Answers are scored in
`scoring.py`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from envgym.core import (
    MAX_TASK_SEED,
    Preset,
    TextEnv,
    Turn,
    check_int,
    check_number,
    setting,
    short_repr,
)
from envgym.envs.search.questions import MAX_HOPS, Question, make_question, parse_task_id
from envgym.envs.search.scoring import exact_match, token_f1
from envgym.envs.search.sources import loaded_questions, open_retriever
from envgym.envs.search.world import MAX_DOCS, MIN_DOCS, World, load_world
from envgym.parsing import first_tag, parse_tool_calls, strip_think
from envgym.text import quote_for_feedback, to_ascii

__all__ = ["SEARCH_TOOL", "SearchEnv", "SearchPreset", "exact_match", "token_f1"]

#: Share of comparison questions among 2- and 4-hop questions.
COMPARISON_SHARE = 1 / 3
MAX_TOP_K = 20
MAX_QUERY_CHARS = 1000
MAX_QUESTION_CHARS = 4000
MAX_CALLS_PER_TURN = 5
#: Largest `f1_weight` and `format_penalty` (rewards stay within a few units).
MAX_REWARD_WEIGHT = 10.0
_INFO_BUDGET = 14_000  # characters of retrieved text per observation

#: The search tool as an OpenAI function schema (``info["tools"]``).
SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": (
            "Search the encyclopedia. Returns the most relevant documents, each with its "
            "title and text, inside <information>...</information>."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What to look for, e.g. the name of a person or place.",
                }
            },
            "required": ["query"],
        },
    },
}

_FORMAT_HINT = (
    "Reply with <search>your query</search> to search, or <answer>your answer</answer> to "
    'answer (or call the search tool: <tool_call>{"name": "search", "arguments": '
    '{"query": "..."}}</tool_call>).'
)


@dataclass(frozen=True)
class SearchPreset(Preset):
    """A Search difficulty level: the hop counts its generated questions are drawn from."""

    hops: tuple[int, ...] = setting((1,), meaning=f"hop counts, each from 1 to {MAX_HOPS}")


class SearchEnv(TextEnv):
    """Search: answer a question by searching an encyclopedia (Search-R1 style).

    ## Description
    Each episode asks one question. The agent searches a corpus, reads the
    documents that come back, and answers. By default the corpus is a
    generated fictional world (`envgym.envs.search.world`) of 100,000
    Wikipedia-style documents about people, cities, countries, organisations,
    works (novels, films, albums) and events, with attributes (birth year,
    occupation, founding year, population, release year) and relations
    (birthplace, employer, founder, headquarters, author / director / artist,
    publisher / studio / record label, host city, organizer, country, mayor,
    capital). Every name is invented and unique, so a model cannot answer from
    memory: it has to search. Documents also mention related entities
    ("Notable people born in X include ...") and carry distracting years and
    places, so a search returns near misses too.

    Questions are templated, HotpotQA / MuSiQue style
    (`envgym.envs.search.questions`):

    * single-hop (1 document): "In what year was Vemael Eleim born?", "What is
      the birthplace of Vemael Eleim?"
    * bridge (2 to 4 documents, each naming the next): "Who is the founder of
      the studio of The Road of Muthtraer?"
    * comparison (2 or 4 documents): "Who was born first, A or B?", "Whose
      founder was born later, Stuskro Holdings or Ovfes Press?"

    With ``corpus=`` and ``questions=`` it runs on real data instead: a
    Search-R1 JSONL corpus and an NQ / HotpotQA-style question file (see
    `envgym.envs.search.loaders`).

    ## Action Space
    Text: the model's whole reply, in Search-R1's format or as tool calls.
    ``<search>query</search>`` searches; ``<answer>text</answer>`` (or a final
    ``\\boxed{text}``) answers and ends the episode. A ``<tool_call>{"name":
    "search", "arguments": {"query": "..."}}</tool_call>`` also searches (up
    to 5 calls in one reply; ``info["tools"]`` has the schema). When a reply
    holds several of these, the first one counts, as in Search-R1.
    ``<think>...</think>`` is ignored. A reply with none of them, an empty
    query or answer, or a call to another tool is invalid: it gets feedback
    on the format and uses up the turn.

    ## Observation Space
    Text, printable ASCII. The first observation is ``Question: ...``. After a
    search: ``<information>Doc 1 (Title): text\\nDoc 2 (Title): text\\n...
    </information>`` with the ``top_k`` best documents (``No documents
    matched ...`` when none did). After an answer: whether it was correct.
    After an invalid reply: what was wrong and how to write a valid one.

    ## Starting State
    The question comes from the seed (or from ``options["task_id"]``): a hop
    count from the level, a kind (comparison for a third of 2- and 4-hop
    questions, else bridge; single at 1 hop), then the entities. Real question
    sets are drawn uniformly.

    ## Rewards
    On the answer turn: ``exact_match`` 1.0 when the answer equals a gold
    answer after SQuAD normalisation (lower case, no punctuation or articles),
    and ``f1``: ``f1_weight`` times the token F1 (default weight 0, so the
    reward is exact match as in Search-R1). Every invalid reply gets a
    ``format`` component of ``-format_penalty`` (default -0.1). Searches cost
    nothing. The components sum to the reward and are all present every step.

    ## Episode End
    Terminated on an answer (``info["success"]`` is True when it is an exact
    match). Truncated after ``max_turns`` turns (default 10).

    ## Info
    ``tools`` (the search tool schema), ``cost`` (``retrievals``: searches
    made this episode), ``privileged`` (``answer``, ``answers``: the gold
    answers; ``supporting_doc_ids``: the documents that together answer it, in
    reading order, for information-gain rewards; ``hops``; ``question_type``),
    ``state_key`` (the task and the set of documents retrieved so far), plus
    the shared keys. There is no ``admissible_actions``: replies are open text.

    ## Arguments
    ``difficulty``: ``easy`` (single-hop), ``medium`` (2 hops), ``hard`` (3
    and 4 hops), each with 10 turns (``SearchEnv.presets``, a `SearchPreset`
    per level). ``hops`` (an integer 1-4 or a list of them) overrides the
    level's. ``num_docs`` (corpus size, default 100,000; 200 to 2,000,000),
    ``distractors`` (0 to 1, default 0.5: how often documents mention related
    entities and carry a second distracting sentence) and ``world_seed``
    (default 0, below 2**63) shape the generated world. ``top_k`` (1-20, default 3)
    documents per search. ``retriever``: ``"bm25"`` (default), ``"dense"``
    (MiniLM + faiss) or any object with ``search(query, k)``;
    ``retriever_url`` / ``retriever_uds`` use a retrieval server (``envgym
    search serve``) instead; ``cache_dir`` is where indexes are kept.
    ``corpus`` (a JSONL path) and ``questions`` (a JSONL or JSON path) load
    real data (``questions`` with a retrieval server needs no ``corpus``).
    ``f1_weight`` and ``format_penalty`` (each 0 to 10) and ``max_turns`` as
    above. ``reset(options={"task_id": ...})`` replays a question by its id
    (``"bridge-h3-12345"``: the kind, 1 to 4 hops, a seed of at most 19
    digits; or a loaded question's id). A value out of these ranges is a
    ValueError that says what is allowed.

    ## Version History
    * v0: initial version. Since then ``num_docs`` is checked against its
      2,000,000 maximum when the env is made, and ``f1_weight`` and
      ``format_penalty`` must be finite, at most 10.
    """

    system_prompt: ClassVar[str] = (
        "Answer the given question. You can search an encyclopedia as often as you need: "
        "write <search>query</search> and the top results come back between <information> "
        "and </information>. You may instead call the search tool with "
        '<tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>. Think '
        "inside <think>...</think> if you like. When you know the answer, write it inside "
        "<answer>...</answer>, without detailed explanation, e.g. <answer>Beijing</answer>."
    )
    presets: ClassVar[dict[str, SearchPreset]] = {
        "easy": SearchPreset(hops=(1,), max_turns=10),
        "medium": SearchPreset(hops=(2,), max_turns=10),
        "hard": SearchPreset(hops=(3, 4), max_turns=10),
    }
    #: The retriever and loaded data are shared and immutable: not episode state.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_retriever_choice", "_retriever_obj", "_loaded")

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        hops: int | Sequence[int] | None = None,
        num_docs: int = 100_000,
        distractors: float = 0.5,
        world_seed: int = 0,
        top_k: int = 3,
        retriever: Any = "bm25",
        retriever_url: str | None = None,
        retriever_uds: str | Path | None = None,
        cache_dir: str | Path | None = None,
        corpus: str | Path | None = None,
        questions: str | Path | None = None,
        f1_weight: float = 0.0,
        format_penalty: float = 0.1,
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            difficulty=difficulty, render_mode=render_mode, hops=hops, max_turns=max_turns
        )
        top_k = check_int(top_k, "top_k", 1, MAX_TOP_K, "documents per search")
        num_docs = check_int(num_docs, "num_docs", MIN_DOCS, MAX_DOCS, "documents in the world")
        distractors = check_number(distractors, "distractors", 0.0, 1.0)
        world_seed = check_int(world_seed, "world_seed", 0, MAX_TASK_SEED)
        f1_weight = check_number(f1_weight, "f1_weight", 0.0, MAX_REWARD_WEIGHT)
        format_penalty = check_number(format_penalty, "format_penalty", 0.0, MAX_REWARD_WEIGHT)
        if retriever_url is not None and retriever_uds is not None:
            raise ValueError("give retriever_url= or retriever_uds=, not both")
        remote = retriever_url is not None or retriever_uds is not None
        if corpus is not None and questions is None:
            raise ValueError(
                "corpus= needs questions= too (an NQ / HotpotQA-style JSONL file with "
                '"question" and "golden_answers" or "answer")'
            )
        if questions is not None and corpus is None and not remote:
            raise ValueError(
                "questions= needs the corpus to search: pass corpus= (a Search-R1 JSONL file) "
                "or retriever_url= / retriever_uds= (a retrieval server holding it)"
            )
        if isinstance(retriever, str) and retriever not in ("bm25", "dense"):
            raise ValueError(
                f"retriever must be 'bm25', 'dense' or a retriever object, not {retriever!r}"
            )
        if not isinstance(retriever, str) and not callable(getattr(retriever, "search", None)):
            raise ValueError("retriever must be 'bm25', 'dense' or an object with search(query, k)")
        self.top_k = top_k
        self.num_docs = num_docs
        self.distractors = float(distractors)
        self.world_seed = world_seed
        self.f1_weight = float(f1_weight)
        self.format_penalty = float(format_penalty)
        self._retriever_choice = retriever
        self._retriever_url = retriever_url
        self._retriever_uds = None if retriever_uds is None else str(retriever_uds)
        self._cache_dir = cache_dir
        self._corpus_path = corpus
        self._questions_path = questions
        self._retriever_obj: Any = None
        self._loaded: tuple[list[Question], dict[str, Question]] | None = None
        self._question: Question | None = None
        self._retrievals = 0
        self._seen: frozenset[str] = frozenset()

    # -------------------------------------------------------------- config
    def _configure(self, config: SearchPreset) -> SearchPreset:
        return replace(config, hops=_check_hops(config.hops))

    @property
    def world(self) -> World | None:
        """The generated world (None when the env runs on loaded questions)."""
        if self._questions_path is not None:
            return None
        cache = None if self._cache_dir is None else str(self._cache_dir)
        return load_world(self.world_seed, self.num_docs, self.distractors, cache)

    @property
    def retriever(self) -> Any:
        """The retriever, built (or loaded from the disk cache) on the first search."""
        if self._retriever_obj is None:
            generated = self._questions_path is None
            self._retriever_obj = open_retriever(
                self._retriever_choice,
                url=self._retriever_url,
                uds=self._retriever_uds,
                corpus=self._corpus_path,
                world=(self.world_seed, self.num_docs, self.distractors) if generated else None,
                cache_dir=self._cache_dir,
            )
        return self._retriever_obj

    # ------------------------------------------------------------- episode
    def _new_task(self, options: dict[str, Any]) -> str:
        rng = self.np_random
        if self._questions_path is not None:
            if self._loaded is None:
                self._loaded = loaded_questions(self._questions_path, self._corpus_path)
            questions, by_id = self._loaded
            if "task_id" in options:
                task_id = options["task_id"]
                ok = isinstance(task_id, str | int) and not isinstance(task_id, bool)
                question = by_id.get(str(task_id)) if ok else None
                if question is None:
                    raise ValueError(
                        f"task_id {short_repr(task_id)} is not in {self._questions_path}; use "
                        "an id from info['task_id']"
                    )
            else:
                question = questions[int(rng.integers(len(questions)))]
        else:
            if "task_id" in options:
                kind, hops, seed = parse_task_id(options["task_id"])
            else:
                choices = self.config.hops
                hops = choices[int(rng.integers(len(choices)))]
                seed = int(rng.integers(0, 2**62))
                if hops == 1:
                    kind = "single"
                elif hops in (2, 4) and rng.random() < COMPARISON_SHARE:
                    kind = "comparison"
                else:
                    kind = "bridge"
            question = make_question(self.world, kind, hops, seed)
        self._question = question
        self.task_id = question.task_id
        self._retrievals = 0
        self._seen = frozenset()
        return "Question: " + to_ascii(" ".join(question.question.split()))[:MAX_QUESTION_CHARS]

    def _act(self, action: str) -> Turn:
        components = {"exact_match": 0.0, "f1": 0.0, "format": 0.0}
        kind, value = first_tag(
            action, ("search", "answer"), tool_calls=True, boxed_as="answer", hint=_FORMAT_HINT
        )
        if kind == "answer":
            if not value:
                return self._invalid(components, "Your answer is empty. " + _FORMAT_HINT)
            answers = self._question.answers
            em = exact_match(value, answers)
            components["exact_match"] = em
            components["f1"] = self.f1_weight * token_f1(value, answers)
            verdict = "correct" if em else "not correct"
            text = f"Your answer {quote_for_feedback(value, 80)} is {verdict}."
            return Turn(text, components, terminated=True, success=em == 1.0)
        if kind == "search":
            if not value:
                return self._invalid(components, "Your search query is empty. " + _FORMAT_HINT)
            return Turn(self._search([value]), components)
        if kind == "tool_call":
            calls, error = parse_tool_calls(strip_think(action))
            queries = []
            for call in calls[:MAX_CALLS_PER_TURN]:
                query = call.arguments.get("query")
                if call.name != "search":
                    return self._invalid(
                        components,
                        f"There is no tool {quote_for_feedback(call.name, 40)}; the only tool "
                        "is search. " + _FORMAT_HINT,
                    )
                if not isinstance(query, str) or not query.strip():
                    return self._invalid(
                        components,
                        'The search tool needs a non-empty "query" string. ' + _FORMAT_HINT,
                    )
                queries.append(query.strip())
            if not queries:
                return self._invalid(components, f"{error} {_FORMAT_HINT}")
            return Turn(self._search(queries), components)
        return self._invalid(components, value)

    def _invalid(self, components: dict[str, float], text: str) -> Turn:
        components["format"] = -self.format_penalty
        return Turn(text, components, action_valid=False)

    def _search(self, queries: list[str]) -> str:
        budget = _INFO_BUDGET // (len(queries) * self.top_k)
        blocks = []
        seen = set(self._seen)
        for query in queries:
            # Lone surrogates and the like cannot reach a tokenizer or a server.
            query = query.encode("utf-8", "replace").decode("utf-8")[:MAX_QUERY_CHARS]
            hits = self.retriever.search(query, k=self.top_k)
            self._retrievals += 1
            lines = []
            for rank, hit in enumerate(hits, 1):
                seen.add(str(hit.doc_id))
                line = f"Doc {rank} ({to_ascii(hit.title)}): {to_ascii(' '.join(hit.text.split()))}"
                if len(line) > budget:  # long passages are cut so top_k of them always fit
                    line = line[: budget - 3].rstrip() + "..."
                lines.append(line)
            if not lines:
                lines.append(f"No documents matched {quote_for_feedback(query, 80)}.")
            blocks.append("<information>" + "\n".join(lines) + "</information>")
        self._seen = frozenset(seen)
        return "\n".join(blocks)

    def _task_info(self) -> dict[str, Any]:
        question = self._question
        if question is None:
            return {}
        digest = hashlib.blake2b("\n".join(sorted(self._seen)).encode(), digest_size=8)
        return {
            "state_key": f"{question.task_id}|docs:{len(self._seen)}:{digest.hexdigest()}",
            "tools": [SEARCH_TOOL],
            "cost": {"retrievals": self._retrievals},
            "privileged": {
                "answer": question.answers[0],
                "answers": list(question.answers),
                "supporting_doc_ids": list(question.supporting_ids),
                "hops": question.hops,
                "question_type": question.kind,
            },
        }


def _check_hops(hops: Any) -> tuple[int, ...]:
    """`hops` (an int or a collection of them) as sorted distinct hop counts."""
    values = [hops] if isinstance(hops, int) and not isinstance(hops, bool) else hops
    if not isinstance(values, list | tuple | set | frozenset | range) or not values:
        values = [None]
    if any(isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= MAX_HOPS for h in values):
        raise ValueError(
            f"hops must be an integer from 1 to {MAX_HOPS} or a list of them, got "
            f"{short_repr(hops)}"
        )
    return tuple(sorted(set(values)))
