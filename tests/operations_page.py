"""docs/supported-operations.md: every public method of the installed azure-ai-ml SDK's MLClient operation groups,
the REST calls it makes (read off the SDK's source by tests/sdk_rest_calls.py, plus the few tests/operations_notes.py
keeps by hand), and whether the emulator's FastAPI route table (create_app's routes) serves them.

Regenerate with `python -m tests.operations_page`; tests/unit/test_operations_page.py fails when the committed
page differs from what this module renders.
"""

import ast
import inspect
import re
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests import operations_notes as notes
from tests import sdk_source
from tests.sdk_rest_calls import Reach, reach
from tests.sdk_source import RestCall
from tests.sdk_surface import SURFACE

PAGE = Path(__file__).resolve().parents[1] / "docs" / "supported-operations.md"
COMMAND = "python -m tests.operations_page"
SUPPORTED, PARTIAL, NOT_YET = "supported", "partial", "not yet"
# The page writes the long ARM prefixes short; the legend above the table spells them out.
SHORT = (("{ws}", notes.WS_PATH), ("{rg}", notes.RG_PATH), ("{sub}", f"/subscriptions/{{subscriptionId}}{notes.PROVIDER}"))
ROUTE_WS = re.compile(r"/subscriptions/\{\w+\}/resourceGroups/\{\w+\}/providers/Microsoft\.MachineLearningServices"
                      r"/workspaces/\{\w+\}")
# The registry discovery's base URL carries this path: the SDK's registry-scoped calls arrive under it.
BASE_PATHS = ("", "/mferp/managementfrontend")


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    refuses: bool  # its handler only raises NotSupported ("amlemu does not support ... yet")
    summary: str


def _refuses(endpoint) -> bool:
    body = ast.parse(textwrap.dedent(inspect.getsource(endpoint))).body[0].body
    body = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Raise) and isinstance(body[0].exc, ast.Call) \
        and getattr(body[0].exc.func, "id", "") == "NotSupported"


def _summary(endpoint) -> str:
    """The handler's docstring up to its first full stop, else its name in words."""
    doc = " ".join((inspect.getdoc(endpoint) or "").split())
    return doc.split(". ")[0].rstrip(".") if doc else endpoint.__name__.replace("_", " ")


def _walk(routes):
    from fastapi.routing import APIRoute

    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):  # FastAPI's included routers
            yield from _walk(route.original_router.routes)


def route_table() -> list[Route]:
    """create_app's routes, built on a throwaway data directory."""
    from emulator.api.app import create_app
    from emulator.settings import Settings

    with tempfile.TemporaryDirectory() as data_dir:
        app = create_app(Settings(data_dir=Path(data_dir), external_fetch=False))
        try:
            return [Route(method, r.path, _refuses(r.endpoint), _summary(r.endpoint))
                    for r in _walk(app.routes) for method in sorted(r.methods)]
        finally:
            app.state.context.store.close()


def _segments(path: str) -> list[str]:
    return [s for s in path.split("?")[0].split("/") if s]


def _matches(template: str, route: str) -> bool:
    """A URL template's path against a route's: literal segments equal but for case (ARM's), parameters against
    parameters, a `{x:path}` parameter taking the rest."""
    sent, served = _segments(template), _segments(route)
    for i, segment in enumerate(served):
        if segment.endswith(":path}"):
            return len(sent) > i
        if i >= len(sent) or sent[i] == "{...}":  # a value the SDK formats in by hand: any segment
            if i >= len(sent):
                return False
            continue
        if sent[i].startswith("{") != segment.startswith("{"):
            return False
        if not segment.startswith("{") and segment.lower() != sent[i].lower():
            return False
    return len(sent) == len(served)


def serving(call: RestCall, routes: list[Route]) -> Route | None:
    path = call.path
    if path.startswith(notes.BLOB):  # host-style blob URLs are served path-style (the api's ArmPaths middleware)
        path = "/blob/{account}" + path[len(notes.BLOB):]
    return next((r for r in routes for base in BASE_PATHS
                 if r.method == call.method and _matches(base + path, r.path)), None)


def short(path: str) -> str:
    for name, prefix in SHORT:
        path = path.replace(prefix, name)
    return path


@dataclass(frozen=True)
class Row:
    group: str
    method: str
    status: str
    calls: tuple[tuple[RestCall, bool], ...]  # each call, and whether a route serves it
    note: str


def sdk_groups() -> dict[str, type]:
    """MLClient's operation groups: its public properties, and `_code` (the sweep reads it back)."""
    from azure.ai.ml import MLClient

    held = sdk_source.attribute_types(MLClient)
    names = [n for n, v in vars(MLClient).items() if isinstance(v, property) and not n.startswith("_")] + ["_code"]
    return {n: held[n] for n in sorted(names, key=lambda n: n.lstrip("_"))
            if n in held and held[n].__name__.endswith("Operations")}


def public_methods(cls: type) -> list[str]:
    return sorted(n for n, v in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_"))


def _status(calls: list[tuple[RestCall, bool]]) -> str:
    if all(served for _, served in calls):
        return SUPPORTED
    # Reads of the workspace and its datastores serve nearly every operation: alone they make nothing partial.
    if not any(served for call, served in calls if short(str(call)) not in notes.CONTEXT_CALLS):
        return NOT_YET
    return PARTIAL


def _row(group: str, method: str, found: Reach, routes: list[Route], done: dict) -> Row:
    hand = notes.HAND_CALLS.get((group, method))
    calls = [(c, (r := serving(c, routes)) is not None and not r.refuses) for c in sorted(found.calls)]
    said = []
    if hand:
        calls += [(c, served if served is not None else (r := serving(c, routes)) is not None and not r.refuses)
                  for c, served in hand.calls]
        said.append(hand.why)
    via = sorted(f"{g}.{m}" for g, m in found.via)
    if (group, method) in notes.LIMITS:
        status, why = notes.LIMITS[(group, method)]
        said.append(why)
    elif calls:
        status = _status(calls)
    elif via:  # it works through other groups' operations: as well as they do
        statuses = {done[tuple(v.split("."))].status for v in via if tuple(v.split(".")) in done}
        status = statuses.pop() if len(statuses) == 1 else PARTIAL
    else:
        status, why = SUPPORTED, notes.CLIENT_SIDE[(group, method)]
        said.append(why)
    if via:
        said.append("through " + ", ".join(f"`{v}`" for v in via))
    if status == PARTIAL and (unserved := [short(str(c)) for c, served in calls if not served]):
        said.append("not served: " + ", ".join(f"`{u}`" for u in unserved))
    if method in _swept(group):
        said.insert(0, "†")
    return Row(group, method, status, tuple(calls), "; ".join(said))


def _swept(group: str) -> tuple[str, ...]:
    return next((g.supported for g in SURFACE if g.attr == group), ())


def rows(routes: list[Route] | None = None) -> list[Row]:
    routes = route_table() if routes is None else routes
    groups = sdk_groups()
    by_class = {cls: name for name, cls in groups.items()}
    done: dict[tuple[str, str], Row] = {}
    found = {(g, m): reach(cls, m, by_class) for g, cls in groups.items() for m in public_methods(cls)}
    # Operations that only call other groups' operations come after those, so their status can follow.
    for group, method in sorted(found, key=lambda k: not found[k].calls):
        done[(group, method)] = _row(group, method, found[(group, method)], routes, done)
    return [done[k] for k in found]


def _calls_cell(calls) -> str:
    return "<br>".join(f"`{short(str(c))}`" if served else f"✗ `{short(str(c))}`" for c, served in calls)


def _extra_routes(routes: list[Route]) -> list[str]:
    lines = ["| method | path | what it does |", "| --- | --- | --- |"]
    for r in routes:
        if r.path.startswith("/_emulator"):
            lines.append(f"| {r.method} | `{short(ROUTE_WS.sub('{ws}', r.path))}` | {r.summary} |")
    return lines


def render(routes: list[Route] | None = None) -> str:
    routes = route_table() if routes is None else routes
    table = rows(routes)
    counts = {s: sum(r.status == s for r in table) for s in (SUPPORTED, PARTIAL, NOT_YET)}
    from azure.ai.ml import __version__ as sdk_version

    lines = [notes.INTRO.format(command=COMMAND, version=sdk_version, total=len(table), **{
        k.replace(" ", "_"): v for k, v in counts.items()}, legend="\n".join(
            f"- `{name}` = `{prefix}`" for name, prefix in SHORT)),
        "| operation group | method | status | REST calls (✗: no route serves it) | note |",
        "| --- | --- | --- | --- | --- |"]
    lines += [f"| `ml_client.{r.group}` | `{r.method}` | {r.status} | {_calls_cell(r.calls)} | {r.note} |"
              for r in table]
    lines += ["", notes.EXTRAS, "", *_extra_routes(routes), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    PAGE.write_text(render())
    print(f"wrote {PAGE}")
