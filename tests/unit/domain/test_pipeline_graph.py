"""A pipeline's steps as a graph: bindings as Azure writes them, checked against what exists, cycles refused,
which steps may start, and what a failed step stops."""

import pytest

from emulator.domain.jobs import pipeline_graph as g
from emulator.errors import ValidationFailed


def step(inputs: dict | None = None, outputs: dict | None = None, declared=("out",)) -> g.Step:
    return g.Step(inputs or {}, outputs or {}, frozenset(declared))


# prepare -> train -> evaluate, and evaluate also reads prepare
PIPELINE = {
    "prepare": step({"raw": "${{parent.inputs.raw}}", "ratio": "0.2"}, {"out": ""}),
    "train": step({"data": "${{parent.jobs.prepare.outputs.out}}", "lr": "${{parent.inputs.lr}}"},
                  {"out": "${{parent.outputs.model}}"}),
    "evaluate": step({"model": "${{parent.jobs.train.outputs.out}}", "data": "${{parent.jobs.prepare.outputs.out}}"}),
}


def test_bindings_in_azures_forms():
    assert g.bindings("${{parent.inputs.x}}", "t") == [g.Binding("inputs", "x")]
    assert g.bindings("${{ parent.jobs.a.outputs.b }}", "t") == [g.Binding("jobs", "a", "b")]
    assert g.bindings("--lr ${{parent.inputs.lr}} --n ${{parent.inputs.n}}", "t") == [
        g.Binding("inputs", "lr"), g.Binding("inputs", "n")]
    assert g.bindings("0.5", "t") == [] and g.bindings(3, "t") == []
    for bad in ("${{parent.jobs.a}}", "${{parent.jobs.a.inputs.b}}", "${{parent.inputs}}", "${{inputs.x}}",
                "${{parent.inputs.x.y.z}}"):
        with pytest.raises(ValidationFailed) as caught:
            g.bindings(bad, "properties.jobs.s.inputs.i")
        assert caught.value.target == "properties.jobs.s.inputs.i"


def test_the_graph_of_a_three_step_pipeline():
    graph = g.upstream(PIPELINE, ["raw", "lr"], ["model"])
    assert graph == {"prepare": set(), "train": {"prepare"}, "evaluate": {"train", "prepare"}}
    assert g.ready(graph, set(), set()) == ["prepare"]
    assert g.ready(graph, {"prepare"}, {"prepare"}) == ["train"]
    assert g.ready(graph, {"prepare", "train"}, {"prepare", "train"}) == ["evaluate"]
    assert g.downstream(graph, {"prepare"}) == {"train", "evaluate"}
    assert g.downstream(graph, {"train"}) == {"evaluate"} and g.downstream(graph, {"evaluate"}) == set()


def test_independent_steps_are_ready_together():
    graph = g.upstream({"a": step(), "b": step(), "c": step({"x": "${{parent.jobs.a.outputs.out}}"})}, [], [])
    assert g.ready(graph, set(), set()) == ["a", "b"]
    assert g.ready(graph, {"a"}, {"a", "b"}) == ["c"]


@pytest.mark.parametrize(("steps", "target", "why"), [
    ({"a": step({"x": "${{parent.jobs.nope.outputs.out}}"})}, "properties.jobs.a.inputs.x", "no step 'nope'"),
    ({"a": step(), "b": step({"x": "${{parent.jobs.a.outputs.other}}"})}, "properties.jobs.b.inputs.x",
     "has no output 'other'"),
    ({"a": step({"x": "${{parent.inputs.missing}}"})}, "properties.jobs.a.inputs.x", "no input 'missing'"),
    ({"a": step({"x": "${{parent.outputs.model}}"})}, "properties.jobs.a.inputs.x", "cannot read the pipeline's"),
    ({"a": step({"x": "${{parent.jobs.a.outputs.out}}"})}, "properties.jobs.a.inputs.x", "its own output"),
    ({"a": step(outputs={"out": "${{parent.outputs.nope}}"})}, "properties.jobs.a.outputs.out", "pipeline's outputs"),
    ({"a": step(outputs={"extra": ""})}, "properties.jobs.a.outputs.extra", "no output 'extra'"),
])
def test_a_binding_to_what_does_not_exist_is_refused_naming_the_field(steps, target, why):
    with pytest.raises(ValidationFailed) as caught:
        g.upstream(steps, ["raw"], ["model"])
    assert caught.value.target == target and why in caught.value.message


def test_a_cycle_is_refused_naming_it():
    steps = {"a": step({"x": "${{parent.jobs.c.outputs.out}}"}), "b": step({"x": "${{parent.jobs.a.outputs.out}}"}),
             "c": step({"x": "${{parent.jobs.b.outputs.out}}"}), "free": step()}
    with pytest.raises(ValidationFailed) as caught:
        g.upstream(steps, [], [])
    assert "cycle" in caught.value.message and caught.value.target.startswith("properties.jobs.")
    assert all(name in caught.value.message for name in ("a", "b", "c"))
