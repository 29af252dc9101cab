"""JavaScript value semantics the tool-argument validator reproduces: pi's validator runs in
JavaScript, so number texts, conversions between types, equality and ``JSON.stringify`` output
must read as they do there (the model and the session see these values and texts)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TypeGuard

Json = object  # a decoded JSON value: each use checks its type first


def is_number(v: Json) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def is_integer(v: Json) -> bool:
    return is_number(v) and float(v).is_integer()


def _js_plain(v: Json) -> Json:
    """Integral floats as ints, as JavaScript prints them (``3``, not ``3.0``)."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    if isinstance(v, list):
        return [_js_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _js_plain(x) for k, x in v.items()}
    return v


def js_json(v: Json, indent: int | None = None) -> str:
    """``JSON.stringify`` of a value (compact, or pretty with ``indent``)."""
    import json

    separators = (",", ": ") if indent else (",", ":")
    return json.dumps(_js_plain(v), indent=indent, separators=separators, ensure_ascii=False)


def js_number_text(v: float) -> str:
    return js_json(v)


def type_name(v: Json) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, str):
        return "string"
    if is_integer(v):
        return "integer"
    return "number" if is_number(v) else str(v)


_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = re.compile(r"0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")
_BIGINT = re.compile(r"-?(?:0|[1-9]\d*)n")


def _number(v: float) -> int | float:
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else v


def _parse_js_number(text: str) -> int | float | None:
    """``Number(text)`` when it is finite, else None (``""`` is 0, as in JavaScript)."""
    s = text.strip()
    if not s:
        return 0
    if _DECIMAL.fullmatch(s):
        value = float(s)
        return _number(value) if math.isfinite(value) else None
    if _RADIX.fullmatch(s):
        return int(s, 0)
    return None


def try_number(v: Json) -> tuple[float] | None:
    if isinstance(v, bool):
        return (1 if v else 0,)
    if is_number(v):
        return (v,)
    if v is None:
        return (0,)
    if not isinstance(v, str):
        return None
    parsed = _parse_js_number(v)
    if parsed is not None:
        return (parsed,)
    lower = v.lower()
    if lower in ("true", "false"):
        return (1 if lower == "true" else 0,)
    if _BIGINT.fullmatch(v):
        return (int(v[:-1]),)
    return None


def _try_string(v: Json) -> tuple[Json] | None:
    if isinstance(v, bool):
        return ("true" if v else "false",)
    if is_number(v):
        return (js_number_text(v),)
    if v is None:
        return ("null",)
    return (v,) if isinstance(v, str) else None


def _try_boolean(v: Json) -> tuple[Json] | None:
    if isinstance(v, bool):
        return (v,)
    if is_number(v):
        return (v == 1,) if v in (0, 1) else None
    if v is None:
        return (False,)
    if not isinstance(v, str):
        return None
    lower = v.lower()
    if lower == "false" or v == "0":
        return (False,)
    if lower == "true" or v == "1":
        return (True,)
    return None


def _try_null(v: Json) -> tuple[Json] | None:
    if v is None or v is False or (is_number(v) and v == 0):
        return (None,)
    if isinstance(v, str) and (v.lower() in ("undefined", "null") or v in ("", "0")):
        return (None,)
    return None


CONVERTERS: dict[str, Callable[[Json], tuple[Json] | None]] = {
    "string": _try_string,
    "number": try_number,
    "boolean": _try_boolean,
    "null": _try_null,
}


def json_equal(a: Json, b: Json) -> bool:
    """JSON equality (``true`` is not ``1``; ``1`` is ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def convert_literal(literal: Json, v: Json) -> Json:
    """An enum/const member taken from a value of another type that converts to exactly it."""
    if json_equal(literal, v):
        return v
    if isinstance(literal, bool):
        result = _try_boolean(v)
    elif isinstance(literal, str):
        result = _try_string(v)
    elif is_number(literal):
        result = try_number(v)
    else:
        result = None
    return result[0] if result is not None and json_equal(result[0], literal) else v


def coerce_primitive(v: Json, kind: str) -> Json:
    """Ajv-style primitive coercion for what the conversions left (type lists)."""
    if kind in ("number", "integer"):
        if v is None:
            return 0
        if isinstance(v, str) and v.strip():
            parsed = _parse_js_number(v)
            if parsed is not None and (kind == "number" or is_integer(parsed)):
                return parsed
        if isinstance(v, bool):
            return 1 if v else 0
        return v
    if kind == "boolean":
        if v is None:
            return False
        if v == "true" or (is_number(v) and v == 1):
            return True
        if v == "false" or (is_number(v) and v == 0):
            return False
        return v
    if kind == "string":
        if v is None:
            return ""
        converted = _try_string(v) if isinstance(v, bool) or is_number(v) else None
        return v if converted is None else converted[0]
    if kind == "null":
        return None if v == "" or v is False or (is_number(v) and v == 0) else v
    return v
