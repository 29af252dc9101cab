"""``@record`` (ai/records.py) builds what a dataclass's ``__init__``, ``__repr__`` and ``__eq__`` would,
from the same class body: positional and keyword arguments, defaults, fresh default factories, a
callable given as a plain default, inherited fields, ``ClassVar`` left out, field-wise equality; and
the errors a dataclass raises."""

from __future__ import annotations

from dataclasses import field
from typing import Any, ClassVar

import pytest

from pi_coding_agent.ai.records import record


@record
class Point:
    """Two required fields, two with defaults."""

    x: int
    y: int
    label: str = ""
    tags: list[str] = field(default_factory=list)
    kind: ClassVar[str] = "point"


@record
class Hooked:
    on_call: Any = field(default=lambda: "default hook")


@record
class Labelled(Point):
    colour: str = "red"


@record
class Relabelled(Point):
    label: str = "relabelled"


@record
class Secret:
    token: str

    def __repr__(self) -> str:
        return "Secret(...)"


def test_positional_keyword_and_default_arguments() -> None:
    point = Point(1, y=2)
    assert (point.x, point.y, point.label, point.tags) == (1, 2, "", [])
    assert Point.kind == "point" and "kind" not in vars(point)


def test_each_instance_gets_its_own_factory_value() -> None:
    first, second = Point(0, 0), Point(0, 0)
    first.tags.append("a")
    assert second.tags == []


def test_a_callable_default_is_the_value_not_a_factory() -> None:
    assert Hooked().on_call() == "default hook"


def test_a_subclass_adds_its_fields_after_its_bases() -> None:
    shape = Labelled(1, 2, "l", ["t"], "blue")
    assert (shape.x, shape.label, shape.tags, shape.colour) == (1, "l", ["t"], "blue")
    assert Labelled(1, 2).colour == "red"


def test_a_field_declared_again_keeps_its_place_with_the_new_default() -> None:
    assert repr(Relabelled(1, 2)) == "Relabelled(x=1, y=2, label='relabelled', tags=[])"


def test_repr_names_every_field_unless_the_class_writes_its_own() -> None:
    assert repr(Point(1, 2, tags=["t"])) == "Point(x=1, y=2, label='', tags=['t'])"
    assert repr(Secret("sk-123")) == "Secret(...)"


def test_records_of_one_class_compare_field_by_field_and_are_unhashable() -> None:
    assert Point(1, 2, tags=["t"]) == Point(1, 2, tags=["t"])
    assert Point(1, 2) != Point(1, 3)
    assert Labelled(1, 2) != Point(1, 2)  # another class, as dataclasses compare
    with pytest.raises(TypeError):
        hash(Point(1, 2))


@pytest.mark.parametrize(("call", "message"), [
    # mypy reads a record as a dataclass, so it refuses these calls too
    (lambda: Point(1), "Point() missing required argument: 'y'"),  # type: ignore[call-arg]
    (lambda: Point(1, 2, z=3), "Point() got an unexpected keyword argument 'z'"),  # type: ignore[call-arg]
    (lambda: Point(1, 2, x=3), "Point() got multiple values for argument 'x'"),  # type: ignore[misc]
    (lambda: Point(1, 2, "", [], 5), "Point() takes 4 positional arguments but 5 were given"),  # type: ignore[call-arg]
])
def test_wrong_arguments_raise_type_error(call: Any, message: str) -> None:
    with pytest.raises(TypeError) as raised:
        call()
    assert str(raised.value) == message
