"""Azure ML operations amlemu does not serve yet, named in plain words for the error that says so. Pure.

A request under the Azure ML provider that no route serves is an operation of Azure's that amlemu lacks (batch
endpoints, connections, feature sets ...), not a mistyped address: the caller is told which operation
it is and that amlemu does not support it yet. A GET of one named resource stays a 404, as Azure answers for a
resource that does not exist (and none of a kind amlemu cannot create does), so SDK code that gets before it
creates keeps working.
"""

import re
from dataclasses import dataclass

from emulator.domain.ids import PROVIDER

_VERBS = {"PUT": "create or update", "PATCH": "update", "DELETE": "delete", "GET": "get"}


@dataclass(frozen=True)
class Unserved:
    operation: str  # "list batch endpoints of workspace 'ws'", "create or update component 'train'"
    missing_resource: bool  # a GET of one named resource: Azure's 404 for one that does not exist

    @property
    def message(self) -> str:
        if self.missing_resource:
            return (f"Cannot {self.operation}: amlemu does not support this kind of resource yet, so none "
                    "exists.")
        return f"amlemu does not support this operation yet: {self.operation}."


def _words(segment: str) -> str:
    """A path segment in words: batchEndpoints -> batch endpoints."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", segment).lower()


def _singular(segment: str) -> str:
    words = _words(segment)
    if words.endswith("ies"):
        return words[:-3] + "y"
    if words.endswith(("xes", "ches", "shes", "sses")):
        return words[:-2]
    return words[:-1] if words.endswith("s") and not words.endswith("ss") else words


def _resource(kind: str, name: str) -> str:
    return f"{_singular(kind)} '{name}'"


def _owner(pairs: list[tuple[str, str]]) -> str:
    return f" of {_resource(*pairs[-1])}" if pairs else ""


def describe(method: str, path: str) -> Unserved | None:
    """The Azure ML operation `method path` names, or None for a path outside the Azure ML provider."""
    lowered = path.lower()
    marker = f"/providers/{PROVIDER.lower()}/"
    at = lowered.find(marker)
    if at < 0:
        return None
    segments = [s for s in path[at + len(marker):].split("/") if s]
    if not segments:
        return None
    pairs = [(segments[i], segments[i + 1]) for i in range(0, len(segments) - 1, 2)]
    method = method.upper()
    if len(segments) % 2 == 0:  # ends with a named resource
        *owners, (kind, name) = pairs
        verb = _VERBS.get(method, method)
        return Unserved(f"{verb} {_resource(kind, name)}{_owner(owners)}", missing_resource=method == "GET")
    last = segments[-1]
    if method == "POST" and pairs:  # an action on the resource before it
        return Unserved(f"{last} on {_resource(*pairs[-1])}{_owner(pairs[:-1])}", missing_resource=False)
    if method == "GET":
        return Unserved(f"list {_words(last)}{_owner(pairs)}", missing_resource=False)
    return Unserved(f"{method} {_words(last)}{_owner(pairs)}", missing_resource=False)
