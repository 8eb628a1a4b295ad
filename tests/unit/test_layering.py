"""The rooms keep to their side of the walls (docs/architecture.md): who may import whom, read off the source."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "emulator"


def _imports(path: Path) -> set[str]:
    """Every emulator module `path` imports, at any depth of the file (late imports count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("emulator"):
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("emulator"))
    return found


# Where each process is put together: it builds the store, the runtime, the broker, and hands them down.
COMPOSITION_ROOTS = {"api/app.py", "controller/main.py", "workers/node.py", "scoring/app.py"}


def _modules(room: str) -> list[Path]:
    return sorted(p for p in (PACKAGE / room).rglob("*.py") if str(p.relative_to(PACKAGE)) not in COMPOSITION_ROOTS)


def _offending(room: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> dict[str, list[str]]:
    seen = {}
    for path in _modules(room):
        bad = sorted(name for name in _imports(path)
                     if name.startswith(forbidden) and not name.startswith(allowed))
        if bad:
            seen[str(path.relative_to(PACKAGE))] = bad
    return seen


@pytest.mark.parametrize(("room", "forbidden", "allowed"), [
    # pure rules: nothing with I/O, nothing of the layers above
    ("domain", ("emulator.",), ("emulator.domain.", "emulator.errors.")),
    # the api shapes and routes; services own the store, Docker and Redis are the controller's and the nodes'
    ("api", ("emulator.store", "emulator.runtime", "emulator.dispatch", "emulator.workers", "emulator.controller",
             "emulator.scoring"), ()),
    # what the controller shares with the nodes is in dispatch
    ("controller", ("emulator.workers",), ()),
    ("dispatch", ("emulator.workers", "emulator.controller", "emulator.api", "emulator.services"), ()),
    ("workers", ("emulator.controller", "emulator.api", "emulator.services", "emulator.store"), ()),
    ("runtime", ("emulator.",), ("emulator.runtime.", "emulator.errors.")),
    # what runs inside jobs' containers, on the user's Python, where the emulator is not installed
    ("in_job", ("emulator.",), ()),
    # the MLflow server's client: as the runtime is Docker's, nothing above it
    ("tracking", ("emulator.",), ("emulator.tracking.", "emulator.errors.")),
    ("services", ("emulator.api", "emulator.controller", "emulator.workers", "emulator.scoring"), ()),
])
def test_a_room_imports_only_what_is_below_it(room, forbidden, allowed):
    assert _offending(room, forbidden, allowed) == {}


def test_the_controller_walks_one_way():
    """main → reconcilers → scheduling → specs → domain: nothing lower climbs back, and no reconciler imports
    another (the endpoint reconciler's probes are a part of it)."""
    assert _offending("controller/specs", ("emulator.controller.reconcilers", "emulator.controller.scheduling",
                                           "emulator.controller.main")) == {}
    assert _offending("controller/scheduling", ("emulator.controller.reconcilers", "emulator.controller.main")) == {}
    assert _offending("controller/reconcilers", ("emulator.controller.reconcilers", "emulator.controller.main"),
                      ("emulator.controller.reconcilers.model_server_probes",)) == {}


def test_no_module_outgrows_its_room():
    """Small modules: past ~300 lines a module holds more than one thing."""
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 310}
    assert long == {}
