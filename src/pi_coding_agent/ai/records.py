"""``@record``: a dataclass's constructor, repr and equality without its cost at import.

``@dataclass`` writes and compiles ``__init__``, ``__repr__`` and ``__eq__`` for each class while its
module loads: 0.2-0.5 ms a class, 4 ms of every ``pi`` start for the classes on the start-up path. A
record shares one ``__init__``, ``__repr__`` and ``__eq__`` that read the class's field list, so
declaring it costs microseconds; constructing one costs about a microsecond more than a dataclass.
The body is written as for a dataclass (annotations, defaults, ``field(default=...)``,
``field(default_factory=...)``), and type checkers read it as one (``dataclass_transform``). Like a
plain ``@dataclass`` it compares field by field and is unhashable; it is never frozen and has no
``dataclasses.replace``: a class that needs one of those stays a dataclass.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, field
from typing import TypeVar, dataclass_transform

_T = TypeVar("_T")
FIELDS = "__record_fields__"  # (name, default, default factory) per field, the base classes' first


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[_T]) -> type[_T]:
    """Give ``cls`` a keyword (or positional) ``__init__`` over its annotated fields, and a repr."""
    fields: list[tuple[str, object, object]] = list(getattr(cls, FIELDS, ()))
    # the class's own annotations, not inherited ones; inspect.get_annotations would load ``inspect``
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, MISSING)
        if isinstance(value, Field):
            entry = (name, value.default, value.default_factory)
            delattr(cls, name)
        else:
            entry = (name, value, MISSING)
        inherited = next((i for i, (known, _, _) in enumerate(fields) if known == name), None)
        if inherited is None:
            fields.append(entry)
        else:  # a field declared again keeps its base's place, as in a dataclass
            fields[inherited] = entry
    setattr(cls, FIELDS, tuple(fields))
    cls.__init__ = _init  # type: ignore[method-assign]
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = _repr  # type: ignore[method-assign]
    if "__eq__" not in cls.__dict__:
        cls.__eq__ = _eq  # type: ignore[method-assign]
        cls.__hash__ = None  # type: ignore[assignment]  # as a dataclass that compares its fields
    return cls


def _init(self: object, *args: object, **kwargs: object) -> None:
    fields = getattr(self, FIELDS)
    kind = type(self).__name__
    if len(args) > len(fields):
        raise TypeError(f"{kind}() takes {len(fields)} positional arguments but {len(args)} were given")
    for index, (name, default, factory) in enumerate(fields):
        if index < len(args):
            if name in kwargs:
                raise TypeError(f"{kind}() got multiple values for argument '{name}'")
            value = args[index]
        elif name in kwargs:
            value = kwargs.pop(name)
        elif factory is not MISSING:
            value = factory()
        elif default is not MISSING:
            value = default
        else:
            raise TypeError(f"{kind}() missing required argument: '{name}'")
        setattr(self, name, value)
    if kwargs:
        raise TypeError(f"{kind}() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _repr(self: object) -> str:
    values = ", ".join(f"{name}={getattr(self, name)!r}" for name, _, _ in getattr(self, FIELDS))
    return f"{type(self).__qualname__}({values})"


def _eq(self: object, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]  # what __eq__ returns for another class
    return all(getattr(self, name) == getattr(other, name) for name, _, _ in getattr(self, FIELDS))
