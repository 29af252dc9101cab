"""Edit matching (exact, then fuzzy-normalised), CRLF-preserving splice-back, and the diff in ``details``."""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

from pi_coding_agent.agent.tool import ToolError
from pi_coding_agent.ai.types import JsonObject

DIFF_CONTEXT_LINES = 4
# Unchanged lines diffed around each replacement: well above the context shown, so the window
# diff aligns like a whole-file diff while its cost follows the change, not the file.
_WINDOW_MARGIN_LINES = 32
# JavaScript's String.prototype.trimEnd whitespace set.
_JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_FUZZY_TABLE = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    }
)
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+")
_ASCII_TRAILING = ("\t", "\v", "\f", "\r", " ")  # the ASCII part of _JS_WHITESPACE, line feed aside
_FUZZY_BLOCK_CHARS = 1 << 20
_SCAN_CHARS = 1 << 16  # line feeds are counted this many characters at a time when lines are skipped


@dataclass
class Replacement:
    """One edit, located in the file: where it starts, how long the old text is, and the new text."""

    index: int
    length: int
    new_text: str
    edit_index: int = 0


def normalize_to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def normalize_for_fuzzy_match(text: str) -> str:
    """NFKC, trailing whitespace dropped per line, typographic quotes/dashes/spaces made ASCII.

    Text already in that form (most large files) comes back as itself, not as a copy; longer text
    is normalised in blocks of whole lines (no step joins across a line break), so no more than
    the result and one block of intermediates is held.
    """
    if _is_fuzzy_normal(text):
        return text
    if len(text) <= _FUZZY_BLOCK_CHARS:
        return _normalize_block(text)
    parts: list[str] = []
    start = 0
    while start < len(text):
        end = text.find("\n", start + _FUZZY_BLOCK_CHARS)
        end = len(text) if end < 0 else end + 1
        parts.append(_normalize_block(text[start:end]))
        start = end
    return "".join(parts)


def _is_fuzzy_normal(text: str) -> bool:
    """ASCII without trailing whitespace on any line: NFKC and the table leave ASCII alone."""
    if not text.isascii() or text.endswith(_ASCII_TRAILING):
        return False
    return not any(space + "\n" in text for space in _ASCII_TRAILING)


def _normalize_block(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip(_JS_WHITESPACE) for line in text.split("\n"))
    return text.translate(_FUZZY_TABLE)


class EditItem(TypedDict):
    """One replacement of the edit tool's ``edits``."""

    oldText: str
    newText: str


def _single_or_indexed(total: int, single: str, multi: str) -> ToolError:
    return ToolError(single if total == 1 else multi)


def apply_edits(content: str, edits: list[EditItem], path: str) -> list[Replacement]:
    """Match every edit against ``content`` (LF text) and return the sorted, disjoint replacements.

    The new text itself is never built whole here (``edited_parts`` gives it piece by piece), so a
    large file is held once while it is edited.

    Raises pi's errors for empty, missing, ambiguous, overlapping and no-op edits. With any fuzzy
    match, all edits are matched in normalised space and only the touched lines are rewritten.
    """
    total = len(edits)
    pairs = [(normalize_to_lf(e["oldText"]), normalize_to_lf(e["newText"])) for e in edits]
    for i, (old, _) in enumerate(pairs):
        if not old:
            raise _single_or_indexed(
                total, f"oldText must not be empty in {path}.", f"edits[{i}].oldText must not be empty in {path}."
            )
    fuzzy_cache: list[str] = []

    def fuzzy_content() -> str:
        if not fuzzy_cache:
            fuzzy_cache.append(normalize_for_fuzzy_match(content))
        return fuzzy_cache[0]

    fuzzy_olds = [normalize_for_fuzzy_match(old) for old, _ in pairs]
    use_fuzzy = any(old not in content and f in fuzzy_content() for (old, _), f in zip(pairs, fuzzy_olds, strict=True))
    base = fuzzy_content() if use_fuzzy else content
    matched: list[Replacement] = []
    for i, ((old, new), fuzzy_old) in enumerate(zip(pairs, fuzzy_olds, strict=True)):
        # Exact first; else in fuzzy space (normalising is idempotent, so the fuzzy base is its own).
        index, length = base.find(old), len(old)
        if index < 0:
            index, length = fuzzy_content().find(fuzzy_old), len(fuzzy_old)
        if index < 0:
            raise _single_or_indexed(
                total,
                f"Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines.",
                f"Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines.",
            )
        occurrences = fuzzy_content().count(fuzzy_old)
        if occurrences > 1:
            raise _single_or_indexed(
                total,
                f"Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique.",
                f"Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique.",
            )
        matched.append(Replacement(index, length, new, i))
    matched.sort(key=lambda r: r.index)
    for prev, cur in itertools.pairwise(matched):
        if prev.index + prev.length > cur.index:
            raise ToolError(
                f"edits[{prev.edit_index}] and edits[{cur.edit_index}] overlap in {path}. "
                "Merge them into one edit or target disjoint regions."
            )
    if not use_fuzzy:
        fuzzy_cache.clear()  # a normalised copy of a large file is not kept while the new text is built
    replacements = _widen_to_lines(content, base, matched) if use_fuzzy else matched
    if _changes_nothing(content, replacements):
        raise _single_or_indexed(
            total,
            f"No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.",
            f"No changes made to {path}. The replacements produced identical content.",
        )
    return replacements


def _changes_nothing(content: str, replacements: list[Replacement]) -> bool:
    """Whether the replacements leave ``content`` as it was, compared without building the new text.

    Replacements that keep every later offset in place change nothing only if each puts back what
    it replaces; when offsets shift and shift back, the stretch in between is compared for real.
    """
    shift, aligned = 0, True
    for r in replacements:
        aligned = aligned and shift == 0 and len(r.new_text) == r.length
        shift += len(r.new_text) - r.length
    if shift:
        return False
    if aligned:
        return all(content.startswith(r.new_text, r.index) for r in replacements)
    start, end = replacements[0].index, replacements[-1].index + replacements[-1].length
    shifted = [Replacement(r.index - start, r.length, r.new_text) for r in replacements]
    return apply_replacements(content[start:end], shifted) == content[start:end]


_PART_CHARS = 1 << 20


def _blocks(text: str, start: int, end: int) -> Iterator[str]:
    """``text[start:end]`` in slices of about ``_PART_CHARS`` characters, never cut inside a CRLF
    (``spliced_parts`` reads a CR at the end of a piece as a kept line ending)."""
    while start < end:
        cut = min(end, start + _PART_CHARS)
        if cut < end and text[cut - 1] == "\r" and text[cut] == "\n":
            cut += 1
        yield text[start:cut]
        start = cut


def edited_parts(content: str, replacements: list[Replacement]) -> Iterator[str]:
    """The new text as consecutive pieces, none longer than ``_PART_CHARS`` but the new texts."""
    pos = 0
    for r in replacements:
        yield from _blocks(content, pos, r.index)
        yield r.new_text
        pos = r.index + r.length
    yield from _blocks(content, pos, len(content))


def apply_replacements(content: str, replacements: list[Replacement]) -> str:
    """Apply sorted, disjoint replacements in one pass."""
    parts: list[str] = []
    pos = 0
    for r in replacements:
        parts.append(content[pos : r.index])
        parts.append(r.new_text)
        pos = r.index + r.length
    parts.append(content[pos:])
    return "".join(parts)


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _skip_lines(text: str, pos: int, lines: int) -> int:
    """The offset ``lines`` line starts after ``pos`` (or the end), counted block by block in C."""
    while lines:
        end = min(len(text), pos + _SCAN_CHARS)
        found = text.count("\n", pos, end)
        if found < lines and end < len(text):
            pos, lines = end, lines - found
            continue
        for _ in range(lines):
            lf = text.find("\n", pos)
            if lf < 0:
                return len(text)
            pos = lf + 1
        return pos
    return pos


def _widen_to_lines(original: str, base: str, matched: list[Replacement]) -> list[Replacement]:
    """Fuzzy replacements as whole-line rewrites of the original, so untouched lines keep their bytes.

    Lines are found by counting line feeds in both texts (no table of every line of a large file).
    """
    if _line_count(original) != _line_count(base):
        raise ToolError("Cannot preserve unchanged lines because the base content has a different line count.")
    if not base:
        raise ToolError("Replacement range is outside the base content.")
    groups: list[list[Any]] = []  # [base_start, base_end, [replacements]], whole lines of base
    for r in matched:
        start = base.rfind("\n", 0, r.index) + 1
        lf = base.find("\n", max(r.index + r.length - 1, r.index))
        end = len(base) if lf < 0 else lf + 1
        if groups and start < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], end)
            groups[-1][2].append(r)
        else:
            groups.append([start, end, [r]])
    out: list[Replacement] = []
    base_pos = orig_pos = 0  # the same line's start in both texts
    for b_start, b_end, group in groups:
        orig_pos = _skip_lines(original, orig_pos, base.count("\n", base_pos, b_start))
        base_pos = b_start
        o_end = _skip_lines(original, orig_pos, _line_count(base[b_start:b_end]))
        shifted = [Replacement(r.index - b_start, r.length, r.new_text) for r in group]
        out.append(Replacement(orig_pos, o_end - orig_pos, apply_replacements(base[b_start:b_end], shifted)))
    return out


def spliced_parts(original: str, replacements: list[Replacement]) -> Iterator[str]:
    """LF-space replacements applied to text with CR line endings, keeping every untouched byte,
    as consecutive pieces of the new text (see ``edited_parts``).

    New lines inside a replacement take the ending of the line where the replaced range starts.
    """
    crlfs = [m.start() for m in re.finditer("\r\n", original)]

    # The n-th CRLF at original offset p has its LF at p - n in the LF text.
    lf_positions = [p - n for n, p in enumerate(crlfs)]

    def to_original(offset: int) -> int:
        return offset + bisect.bisect_left(lf_positions, offset)

    ends_with_cr = False

    def pieces(part: str) -> Iterator[str]:
        nonlocal ends_with_cr
        if not part:
            return
        if ends_with_cr and part[0] == "\n":
            # A kept CR followed by an inserted LF would merge into one CRLF; keep them two breaks.
            yield "\n"
        yield part
        ends_with_cr = part[-1] == "\r"

    pos = 0
    for r in replacements:
        start = to_original(r.index)
        for block in _blocks(original, pos, start):
            yield from pieces(block)
        ending = _line_ending_at(original, start)
        yield from pieces(r.new_text if ending == "\n" else r.new_text.replace("\n", ending))
        pos = to_original(r.index + r.length)
    for block in _blocks(original, pos, len(original)):
        yield from pieces(block)


def _line_ending_at(content: str, offset: int) -> str:
    lf = content.find("\n", offset)
    if lf == -1:
        lf = content.rfind("\n", 0, offset + 1)
    if lf == -1:
        return "\r" if "\r" in content else "\n"
    return "\r\n" if lf > 0 and content[lf - 1] == "\r" else "\n"


# ---- diff for details -------------------------------------------------------------------------


def _split_lines(text: str) -> list[str]:
    return _LINE_RE.findall(text)


def generate_edit_diff(path: str, old: str, replacements: list[Replacement]) -> JsonObject:
    """``{diff, patch, firstChangedLine}``: numbered display diff and unified patch (4 context lines).

    Only windows around the replacements are diffed, and their new text is built from ``old`` and
    the replacements, so the cost follows the change, not the file.
    """
    old_lines = old.count("\n")
    new_lines = old_lines + sum(r.new_text.count("\n") - old.count("\n", r.index, r.index + r.length)
                                for r in replacements)
    width = len(str(max(old_lines, new_lines) + 1))
    skip = " " + " " * width + " ..."
    display: list[str] = []
    hunks: list[str] = []
    first_changed: int | None = None
    for w, inside in _diff_windows(old, replacements):
        window = old[w[0] : w[1]]
        shifted = [Replacement(r.index - w[0], r.length, r.new_text) for r in inside]
        a, b = _split_lines(window), _split_lines(apply_replacements(window, shifted))
        shown, changed = _display_diff(a, b, w[2] + 1, w[3] + 1, width)
        if first_changed is None:
            first_changed = changed
        if display and shown and display[-1] == skip and shown[0] == skip:
            shown = shown[1:]
        display.extend(shown)
        hunks.extend(_patch_hunks(a, b, w[2], w[3]))
    patch = f"--- {path}\n+++ {path}\n" + "".join(hunks)
    result: JsonObject = {"diff": "\n".join(display), "patch": patch}
    if first_changed is not None:
        result["firstChangedLine"] = first_changed
    return result


def _diff_windows(old: str, replacements: list[Replacement]) -> list[tuple[list[int], list[Replacement]]]:
    """Whole-line windows ``[old_start, old_end, old_line, new_line]`` around the edits, each with
    the replacements inside it."""
    windows: list[tuple[list[int], list[Replacement]]] = []
    line_delta = cursor = cursor_line = 0
    for r in replacements:
        match_end = r.index + r.length
        start = 0 if r.index == 0 else old.rfind("\n", 0, r.index) + 1
        for _ in range(_WINDOW_MARGIN_LINES):
            if start <= 0:
                break
            start = old.rfind("\n", 0, start - 1) + 1
        end = match_end
        for i in range(_WINDOW_MARGIN_LINES + 1):
            if end >= len(old):
                break
            lf = old.find("\n", max(match_end - 1, r.index) if i == 0 else end)
            end = len(old) if lf == -1 else lf + 1
        if windows and start <= windows[-1][0][1]:
            prev, inside = windows[-1]
            prev[1] = max(prev[1], end)
            inside.append(r)
        else:
            cursor_line += old.count("\n", cursor, start)
            cursor = start
            windows.append(([start, end, cursor_line, cursor_line + line_delta], [r]))
        line_delta += r.new_text.count("\n") - old.count("\n", r.index, match_end)
    return windows


def _parts(a: list[str], b: list[str]) -> list[tuple[str, list[str]]]:
    """Line diff as ordered (kind, lines) parts: ``=`` kept, ``-`` removed, ``+`` added."""
    from difflib import SequenceMatcher

    parts: list[tuple[str, list[str]]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            parts.append(("=", a[i1:i2]))
            continue
        if i2 > i1:
            parts.append(("-", a[i1:i2]))
        if j2 > j1:
            parts.append(("+", b[j1:j2]))
    return parts


def _display_diff(a: list[str], b: list[str], old_no: int, new_no: int, width: int) -> tuple[list[str], int | None]:
    """Numbered ``+``/``-``/`` `` lines with up to 4 context lines and `` ...`` for skipped runs."""
    out: list[str] = []
    first: int | None = None
    skip = " " + " " * width + " ..."
    parts = _parts(a, b)
    after_change = False
    for i, (kind, raw_lines) in enumerate(parts):
        lines = [line[:-1] if line.endswith("\n") else line for line in raw_lines]
        if kind != "=":
            if first is None:
                first = new_no
            for line in lines:
                if kind == "+":
                    out.append(f"+{str(new_no).rjust(width)} {line}")
                    new_no += 1
                else:
                    out.append(f"-{str(old_no).rjust(width)} {line}")
                    old_no += 1
            after_change = True
            continue
        before_change = i + 1 < len(parts) and parts[i + 1][0] != "="
        n, c = len(lines), DIFF_CONTEXT_LINES
        # Blocks of context lines to show; None marks a skipped run.
        shown: list[list[str] | None]
        if after_change and before_change:
            shown = [lines] if n <= 2 * c else [lines[:c], None, lines[n - c :]]
        elif after_change:
            shown = [lines[:c]] + ([None] if n > c else [])
        elif before_change:
            shown = ([None] if n > c else []) + [lines[max(0, n - c) :]]
        else:
            shown = []
            old_no += n
            new_no += n
        skipped = n - sum(len(block) for block in shown if block is not None)
        for block in shown:
            if block is None:
                out.append(skip)
                old_no += skipped
                new_no += skipped
                continue
            for line in block:
                out.append(f" {str(old_no).rjust(width)} {line}")
                old_no += 1
                new_no += 1
        after_change = False
    return out, first


def _patch_hunks(a: list[str], b: list[str], old_line: int, new_line: int) -> list[str]:
    """Unified-diff hunks (jsdiff layout: counts always shown, ``\\ No newline at end of file``)."""
    from difflib import SequenceMatcher

    hunks: list[str] = []
    for group in SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(DIFF_CONTEXT_LINES):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        old_start = old_line + i1 + 1 if i2 > i1 else old_line + i1
        new_start = new_line + j1 + 1 if j2 > j1 else new_line + j1
        body: list[str] = [f"@@ -{old_start},{i2 - i1} +{new_start},{j2 - j1} @@\n"]
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                body.extend(_patch_lines(" ", a[x1:x2]))
                continue
            body.extend(_patch_lines("-", a[x1:x2]))
            body.extend(_patch_lines("+", b[y1:y2]))
        hunks.append("".join(body))
    return hunks


def _patch_lines(prefix: str, lines: list[str]) -> list[str]:
    return [
        f"{prefix}{line}" if line.endswith("\n") else f"{prefix}{line}\n\\ No newline at end of file\n"
        for line in lines
    ]
