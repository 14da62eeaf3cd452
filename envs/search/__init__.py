"""Search: answer questions by searching a corpus, Search-R1 style (``envgym/Search-v0``).

The default corpus is a generated fictional world (`vocabulary`, `world`,
`questions`), so the env works offline; `loaders` read real Search-R1 corpora and
NQ / HotpotQA questions, and `sources` picks the retriever from `envgym.retrieval`
(BM25 / dense indexes, the retrieval server's client) that Shop uses too.
"""

from envgym.envs.search.search import SEARCH_TOOL, SearchEnv, SearchPreset

__all__ = ["SEARCH_TOOL", "SearchEnv", "SearchPreset"]
