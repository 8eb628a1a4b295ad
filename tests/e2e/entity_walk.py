"""Touch everything an SDK entity offers: every public attribute and property, recursively, and its _to_dict()
and dump() where it has them. What raises is a place where an answer of the emulator breaks the SDK's
deserialisers (or its entities' own read-back); the walk collects them all instead of stopping at the first."""

import inspect
import io
from collections.abc import Mapping

_LEAVES = (str, bytes, int, float, bool, complex, type(None))
_MAX_DEPTH = 8


def _sdk_object(value: object) -> bool:
    return type(value).__module__.startswith(("azure.ai.ml", "azure.core"))


def _properties(value: object) -> list[str]:
    return [name for name, member in inspect.getmembers(type(value), lambda m: isinstance(m, property))
            if not name.startswith("_")]


def _literal_port(value: object) -> bool:
    """A job input or output the SDK wraps around a literal value (a number, a string), which forwards every
    attribute read to that value."""
    data = vars(value).get("_data", ()) if hasattr(value, "__dict__") else ()
    return isinstance(data, _LEAVES) and type(value).__name__.endswith(("Input", "Output"))


class Walk:
    def __init__(self):
        self.broken: list[str] = []
        self.touched = 0
        self._seen: set[int] = set()

    def _try(self, where: str, read):
        try:
            return read(), True
        except Exception as exc:  # noqa: BLE001 (every break is collected and reported together)
            self.broken.append(f"{where}: {type(exc).__name__}: {exc}"[:500])
            return None, False

    def __call__(self, value: object, where: str = "entity", depth: int = 0) -> "Walk":
        self.touched += 1
        if isinstance(value, _LEAVES) or depth > _MAX_DEPTH or id(value) in self._seen:
            return self
        self._seen.add(id(value))
        if _sdk_object(value):  # before Mapping: some entities (jobs' nodes) are dicts too
            self._entity(value, where, depth)
        if isinstance(value, Mapping):
            for key, item in list(value.items()):
                self(item, f"{where}[{key!r}]", depth + 1)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for i, item in enumerate(value):
                self(item, f"{where}[{i}]", depth + 1)
        return self

    def _entity(self, value: object, where: str, depth: int) -> None:
        if _literal_port(value):
            return  # a job's literal input: the SDK's own wrapper raises for .path and the like, whoever answered
        for name in _properties(value):
            read, ok = self._try(f"{where}.{name}", lambda n=name: getattr(value, n))
            if ok:
                self(read, f"{where}.{name}", depth + 1)
        for name, item in list(vars(value).items()) if hasattr(value, "__dict__") else []:
            if not name.startswith("__"):
                self(item, f"{where}.{name}", depth + 1)
        # looked up statically: some entities (_AttrDict) answer a missing attribute with KeyError
        if callable(inspect.getattr_static(value, "_to_dict", None)):
            read, ok = self._try(f"{where}._to_dict()", value._to_dict)
            if ok:
                self(read, f"{where}._to_dict()", depth + 1)
        if callable(inspect.getattr_static(value, "dump", None)):
            self._try(f"{where}.dump()", lambda: value.dump(io.StringIO()))
