"""Search: answer questions by searching a corpus, Search-R1 style (``envgym/Search-v0``).

The default corpus is a generated fictional world (`world`), so the env works
offline; `loaders` read real Search-R1 corpora and NQ / HotpotQA questions, and
`retrieval` holds the BM25 / dense indexes and the retrieval-server client.
"""

from envgym.envs.search.search import DIFFICULTY_HOPS, SEARCH_TOOL, SearchEnv

__all__ = ["DIFFICULTY_HOPS", "SEARCH_TOOL", "SearchEnv"]
