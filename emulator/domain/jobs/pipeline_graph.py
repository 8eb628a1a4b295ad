"""A pipeline job's steps as a graph: the bindings that wire them, checked, and which steps may start. Pure.

A step's input (or output) value may bind, in Azure's syntax, to the pipeline's own input
`${{parent.inputs.x}}`, another step's output `${{parent.jobs.a.outputs.b}}`, or (outputs only) the
pipeline's output `${{parent.outputs.y}}`. A step waits for every step whose output it reads; the order is
checked once, at submit, with the standard library's topological sorter (a cycle is refused, named).
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter

from emulator.errors import ValidationFailed

P = "properties.jobs"
_BINDING = re.compile(r"\$\{\{\s*parent\.(inputs|outputs|jobs)\.([A-Za-z_][\w-]*)"
                      r"(?:\.(inputs|outputs)\.([A-Za-z_][\w-]*))?\s*\}\}")


@dataclass(frozen=True)
class Binding:
    kind: str  # "inputs" or "outputs" of the pipeline, or "jobs" for another step's port
    name: str  # the pipeline's input or output, or the other step
    port: str | None = None  # the other step's output, for kind "jobs"


@dataclass(frozen=True)
class Step:
    """What the graph needs of a step: its port values as sent, and the outputs its component declares."""
    inputs: Mapping[str, str]  # input name -> its value as written (a binding, or a literal)
    outputs: Mapping[str, str]  # output name -> its value as written ("" when it binds nothing)
    declared_outputs: frozenset[str]


def bindings(value: object, target: str) -> list[Binding]:
    """The bindings in a port's value; a `${{parent...}}` that is none of Azure's forms is refused."""
    if not isinstance(value, str) or "${{" not in value:
        return []
    found = []
    for match in _BINDING.finditer(value):
        kind, name, sub, port = match.groups()
        if (kind == "jobs") != (sub is not None) or (sub is not None and sub != "outputs"):
            raise ValidationFailed(f"{target}: {match[0]} binds nothing: a step reads ${{{{parent.inputs.<input>}}}} "
                                   "or ${{parent.jobs.<step>.outputs.<output>}}.", target=target)
        found.append(Binding(kind, name, port))
    if len(found) != value.count("${{"):
        raise ValidationFailed(f"{target}: {value[:200]!r} holds a binding that is not ${{{{parent.inputs.<input>}}}}, "
                               "${{parent.outputs.<output>}} or ${{parent.jobs.<step>.outputs.<output>}}.",
                               target=target)
    return found


def upstream(steps: Mapping[str, Step], pipeline_inputs: Iterable[str],
             pipeline_outputs: Iterable[str]) -> dict[str, set[str]]:
    """{step: the steps whose outputs it reads}, every binding checked against what exists, the order acyclic."""
    inputs, outputs = set(pipeline_inputs), set(pipeline_outputs)
    graph: dict[str, set[str]] = {}
    for name, step in steps.items():
        graph[name] = set()
        for port, value in step.inputs.items():
            target = f"{P}.{name}.inputs.{port}"
            for binding in bindings(value, target):
                graph[name] |= _source(binding, steps, inputs, name, target)
        for port, value in step.outputs.items():
            target = f"{P}.{name}.outputs.{port}"
            if port not in step.declared_outputs:
                raise ValidationFailed(f"{target}: the step's component has no output '{port}' (its outputs: "
                                       f"{', '.join(sorted(step.declared_outputs)) or 'none'}).", target=target)
            for binding in bindings(value, target):
                if binding.kind != "outputs" or binding.name not in outputs:
                    raise ValidationFailed(f"{target}: a step's output binds to one of the pipeline's outputs "
                                           f"(${{{{parent.outputs.<output>}}}}: {', '.join(sorted(outputs)) or 'none'}).",
                                           target=target)
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        cycle = " -> ".join(exc.args[1])
        raise ValidationFailed(f"{P}: the steps read each other's outputs in a cycle ({cycle}); a pipeline's steps "
                               "must form a graph without cycles.", target=f"{P}.{exc.args[1][0]}") from None
    return graph


def _source(binding: Binding, steps: Mapping[str, Step], inputs: set[str], name: str, target: str) -> set[str]:
    if binding.kind == "inputs":
        if binding.name not in inputs:
            raise ValidationFailed(f"{target}: the pipeline has no input '{binding.name}' (its inputs: "
                                   f"{', '.join(sorted(inputs)) or 'none'}).", target=target)
        return set()
    if binding.kind == "outputs":
        raise ValidationFailed(f"{target}: a step's input cannot read the pipeline's output "
                               f"'{binding.name}'; read the step output it binds to instead.", target=target)
    if binding.name == name:
        raise ValidationFailed(f"{target}: the step reads its own output '{binding.port}'.", target=target)
    other = steps.get(binding.name)
    if other is None:
        raise ValidationFailed(f"{target}: the pipeline has no step '{binding.name}' (its steps: "
                               f"{', '.join(sorted(steps))}).", target=target)
    if binding.port not in other.declared_outputs:
        raise ValidationFailed(f"{target}: step '{binding.name}' has no output '{binding.port}' (its outputs: "
                               f"{', '.join(sorted(other.declared_outputs)) or 'none'}).", target=target)
    return {binding.name}


def ready(graph: Mapping[str, set[str]], completed: set[str], begun: set[str]) -> list[str]:
    """The steps that may start now: not begun, every step they read from completed. In the graph's order."""
    return [s for s in graph if s not in begun and graph[s] <= completed]


def downstream(graph: Mapping[str, set[str]], of: set[str]) -> set[str]:
    """Every step that reads, directly or not, from the steps `of` (which never run once those fail)."""
    found: set[str] = set()
    frontier = set(of)
    while frontier:
        frontier = {s for s, ups in graph.items() if ups & frontier and s not in found}
        found |= frontier
    return found
