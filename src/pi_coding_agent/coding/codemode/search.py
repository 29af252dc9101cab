"""BM25 ranking of tools for ``searchTools()``: name matches weigh most, then text, then namespace.

A tool's text is its description plus the property names and descriptions of its schema; its
namespace text is the namespace's name, description and instructions. A query that is the tool's
whole name (or its part after a ``__``) ranks first, then tools covering more query terms.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

DEFAULT_LIMIT = 8
_K1 = 1.2
_B = 0.75
_NAME_WEIGHT = 3.0
_NAMESPACE_WEIGHT = 0.5
_STOP_WORDS = frozenset(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "of", "on", "or", "that", "the", "to", "with"])
_SUFFIXES = ("ing", "ies", "es", "ed", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def tokenize(text: str) -> list[str]:
    """Words split at camelCase and punctuation, lower-cased, stop words dropped, lightly stemmed."""
    text = unicodedata.normalize("NFC", text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text).lower()
    words = re.sub(r"[^\w]|_", " ", text).split()
    return [_stem(w) if w.isascii() and w.isalnum() else w for w in words if w not in _STOP_WORDS]


def schema_text(schema: Any, parts: list[str], depth: int = 0) -> None:
    if not isinstance(schema, dict) or depth > 8:
        return
    if isinstance(schema.get("description"), str):
        parts.append(schema["description"])
    if isinstance(schema.get("properties"), dict):
        for name, prop in schema["properties"].items():
            parts.append(name)
            schema_text(prop, parts, depth + 1)
    schema_text(schema.get("items"), parts, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        for variant in schema.get(key) or []:
            schema_text(variant, parts, depth + 1)


@dataclass
class SearchDocument:
    name: str
    text: str
    namespace_text: str = ""


def _normal_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_$]", "_", name.strip().lower())


def rank(query: str, documents: list[SearchDocument], limit: int) -> list[str]:
    """Names of the best matches, best first."""
    terms = set(tokenize(query))
    if not terms or not documents or limit <= 0:
        return []
    indexed = []
    for doc in documents:
        counts: dict[str, int] = {}
        for term in tokenize(doc.text):
            counts[term] = counts.get(term, 0) + 1
        local = doc.name.split("__")[-1]
        indexed.append((doc.name, set(tokenize(doc.name)), set(tokenize(local)), counts, sum(counts.values()),
                        set(tokenize(doc.namespace_text))))
    average = sum(d[4] for d in indexed) / len(indexed) or 1
    idf = {t: math.log(1 + (len(indexed) - (f := sum(1 for d in indexed if t in d[1] or t in d[3] or t in d[5]))
                                 + 0.5) / (f + 0.5)) for t in terms}
    bonus = sum(idf.values())
    exact_query = _normal_name(query)
    matches = []
    for index, (name, name_terms, local_terms, counts, length, ns_terms) in enumerate(indexed):
        norm = _K1 * (1 - _B + _B * length / average)
        score, covered = 0.0, 0
        for term in terms:
            count = counts.get(term, 0)
            weight = ((_NAME_WEIGHT if term in name_terms else 0) + (_NAMESPACE_WEIGHT if term in ns_terms else 0)
                      + count * (_K1 + 1) / (count + norm))
            covered += weight > 0
            score += idf[term] * weight
        if score == 0:
            continue
        if local_terms and local_terms <= terms:
            score += bonus
        normal = _normal_name(name)
        exact = normal == exact_query or normal.endswith("__" + exact_query)
        matches.append((not exact, -covered, -score, index, name))
    return [m[4] for m in sorted(matches)[:limit]]
