"""The search env: the generated world, the Search-R1 and tool-call formats, scoring,
real-data loaders, remote retrieval, the oracle and the no-search baseline."""

from __future__ import annotations

import json
import pickle
import threading
from collections import Counter

import gymnasium as gym
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.agents import make_agent
from envgym.core import CHARSET
from envgym.envs.search import SearchEnv
from envgym.envs.search.oracle import NoSearchAgent, SearchOracle, parse_question
from envgym.envs.search.questions import make_question
from envgym.envs.search.scoring import normalize_answer
from envgym.envs.search.world import build_world, load_world
from envgym.retrieval import Doc, Hit, make_retriever
from envgym.retrieval.server import RetrievalServer

ENV_ID = "envgym/Search-v0"
SMALL = 3_000  # documents in the worlds most tests use
MEDIUM = 20_000  # documents for the oracle and recall measurements
_CHARS = frozenset(CHARSET)


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("search-cache")


def make(cache, **kwargs) -> SearchEnv:
    kwargs.setdefault("num_docs", SMALL)
    return gym.make(ENV_ID, cache_dir=cache, **kwargs)


def play(env, agent, seed: int) -> dict:
    obs, info = env.reset(seed=seed)
    agent.reset()
    while True:
        # The agents see the observation only: no privileged data.
        public = {k: v for k, v in info.items() if k != "privileged"}
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, public))
        if terminated or truncated:
            return info


# ------------------------------------------------------------------- world
def test_world_is_deterministic_fictional_and_unique():
    fresh = build_world.__wrapped__  # past the per-process cache
    a, b = fresh(5, 2_000, 0.5), fresh(5, 2_000, 0.5)
    assert a.texts == b.texts and a.names == b.names
    assert fresh(6, 2_000, 0.5).texts != a.texts
    keys = [normalize_answer(n) for n in a.names]
    assert len(set(keys)) == len(keys), "every name is unique in its world"
    for text in a.texts:
        assert set(text) <= _CHARS
    assert len(a.texts) == 2_000 and all(a.texts)


def test_world_is_kept_on_disk_for_the_next_process(tmp_path):
    stale = tmp_path / "world-0000000000000000-s2-n500-d0.5.json"  # an older generator's
    stale.write_text("{}")
    first = load_world(2, 500, 0.5, str(tmp_path))
    assert not stale.exists()
    (saved,) = tmp_path.glob("world-*-s2-n500-d0.5.json")
    load_world.cache_clear()  # as a new process would
    again = load_world(2, 500, 0.5, str(tmp_path))
    assert again.texts == first.texts and again.relations == first.relations
    assert again.types == first.types and again.attributes == first.attributes
    saved.write_text("not json")  # a damaged file is rebuilt, not trusted
    load_world.cache_clear()
    assert load_world(2, 500, 0.5, str(tmp_path)).texts == first.texts


def test_default_corpus_has_100k_documents():
    env = gym.make(ENV_ID)  # the default world, as a user gets it
    env.reset(seed=0)
    world = env.unwrapped.world
    assert len(world.texts) >= 100_000
    assert Counter(world.types).keys() == {"person", "city", "country", "org", "work", "event"}


def test_more_distractors_mean_more_cross_mentions():
    few, many = build_world(1, 2_000, 0.0), build_world(1, 2_000, 1.0)
    assert few.names == many.names  # same entities and facts, different prose
    mentions = ("include", "home to", "known for", "founded ")
    count = lambda w: sum(any(m in t for m in mentions) for t in w.texts)  # noqa: E731
    assert count(many) > 2 * count(few)


@pytest.mark.parametrize(
    "kind,hops", [("single", 1), ("bridge", 2), ("bridge", 3), ("bridge", 4), ("comparison", 2),
                  ("comparison", 4)]
)  # fmt: skip
def test_questions_come_with_answers_and_supporting_documents(kind, hops):
    world = build_world(0, SMALL, 0.5)
    text_of = dict(zip(world.doc_ids, world.texts, strict=True))
    for seed in range(40):
        q = make_question(world, kind, hops, seed)
        assert q.task_id == f"{kind}-h{hops}-{seed}" and q.hops == hops
        assert len(q.supporting_ids) == hops == len(set(q.supporting_ids))
        (answer,) = q.answers
        if kind == "comparison":
            assert f", {answer} or " in q.question or q.question.endswith(f" or {answer}?")
        else:
            assert normalize_answer(answer) not in normalize_answer(q.question)
            # The last supporting document states the answer.
            assert answer in text_of[q.supporting_ids[-1]]
        assert parse_question(q.question) is not None, q.question


# ------------------------------------------------------------- interaction
def test_search_shows_documents_in_information_tags(cache):
    env = make(cache, top_k=5)
    obs, info = env.reset(seed=0)
    assert obs.startswith("Question: ")
    assert info["tools"][0]["function"]["name"] == "search"
    assert info["cost"] == {"retrievals": 0}
    title = env.unwrapped.world.titles[int(info["privileged"]["supporting_doc_ids"][0])]
    obs, reward, terminated, truncated, info = env.step(
        f"<think>find it</think><search>{title}</search>"
    )
    assert obs.startswith("<information>Doc 1 (") and obs.endswith("</information>")
    assert f"({title}): " in obs
    assert obs.count("\nDoc ") == 4  # top_k documents
    assert reward == 0.0 and not terminated and info["action_valid"]
    assert info["cost"] == {"retrievals": 1}
    assert set(info["reward_components"]) == {"exact_match", "f1", "format"}


def test_tool_call_format_searches_and_rejects_other_tools(cache):
    env = make(cache)
    env.reset(seed=1)
    call = '<tool_call>{"name": "search", "arguments": {"query": "%s"}}</tool_call>'
    obs, _, _, _, info = env.step(call % "city" + call % "novel")
    assert obs.count("<information>") == 2 and info["cost"]["retrievals"] == 2
    obs, reward, _, _, info = env.step('<tool_call>{"name": "lookup", "arguments": {}}</tool_call>')
    assert not info["action_valid"] and "search" in obs and reward == pytest.approx(-0.1)
    obs, _, _, _, info = env.step('<tool_call>{"name": "search", "arguments": {}}</tool_call>')
    assert not info["action_valid"] and "query" in obs


def test_answers_score_exact_match_f1_and_format(cache):
    env = make(cache, f1_weight=0.5)
    obs, info = env.reset(seed=2, options={"task_id": "single-h1-7"})
    gold = info["privileged"]["answer"]
    obs, reward, terminated, _, info = env.step(f"<answer>  THE {gold.upper()}!</answer>")
    assert terminated and info["success"] and "correct" in obs
    assert info["reward_components"] == {"exact_match": 1.0, "f1": 0.5, "format": 0.0}
    assert reward == 1.5

    env.reset(seed=2, options={"task_id": "bridge-h2-3"})
    gold = env.unwrapped._question.answers[0]  # a two-word person or a name with a suffix
    partial = gold.split()[0]
    obs, reward, terminated, _, info = env.step(f"\\boxed{{{partial} Zzyx}}")
    assert terminated and not info["success"] and "not correct" in obs
    assert info["reward_components"]["exact_match"] == 0.0
    assert 0 < info["reward_components"]["f1"] < 0.5

    env.reset(seed=3)
    obs, reward, terminated, _, info = env.step("I think it is Paris.")
    assert not terminated and not info["action_valid"]
    assert reward == pytest.approx(-0.1) and "<answer>" in obs and "<search>" in obs
    _, _, _, _, info = env.step("<answer></answer>")
    assert not info["action_valid"]


def test_first_tag_counts_and_think_is_ignored(cache):
    env = make(cache)
    env.reset(seed=4)
    obs, _, terminated, _, info = env.step("<search>river</search> <answer>x</answer>")
    assert obs.startswith("<information>") and not terminated
    obs, _, terminated, _, _ = env.step("<think><answer>x</answer></think><search>lake</search>")
    assert obs.startswith("<information>") and not terminated
    _, _, terminated, _, _ = env.step("<answer>x</answer><search>lake</search>")
    assert terminated


def test_turn_limit_truncates(cache):
    env = make(cache, max_turns=2)
    env.reset(seed=5)
    assert env.step("<search>a</search>")[3] is False
    _, _, terminated, truncated, _ = env.step("<search>b</search>")
    assert truncated and not terminated


def test_privileged_answer_stays_out_of_the_observation(cache):
    env = make(cache, hops=3)
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        assert info["privileged"]["answer"] not in obs
        assert len(info["privileged"]["supporting_doc_ids"]) == 3
        assert info["privileged"]["hops"] == 3


def test_difficulty_sets_hops_and_task_ids_replay(cache):
    for difficulty, allowed in (("easy", {1}), ("medium", {2}), ("hard", {3, 4})):
        env = make(cache, difficulty=difficulty)
        hops = {env.reset(seed=s)[1]["privileged"]["hops"] for s in range(30)}
        assert hops == allowed
    env = make(cache, hops=[2, 4])
    obs, info = env.reset(seed=9)
    again, _ = make(cache).reset(seed=0, options={"task_id": info["task_id"]})
    assert again == obs
    with pytest.raises(ValueError, match="not a Search task id"):
        env.reset(options={"task_id": "nope"})


def test_hops_override_outlives_a_difficulty_change(cache):
    env = make(cache, hops=2)
    env.reset(seed=0, options={"difficulty": "hard"})
    assert env.unwrapped.config.hops == (2,)
    assert {env.reset(seed=s)[1]["privileged"]["hops"] for s in range(10)} == {2}
    plain = make(cache)
    plain.reset(seed=0, options={"difficulty": "hard"})
    assert plain.unwrapped.config.hops == (3, 4) and plain.unwrapped.max_turns == 10


def test_snapshot_leaves_out_the_retriever(cache):
    class Locked:  # a retriever that cannot be pickled (it holds a lock)
        def __init__(self):
            self.lock = threading.Lock()

        def search(self, query, k=3):
            return [Hit("x", "Echo", query, 1.0)]

    retriever = Locked()
    env = make(cache, retriever=retriever)
    env.reset(seed=0)
    env.step("<search>one</search>")
    snap = pickle.loads(pickle.dumps(env.unwrapped.snapshot()))
    _, _, _, _, before = env.step("<search>two</search>")
    env.unwrapped.restore(snap)
    _, _, _, _, after = env.step("<search>two</search>")
    assert after["state_key"] == before["state_key"] and after["turn"] == before["turn"] == 2
    assert env.unwrapped.retriever is retriever


def test_snapshot_restore_keeps_retrieved_documents(cache):
    env = make(cache)
    env.reset(seed=6)
    env.step("<search>harbor</search>")
    snap = pickle.loads(pickle.dumps(env.unwrapped.snapshot()))
    _, _, _, _, before = env.step("<search>festival</search>")
    env.step("<search>press</search>")
    env.unwrapped.restore(snap)
    _, _, _, _, after = env.step("<search>festival</search>")
    assert after["state_key"] == before["state_key"] and after["cost"] == before["cost"]


def test_bad_arguments_are_clear_errors(cache):
    with pytest.raises(ValueError, match="top_k"):
        make(cache, top_k=0)
    with pytest.raises(ValueError, match="hops"):
        make(cache, hops=5)
    with pytest.raises(ValueError, match="questions="):
        gym.make(ENV_ID, corpus="corpus.jsonl")
    with pytest.raises(ValueError, match="corpus="):
        gym.make(ENV_ID, questions="questions.jsonl")


def test_hostile_arguments_and_task_ids_are_refused_before_any_work(cache):
    # Each would otherwise build a world of a billion documents, pay NaN or
    # infinite rewards, or echo a megabyte back in the error.
    for kwargs, message in [
        ({"num_docs": 10**9}, "num_docs must be an integer from 200 to 2000000"),
        ({"format_penalty": float("nan")}, "format_penalty must be a number from 0 to 10"),
        ({"f1_weight": float("inf")}, "f1_weight must be a number from 0 to 10"),
        ({"world_seed": 2**70}, "world_seed must be an integer from 0 to"),
        ({"top_k": 10**6}, "top_k must be an integer from 1 to 20"),
        ({"max_turns": 10**12}, "max_turns must be an integer from 1 to 100000"),
    ]:
        with pytest.raises(ValueError, match=message):
            make(cache, **kwargs)
    env = make(cache)
    for task_id, message in [
        ("bridge-h3-" + "9" * 20, "not a Search task id"),
        ("bridge-h9-1", "not a Search task id"),
        ("comparison-h3-1", "comparison question has 2 or 4 hops"),
        ("x" * 1_000_000, "not a Search task id"),
        (["bridge-h3-1"] * 100_000, "not a Search task id"),
    ]:
        with pytest.raises(ValueError, match=message) as error:
            env.reset(options={"task_id": task_id})
        assert len(str(error.value)) < 400  # a huge id is not echoed back whole


# ---------------------------------------------------------------- real data
CORPUS = [
    {"id": "0", "contents": '"Ada Lovelace"\nAda Lovelace was an English mathematician.'},
    {"id": "1", "contents": '"Charles Babbage"\nCharles Babbage designed the Analytical Engine.'},
    {"id": "2", "contents": '"Analytical Engine"\nThe Analytical Engine is a mechanical computer.'},
    {"id": "3", "contents": '"Zurich"\nZurich is the largest city in Switzerland.'},
]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def real_files(tmp_path):
    corpus = _write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    nq = _write_jsonl(
        tmp_path / "nq.jsonl",
        [
            {"id": "nq-1", "question": "who designed the analytical engine?",
             "golden_answers": ["Charles Babbage", "Babbage"]},
            {"id": "nq-2", "question": "largest city in switzerland?",
             "golden_answers": ["Zurich"]},
        ],
    )  # fmt: skip
    hotpot = tmp_path / "hotpot.json"
    hotpot.write_text(
        json.dumps(
            [
                {"_id": "hp-1", "question": "What did the designer of the Analytical Engine "
                 "design?", "answer": "the Analytical Engine", "type": "bridge",
                 "supporting_facts": [["Charles Babbage", 0], ["Analytical Engine", 0]]}
            ]
        )
    )  # fmt: skip
    return corpus, nq, hotpot


def test_real_corpus_and_nq_questions_run(real_files, cache):
    corpus, nq, _ = real_files
    env = gym.make(ENV_ID, corpus=str(corpus), questions=str(nq), cache_dir=cache)
    obs, info = env.reset(seed=0, options={"task_id": "nq-1"})
    assert obs == "Question: who designed the analytical engine?"
    obs, *_ = env.step("<search>analytical engine designed</search>")
    assert "Doc 1 (Charles Babbage): Charles Babbage designed" in obs
    _, reward, terminated, _, info = env.step("<answer>Babbage</answer>")
    assert terminated and reward == 1.0 and info["success"]
    assert info["privileged"]["answers"] == ["Charles Babbage", "Babbage"]
    ids = {env.reset(seed=s)[1]["task_id"] for s in range(20)}
    assert ids == {"nq-1", "nq-2"}


def test_hotpot_json_maps_supporting_facts_to_documents(real_files, cache):
    corpus, _, hotpot = real_files
    env = gym.make(ENV_ID, corpus=str(corpus), questions=str(hotpot), cache_dir=cache)
    _, info = env.reset(seed=0)
    assert info["task_id"] == "hp-1"
    assert info["privileged"]["supporting_doc_ids"] == ["1", "2"]
    assert info["privileged"]["question_type"] == "bridge"
    _, reward, *_ = env.step("<answer>Analytical Engine</answer>")
    assert reward == 1.0


def test_malformed_question_file_names_the_line(tmp_path, real_files):
    corpus, *_ = real_files
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q1", "golden_answers": ["a"]}\n{"question": "q2"}\n')
    env = gym.make(ENV_ID, corpus=str(corpus), questions=str(bad))
    with pytest.raises(ValueError, match=r"bad.jsonl:2: no gold answer"):
        env.reset(seed=0)


@pytest.mark.parametrize("transport", ["uds", "url"])
def test_env_searches_through_a_retrieval_server(real_files, tmp_path, cache, transport):
    corpus, nq, _ = real_files
    docs = [Doc(r["id"], *r["contents"].split("\n", 1)) for r in CORPUS]
    docs = [Doc(d.id, d.title.strip('"'), d.text) for d in docs]
    uds = tmp_path / "search.sock" if transport == "uds" else None
    with RetrievalServer(make_retriever(docs, cache_dir=cache), uds=uds) as server:
        where = {"retriever_uds": server.uds} if uds else {"retriever_url": server.url}
        env = gym.make(ENV_ID, questions=str(nq), **where)  # no corpus: the server has it
        env.reset(seed=0, options={"task_id": "nq-2"})
        obs, _, _, _, info = env.step("<search>largest city switzerland</search>")
        assert obs.startswith("<information>Doc 1 (Zurich): ")
        assert info["cost"]["retrievals"] == 1


def test_generated_world_through_a_server_must_be_the_same_world(cache):
    world = make(cache).unwrapped.world
    docs = [Doc(*row) for row in zip(world.doc_ids, world.titles, world.texts, strict=True)]
    served = {"corpus": "generated", "world_seed": 0, "distractors": 0.5}
    with RetrievalServer(make_retriever(docs, cache_dir=cache), info=served) as server:
        env = make(cache, hops=3, retriever_url=server.url)
        info = play(env, SearchOracle(), seed=0)
        assert info["success"] and info["cost"]["retrievals"] == 3
        other = make(cache, world_seed=1, retriever_url=server.url)
        other.reset(seed=0)
        with pytest.raises(ValueError, match="world_seed=0 .the env has 1."):
            other.step("<search>anything</search>")


def test_any_object_with_search_is_a_retriever(cache):
    class Echo:
        def search(self, query, k=3):
            return [Hit("x", "Echo", f"you asked {query}", 1.0)]

    env = make(cache, retriever=Echo())
    env.reset(seed=0)
    obs, *_ = env.step("<search>hello</search>")
    assert obs == "<information>Doc 1 (Echo): you asked hello</information>"


# ---------------------------------------------------------- agents, recall
@pytest.fixture(scope="module")
def medium_envs(cache):
    return {h: make(cache, num_docs=MEDIUM, hops=h) for h in (1, 2, 3, 4)}


def test_oracle_answers_500_questions_across_hop_counts(medium_envs):
    oracle = SearchOracle()
    for hops, env in medium_envs.items():
        results = [play(env, oracle, seed)["success"] for seed in range(125)]
        accuracy = sum(results) / len(results)
        print(f"oracle accuracy at {hops} hops: {accuracy:.3f}")
        assert accuracy >= 0.95, (hops, accuracy)


def test_no_search_baseline_is_near_zero(medium_envs):
    agent = NoSearchAgent()
    scores: Counter = Counter()
    for env in medium_envs.values():
        for seed in range(100):
            info = play(env, agent, seed)
            kind = info["privileged"]["question_type"]
            scores[kind, "n"] += 1
            scores[kind, "ok"] += info["success"]
    for kind in ("single", "bridge", "comparison"):
        print(f"no-search {kind}: {scores[kind, 'ok']}/{scores[kind, 'n']}")
    looked_up = (scores["single", "ok"] + scores["bridge", "ok"]) / (
        scores["single", "n"] + scores["bridge", "n"]
    )
    assert looked_up <= 0.02
    # A comparison names its two candidates: guessing gets about half, no more.
    assert scores["comparison", "ok"] / scores["comparison", "n"] < 0.7


def test_bm25_recall_at_10_of_supporting_documents(medium_envs):
    recall = {}
    for hops, env in medium_envs.items():
        retriever = env.unwrapped.retriever
        found = total = 0
        for seed in range(100):
            obs, info = env.reset(seed=seed)
            got = {h.doc_id for h in retriever.search(obs.removeprefix("Question: "), k=10)}
            support = info["privileged"]["supporting_doc_ids"]
            found += sum(d in got for d in support)
            total += len(support)
        recall[hops] = found / total
    print("BM25 recall@10 by hops:", recall)
    assert recall[1] >= 0.8
    # Later hops are named only inside earlier documents: the question alone finds less.
    assert recall[4] < recall[1]


def test_make_agent_builds_the_oracle_and_the_no_search_baseline(cache):
    env = make(cache)
    oracle, baseline = make_agent("oracle", env), make_agent("nosearch", env)
    assert isinstance(oracle, SearchOracle) and isinstance(baseline, NoSearchAgent)
    # What a user sees: the oracle searches and answers, the baseline never searches.
    info = play(env, oracle, 0)
    assert info["success"] and info["cost"]["retrievals"] >= 1
    assert play(env, baseline, 0)["cost"]["retrievals"] == 0
    with pytest.raises(ValueError, match="Search-v0"):
        make_agent("nosearch", gym.make("envgym/FrozenLake-v0"))


def test_observations_are_printable_ascii(cache, real_files, tmp_path):
    corpus, *_ = real_files
    rows = CORPUS + [{"id": "9", "contents": '"Zürich Straße"\nZürich — “quoted” 東京'}]
    corpus = _write_jsonl(tmp_path / "unicode.jsonl", rows)
    questions = _write_jsonl(
        tmp_path / "q.jsonl", [{"question": "Où est Zürich?", "golden_answers": ["Zürich"]}]
    )
    env = gym.make(ENV_ID, corpus=str(corpus), questions=str(questions), cache_dir=cache)
    obs, _ = env.reset(seed=0)
    assert obs == "Question: Ou est Zurich?"
    obs, *_ = env.step("<search>Zürich Straße \ud800</search>")
    assert set(obs) <= _CHARS and "Zurich Stra?e" in obs
    _, reward, *_ = env.step("<answer>Zürich</answer>")
    assert reward == 1.0
