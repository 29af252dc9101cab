"""``searchTools()``: codemode's word splitting for the shared BM25 (``coding/tools/ranking.py``).

A tool's text is its description plus the property names and descriptions of its schema; its
namespace text is the namespace's name, description and instructions.
"""

from __future__ import annotations

from pi_coding_agent.coding.tools.ranking import SearchDocument, schema_text, split_words
from pi_coding_agent.coding.tools.ranking import rank as rank_tools

__all__ = ["DEFAULT_LIMIT", "SearchDocument", "rank", "schema_text", "tokenize"]

DEFAULT_LIMIT = 8
_STOP_WORDS = frozenset(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "of", "on", "or", "that", "the", "to", "with"])
_SUFFIXES = ("ing", "ies", "es", "ed", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def tokenize(text: str) -> list[str]:
    """Words split at camelCase and punctuation, lower-cased, stop words dropped, lightly stemmed."""
    return [_stem(w) if w.isascii() and w.isalnum() else w for w in split_words(text) if w not in _STOP_WORDS]


def rank(query: str, documents: list[SearchDocument], limit: int) -> list[str]:
    """``searchTools()``'s ranking: the shared BM25 with codemode's tokenizer."""
    return rank_tools(query, documents, limit, tokenize)
