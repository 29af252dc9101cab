"""BM25 ranking of tools, shared by ``tool_search`` (``coding/mcp``) and codemode's ``searchTools()``.

pi ranks both the same way and differs only in how it splits words, so the tokenizer is a
parameter: a tool's name weighs 3 times a term's IDF, its namespace text 0.5 times, its text
(description and schema words) is length-normalised Okapi BM25 (k1 1.2, b 0.75); more covered
query terms beat a higher score, a query that is exactly a tool's name (or its part after ``__``)
ranks it first, and a tool whose whole local name is in the query gets a bonus.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

K1, B = 1.2, 0.75
NAME_WEIGHT = 3.0
NAMESPACE_WEIGHT = 0.5

Tokenizer = Callable[[str], list[str]]


def split_words(text: str) -> list[str]:
    """Words split at camelCase, underscores and punctuation, lower-cased (before stop words and stems)."""
    import unicodedata  # a 1 MB extension module: mapped by the first search, not with the tool at start-up

    text = unicodedata.normalize("NFC", text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text).lower()
    return re.sub(r"[^\w]|_", " ", text).split()


@dataclass
class SearchDocument:
    """A tool as ``tool_search`` ranks it: its name and searchable text."""

    name: str
    text: str
    namespace_text: str = ""


def schema_text(schema: object, parts: list[str], depth: int = 0) -> None:
    """Append the descriptions and property names of a JSON schema (nested ones too) to ``parts``."""
    if not isinstance(schema, dict) or depth > 20:
        return
    if isinstance(schema.get("description"), str):
        parts.append(schema["description"])
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, prop in properties.items():
            parts.append(name)
            schema_text(prop, parts, depth + 1)
    schema_text(schema.get("items"), parts, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        variants = schema.get(key)
        for variant in variants if isinstance(variants, list) else []:
            schema_text(variant, parts, depth + 1)


def tool_document(name: str, description: str, parameters: object, namespace_text: str = "") -> SearchDocument:
    parts = [description]
    schema_text(parameters, parts)
    return SearchDocument(name, " ".join(p for p in parts if p.strip()), namespace_text)


def _normal_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_$]", "_", name.strip().lower())


def rank(query: str, documents: list[SearchDocument], limit: int, tokenize: Tokenizer) -> list[str]:
    """Names of the best ``limit`` documents for ``query``, best first (ties keep document order)."""
    terms = list(dict.fromkeys(tokenize(query)))
    if not terms or not documents or limit <= 0:
        return []
    indexed = []
    for doc in documents:
        counts: dict[str, int] = {}
        for term in tokenize(doc.text):
            counts[term] = counts.get(term, 0) + 1
        local = list(dict.fromkeys(tokenize(doc.name.split("__")[-1])))
        indexed.append((doc.name, set(tokenize(doc.name)), local, counts, sum(counts.values()),
                        set(tokenize(doc.namespace_text))))
    average = sum(i[4] for i in indexed) / len(indexed) or 1
    idf = {}
    for term in terms:
        frequency = sum(1 for i in indexed if term in i[1] or term in i[3] or term in i[5])
        idf[term] = math.log(1 + (len(indexed) - frequency + 0.5) / (frequency + 0.5))
    bonus = sum(idf.values())
    exact_query = _normal_name(query)
    matches = []
    for order, (name, name_terms, local, counts, length, ns_terms) in enumerate(indexed):
        norm = K1 * (1 - B + B * length / average)
        score, covered = 0.0, 0
        for term in terms:
            count = counts.get(term, 0)
            weight = ((NAME_WEIGHT if term in name_terms else 0) + (NAMESPACE_WEIGHT if term in ns_terms else 0)
                      + count * (K1 + 1) / (count + norm))
            covered += weight > 0
            score += idf[term] * weight
        if score == 0:
            continue
        if local and all(t in terms for t in local):
            score += bonus
        normalized = _normal_name(name)
        exact = normalized == exact_query or normalized.endswith(f"__{exact_query}")
        matches.append((not exact, -covered, -score, order, name))
    return [m[4] for m in sorted(matches)[:limit]]
