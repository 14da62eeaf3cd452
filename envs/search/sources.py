"""Where a Search env's documents, questions and retriever come from, shared per process.

Worlds, corpora, question sets and indexes are large, so every env in a process
that asks for the same one gets the same object: `open_retriever` builds (or
loads from the disk cache) the retriever over the generated world or a JSONL
corpus, or connects to a retrieval server; `loaded_questions` reads a question
file once. Files are keyed by path, modification time and size, so an edited
file is read again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envgym.envs.search.questions import Question
from envgym.envs.search.world import load_world
from envgym.per_process import PerProcess
from envgym.retrieval import Doc, RemoteRetriever, make_retriever

__all__ = ["check_server_world", "loaded_questions", "open_retriever"]

#: Worlds, corpora, question sets and retrievers, one per key in this process.
_shared = PerProcess().get


def _file_key(path: str | Path) -> tuple[str, int, int]:
    path = Path(path).expanduser().resolve()
    try:
        stat = path.stat()
    except OSError:
        return (str(path), -1, -1)
    return (str(path), stat.st_mtime_ns, stat.st_size)


def _world_docs(seed: int, num_docs: int, distractors: float, cache_dir: str | None) -> list[Doc]:
    world = load_world(seed, num_docs, distractors, cache_dir)
    return [
        Doc(doc_id, title, text)
        for doc_id, title, text in zip(world.doc_ids, world.titles, world.texts, strict=True)
    ]


def _corpus_docs(path: str | Path) -> list[Doc]:
    from envgym.envs.search.loaders import load_corpus

    return _shared(("corpus", *_file_key(path)), lambda: load_corpus(path))


def open_retriever(
    retriever: Any,
    *,
    url: str | None,
    uds: str | None,
    corpus: str | Path | None,
    world: tuple[int, int, float] | None,
    cache_dir: str | Path | None,
) -> Any:
    """The retriever a Search env searches with.

    A retrieval server when `url` or `uds` is given (checked to hold the
    generated world when `world` is ``(world_seed, num_docs, distractors)``);
    else `retriever` itself when it is an object; else a ``"bm25"`` or ``"dense"``
    index over `corpus` (a JSONL path) or over the generated `world`.
    """
    if url is not None or uds is not None:
        remote = _shared(("remote", url, uds), lambda: RemoteRetriever(url, uds=uds))
        if world is not None:
            check_server_world(remote.info(), *world)
        return remote
    if not isinstance(retriever, str):
        return retriever
    kind = retriever
    cache_key = None if cache_dir is None else str(cache_dir)
    if corpus is not None:
        docs = _corpus_docs(corpus)
        source: tuple[Any, ...] = ("corpus", *_file_key(corpus))
    else:
        assert world is not None, "a generated-world retriever needs world="
        source = ("world", *world, cache_key)
        docs = _shared(("docs", *source), lambda: _world_docs(*source[1:]))
    return _shared(
        ("index", kind, cache_key, *source),
        lambda: make_retriever(docs, kind=kind, cache_dir=cache_dir),
    )


def check_server_world(
    info: dict[str, Any], world_seed: int, num_docs: int, distractors: float
) -> None:
    """Generated questions need the server to hold the same generated world."""
    ours = {"num_docs": num_docs, "world_seed": world_seed}
    ours["distractors"] = distractors
    differ = [
        f"{key}={info[key]!r} (the env has {value!r})"
        for key, value in ours.items()
        if info.get(key) is not None and info[key] != value
    ]
    if info.get("corpus") not in (None, "generated"):
        differ.append(f"corpus={info['corpus']!r} (the env generates its world)")
    if differ:
        raise ValueError(
            f"the retrieval server does not hold this env's world: {', '.join(differ)}; "
            "start it with the same --docs / --world-seed / --distractors, or make the env "
            "with matching num_docs= / world_seed= / distractors="
        )


def loaded_questions(
    path: str | Path, corpus: str | Path | None
) -> tuple[list[Question], dict[str, Question]]:
    """The questions of an NQ / HotpotQA-style file, and the same by task id; with a
    `corpus`, supporting titles become its document ids."""
    from envgym.envs.search.loaders import load_questions

    docs = _corpus_docs(corpus) if corpus is not None else None

    def load() -> tuple[list[Question], dict[str, Question]]:
        questions = load_questions(path, docs)
        return questions, {q.task_id: q for q in questions}

    return _shared(("questions", *_file_key(path), corpus), load)
