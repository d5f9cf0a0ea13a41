"""Values that stay in Ray's object store while the driver holds only references.

A Call's batch returns its row values as one Ray object; the driver keeps a
``Box`` per such object and one ``RemoteValue`` (box + path) per row. Facts
that structural nodes need (the length an expand splits, the truth of a filter
mask) come back in the batch's small report, so the driver never fetches
payloads to schedule. A ``Box`` can be re-pointed at a recomputed object when
its node is lost.
"""

from __future__ import annotations

from typing import Any

from ..runtime.lineage import ValueOps

__all__ = [
    "Box",
    "Gathered",
    "PackedRefs",
    "RayValues",
    "RemoteValue",
    "collect_boxes",
    "column_boxes",
    "materialize",
    "pack_column",
]


class Box:
    """One batch's values object, and how to make it again (its recipe)."""

    __slots__ = ("__weakref__", "recipe", "ref")

    def __init__(self, ref: Any, recipe: Any = None) -> None:
        self.ref = ref
        self.recipe = recipe

    def __reduce__(self) -> tuple[Any, ...]:
        # A worker gets the object itself as an argument of its task (task_inputs) and
        # needs neither the reference nor the recipe; a reference pickled here would
        # make Ray copy the object to the object store and the worker borrow it.
        return (Box, (None,))


class RemoteValue:
    """Row ``path`` of the object in ``box`` (a path of indices into nested lists)."""

    __slots__ = ("box", "inner", "length", "path", "truth")

    def __init__(
        self,
        box: Box,
        path: tuple[int, ...],
        length: int | str | None = None,
        truth: bool | None = None,
        inner: list[Any] | None = None,
    ) -> None:
        self.box = box
        self.path = path
        #: Length when the value is a sequence, its type's name when it is not, None
        #: when unknown.
        self.length = length
        self.truth = truth
        #: Facts of the elements, ``[length, truth, inner]`` each (see ``facts``).
        self.inner = inner

    def __reduce__(self) -> tuple[Any, ...]:
        # Workers need the box and path only; a plain tuple pickles fastest.
        return (RemoteValue, (self.box, self.path))

    def __repr__(self) -> str:
        return f"<RemoteValue {self.path}>"


class Gathered:
    """A reduce's list of member values, some of which may be remote."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __reduce__(self) -> tuple[Any, ...]:
        return (Gathered, (self.items,))

    def __repr__(self) -> str:
        return f"<Gathered {len(self.items)} values>"


class PackedRefs:
    """A batch's input column whose every row is a ``RemoteValue``, as it travels to
    a worker: the distinct boxes, and one ``(box index, path)`` per row.

    Plain tuples of ints pickle in C, without a Python-level hook per row; a list of
    ``RemoteValue`` costs the driver two Python calls per row while Ray pickles it."""

    __slots__ = ("boxes", "rows")

    def __init__(self, boxes: list[Box], rows: list[tuple[int, tuple[int, ...]]]) -> None:
        self.boxes = boxes
        self.rows = rows

    def __reduce__(self) -> tuple[Any, ...]:
        return (PackedRefs, (self.boxes, self.rows))

    def unpack(self) -> list[RemoteValue]:
        boxes = self.boxes
        return [RemoteValue(boxes[i], path) for i, path in self.rows]

    def materialize(self, fetched: dict[int, Any]) -> list[Any]:
        """The rows' values, from ``fetched`` objects keyed by ``id(box)``."""
        objects = [fetched[id(box)] for box in self.boxes]
        out = []
        for i, path in self.rows:
            value = objects[i]
            for index in path:
                value = value[index]
            out.append(value)
        return out


def pack_column(column: list[Any]) -> list[Any] | PackedRefs:
    """``column`` as ``PackedRefs`` when every row is a ``RemoteValue``, else as is."""
    index: dict[int, int] = {}
    boxes: list[Box] = []
    rows: list[tuple[int, tuple[int, ...]]] = []
    for value in column:
        if type(value) is not RemoteValue:
            return column
        box = value.box
        i = index.get(id(box))
        if i is None:
            i = index[id(box)] = len(boxes)
            boxes.append(box)
        rows.append((i, value.path))
    return PackedRefs(boxes, rows)


def collect_boxes(values: Any, into: dict[int, Box]) -> None:
    """Add every ``Box`` referenced by ``values`` (walking ``Gathered`` lists) to ``into``."""
    stack = [values]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is RemoteValue:
            into[id(value.box)] = value.box
        elif kind is Gathered:
            stack.extend(value.items)


def column_boxes(columns: list[Any]) -> dict[int, Box]:
    """Every ``Box`` a batch's columns reference, keyed by ``id``, in one order that
    the driver and the worker compute alike (the order of a task's input objects)."""
    boxes: dict[int, Box] = {}
    for column in columns:
        if type(column) is PackedRefs:
            boxes.update((id(box), box) for box in column.boxes)
            continue
        for value in column:
            collect_boxes(value, boxes)
    return boxes


def materialize(value: Any, fetched: dict[int, Any]) -> Any:
    """Replace remote references by the values in ``fetched`` (keyed by ``id(box)``)."""
    kind = type(value)
    if kind is RemoteValue:
        out = fetched[id(value.box)]
        for index in value.path:
            out = out[index]
        return out
    if kind is Gathered:
        return [materialize(v, fetched) for v in value.items]
    return value


class RayValues(ValueOps):
    """Structural decisions on remote values, from facts reported by the workers."""

    def __init__(self, fetch: Any) -> None:
        #: fetch(value) -> the concrete value: a slow path for facts no node of the
        #: plan asked for (``lower(plan).needs_by_call()`` asks for every one it reads).
        self._fetch = fetch

    def split(self, value: Any) -> list[Any] | None:
        kind = type(value)
        if kind is RemoteValue:
            if value.length is None:
                return super().split(self._fetch(value))
            if type(value.length) is str:  # not a sequence: its type's name
                return None
            box, path, inner = value.box, value.path, value.inner
            if inner is None:
                return [RemoteValue(box, (*path, j)) for j in range(value.length)]
            return [RemoteValue(box, (*path, j), *inner[j]) for j in range(value.length)]
        if kind is Gathered:
            return list(value.items)
        return super().split(value)

    def truth(self, value: Any) -> bool:
        kind = type(value)
        if kind is RemoteValue:
            return value.truth if value.truth is not None else bool(self._fetch(value))
        if kind is Gathered:
            return bool(value.items)
        return bool(value)

    def gather(self, values: list[Any]) -> Any:
        for value in values:
            kind = type(value)
            if kind is RemoteValue or kind is Gathered:
                return Gathered(values)
        return values

    def kind(self, value: Any) -> str:
        if type(value) is RemoteValue:
            if type(value.length) is str:
                return value.length
            return "a value that is not a sequence"
        return super().kind(value)
