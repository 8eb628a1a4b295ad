"""Sweep rules without I/O: search spaces parsed and refused by field, Azure's meaning of each distribution, seeded
sampling reproducible (optuna), grids enumerated, early termination on metric series, limits on a fake clock, and
a parent's status rolled up from its children's."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain.jobs import children, early_termination, sampling, search_space, sweep
from emulator.domain.jobs.status import JobStatus as S
from emulator.errors import InvalidTransition, ValidationFailed

NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)


def space(**dims) -> dict:
    return search_space.parse(dims)


def body(**props) -> dict:
    base = {"jobType": "Sweep", "searchSpace": {"C": ["uniform", [0.1, 10]], "kernel": ["choice", [["linear", "rbf"]]]},
            "samplingAlgorithm": {"samplingAlgorithmType": "Random", "seed": 7},
            "objective": {"primaryMetric": "accuracy", "goal": "maximize"},
            "limits": {"maxTotalTrials": 6, "maxConcurrentTrials": 2, "jobLimitsType": "Sweep"},
            "computeId": "/subscriptions/s/resourceGroups/rg/providers/p/workspaces/w/computes/cpu",
            "trial": {"command": "python train.py --C ${{search_space.C}} --k ${{search_space.kernel}}",
                      "environmentId": "azureml:env@latest"}}
    return {"properties": {**base, **props}}


@pytest.mark.parametrize(("entry", "message"), [
    (["gaussian", [0, 1]], "unknown distribution"),
    (["uniform", [1, 1]], "min_value < max_value"),
    (["uniform", [0]], "takes 2 argument"),
    (["normal", [0, 0]], "sigma > 0"),
    (["quniform", [0, 1, 0]], "q > 0"),
    (["randint", [0]], "at least 1"),
    (["choice", [[]]], "non-empty"),
    (["choice", [[{"nested": 1}]]], "nested"),
    ("uniform(0, 1)", "[distribution, [arguments]]"),
])
def test_a_bad_distribution_is_refused_naming_its_hyperparameter(entry, message):
    with pytest.raises(ValidationFailed) as caught:
        search_space.parse({"lr": entry})
    assert caught.value.target == "properties.searchSpace.lr" and message in caught.value.message


def test_each_distribution_means_what_azure_says():
    dims = space(l=["loguniform", [-2, 0]], ql=["qloguniform", [0, 3, 5]], q=["quniform", [0, 10, 2]],
                 n=["normal", [10, 2]], qn=["qnormal", [10, 2, 0.5]], r=["randint", [4]], c=["choice", [["a", "b"]]])
    assert dims["l"].value(-2) == pytest.approx(math.exp(-2))  # bounds are exponents
    assert dims["ql"].value(3) == 20  # round(e^3 / 5) * 5, an int for an integer q
    assert dims["q"].value(4.9) == 4 and dims["r"].value(3) == 3 and dims["c"].value(1) == "b"
    assert dims["n"].value(0.5) == pytest.approx(10) and dims["qn"].value(0.6) == 10.5
    assert dims["n"].draw == search_space.Draw("float", 1e-12, 1 - 1e-12)  # drawn as a quantile


def test_seeded_random_sampling_is_reproducible_and_independent_of_what_finished():
    dims = space(C=["uniform", [0.1, 10]], k=["choice", [["linear", "rbf"]]], n=["qnormal", [0, 1, 0.5]])
    first = sampling.next_draws(dims, "Random", 42, [], 4, True)
    again = sampling.next_draws(dims, "Random", 42, [], 4, True)
    later = sampling.next_draws(dims, "Random", 42, [sampling.Made(d, 0.5) for d in first[:3]], 1, True)
    other = sampling.next_draws(dims, "Random", 43, [], 4, True)
    assert first == again and later == first[3:] and other != first
    values = [sampling.values(dims, d) for d in first]
    assert all(0.1 <= v["C"] <= 10 and v["k"] in ("linear", "rbf") for v in values)
    assert len({v["C"] for v in values}) == 4


def test_a_grid_visits_every_point_once_in_a_seeded_order():
    dims = space(a=["choice", [[1, 2, 3]]], b=["choice", [["x", "y"]]])
    draws = sampling.next_draws(dims, "Grid", 3, [], 6, True)
    points = [tuple(sampling.values(dims, d).values()) for d in draws]
    assert sorted(points) == [(1, "x"), (1, "y"), (2, "x"), (2, "y"), (3, "x"), (3, "y")]
    assert sampling.next_draws(dims, "Grid", 3, [sampling.Made(d) for d in draws[:4]], 2, True) == draws[4:]
    assert search_space.grid_size(dims) == 6


def test_bayesian_sampling_learns_from_scored_trials_within_its_space():
    dims = space(C=["uniform", [0, 1]])
    made = [sampling.Made({"C": c / 10}, score=-(c / 10 - 0.8) ** 2) for c in range(10)]
    draws = sampling.next_draws(dims, "Bayesian", 5, made, 3, True)
    assert draws == sampling.next_draws(dims, "Bayesian", 5, made, 3, True) and all(0 <= d["C"] <= 1 for d in draws)


def test_a_sweep_body_is_parsed_and_a_grid_takes_choices_only():
    _props, spec = sweep.parse(body())
    assert (spec.metric, spec.maximize, spec.max_total, spec.max_concurrent, spec.sampling.seed) == \
        ("accuracy", True, 6, 2, 7)
    grid = body(samplingAlgorithm={"samplingAlgorithmType": "Grid"})
    with pytest.raises(ValidationFailed) as caught:
        sweep.parse(grid)
    assert caught.value.target == "properties.searchSpace.C"
    grid["properties"]["searchSpace"] = {"C": ["choice", [[1, 2, 3]]], "kernel": ["choice", [["rbf"]]]}
    assert sweep.parse(grid)[1].max_total == 3  # the grid's size caps the trials


@pytest.mark.parametrize(("change", "target"), [
    ({"objective": {"goal": "maximize"}}, "properties.objective.primaryMetric"),
    ({"objective": {"primaryMetric": "acc", "goal": "best"}}, "properties.objective.goal"),
    ({"samplingAlgorithm": {"samplingAlgorithmType": "Sobolish"}}, "properties.samplingAlgorithm.samplingAlgorithmType"),
    ({"limits": {"maxTotalTrials": 0}}, "properties.limits.maxTotalTrials"),
    ({"limits": {"maxConcurrentTrials": 101}}, "properties.limits.maxConcurrentTrials"),
    ({"limits": {"timeout": "PT0S"}}, "properties.limits.timeout"),
    ({"earlyTermination": {"policyType": "Hunch"}}, "properties.earlyTermination.policyType"),
    ({"earlyTermination": {"policyType": "Bandit"}}, "properties.earlyTermination.slackFactor"),
    ({"earlyTermination": {"policyType": "TruncationSelection", "truncationPercentage": 100}},
     "properties.earlyTermination.truncationPercentage"),
    ({"samplingAlgorithm": {"samplingAlgorithmType": "Bayesian"},
      "earlyTermination": {"policyType": "MedianStopping"}}, "properties.earlyTermination"),
    ({"trial": {"command": "python t.py ${{search_space.lr}}", "environmentId": "e"}}, "properties.trial.command"),
])
def test_bad_sweep_settings_are_refused_naming_the_field(change, target):
    with pytest.raises(ValidationFailed) as caught:
        sweep.parse(body(**change))
    assert caught.value.target == target


def test_a_trial_is_a_command_job_with_its_values_as_literal_inputs():
    props, spec = sweep.parse(body(limits={"maxTotalTrials": 2, "trialTimeout": "PT2M"}))
    trial = sweep.trial_body(props, spec, "s_0", {"C": 0.5, "kernel": "rbf"})["properties"]
    assert trial["jobType"] == "Command" and trial["computeId"] == props["computeId"]
    assert trial["command"] == "python train.py --C ${{inputs.C}} --k ${{inputs.kernel}}"
    assert trial["inputs"] == {"C": {"jobInputType": "literal", "value": "0.5"},
                               "kernel": {"jobInputType": "literal", "value": "rbf"}}
    assert trial["limits"]["timeout"] == "PT2M" and trial["displayName"] == "s_0"


def test_limits_run_on_the_clock_given():
    assert not sweep.timed_out(NOON, 60, NOON + timedelta(seconds=59))
    assert sweep.timed_out(NOON, 60, NOON + timedelta(seconds=60))
    assert not sweep.timed_out(None, 60, NOON) and not sweep.timed_out(NOON, None, NOON + timedelta(days=9))
    assert sweep.best({"a": 0.5, "b": 0.9, "c": 0.9}, True) == "b" and sweep.best({"a": 0.5, "b": 0.9}, False) == "a"


def policy(**kwargs) -> early_termination.Policy:
    return early_termination.parse(kwargs)


def test_bandit_stops_a_trial_outside_the_slack_of_the_best_at_each_interval():
    bandit = policy(policyType="Bandit", slackFactor=0.2, evaluationInterval=1, delayEvaluation=1)
    series = {"good": [0.5, 0.8], "fair": [0.5, 0.7], "bad": [0.5, 0.6]}
    # at interval 2 the best is 0.8: the bar is 0.8 / 1.2 = 0.667
    assert early_termination.to_stop(bandit, series, {"good", "fair", "bad"}, True) == {"bad"}
    assert early_termination.to_stop(bandit, {"bad": [0.1], "good": [0.9]}, {"bad"}, True) == set()  # delayed
    amount = policy(policyType="Bandit", slackAmount=0.15)
    assert early_termination.to_stop(amount, {"low": [0.3], "high": [0.1]}, {"low", "high"}, False) == {"low"}
    assert early_termination.to_stop(bandit, series, {"good", "fair"}, True) == set()  # only running ones stop


def test_median_stopping_and_truncation_selection():
    median = policy(policyType="MedianStopping")
    series = {"a": [0.9, 0.9], "b": [0.8, 0.85], "c": [0.2, 0.3]}
    assert early_termination.to_stop(median, series, {"a", "b", "c"}, True) == {"c"}
    truncation = policy(policyType="TruncationSelection", truncationPercentage=50, evaluationInterval=2)
    series = {"a": [0.1, 0.9], "b": [0.9, 0.8], "c": [0.5, 0.2], "d": [0.2, 0.1]}
    assert early_termination.to_stop(truncation, series, set(series), True) == {"c", "d"}  # judged at 2 only
    assert early_termination.to_stop(truncation, series, set(series), False) == {"a", "b"}


def test_a_parent_rolls_up_from_its_children():
    up, any_, all_ = children.rolled_up, children.Outcome.ANY_COMPLETED, children.Outcome.ALL_COMPLETED
    assert up(S.RUNNING, [S.COMPLETED, S.RUNNING], True, any_) is None  # a child still runs
    assert up(S.RUNNING, [S.COMPLETED, S.FAILED], False, any_) is None  # more children to come
    assert up(S.RUNNING, [S.COMPLETED, S.FAILED, S.CANCELED], True, any_) == S.COMPLETED
    assert up(S.RUNNING, [S.COMPLETED, S.FAILED], True, all_) == S.FAILED
    assert up(S.RUNNING, [S.FAILED, S.CANCELED], True, any_) == S.FAILED
    assert up(S.CANCEL_REQUESTED, [S.CANCELED, S.COMPLETED], False, any_) == S.CANCELED
    assert up(S.CANCEL_REQUESTED, [S.CANCEL_REQUESTED], False, any_) is None
    assert children.advance(S.NOT_STARTED, S.RUNNING) == S.RUNNING
    with pytest.raises(InvalidTransition):
        children.advance(S.NOT_STARTED, S.QUEUED)
    assert children.child_name("sweep", 3) == "sweep_3"
