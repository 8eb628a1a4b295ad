"""Sweep jobs: the PUT body (`jobType: Sweep`) checked, the command job each trial is, and the sweep's own rules
(its limits against a clock, its best trial). Pure: the clock and the seed are passed in; sampling is in
sampling.py, early termination in early_termination.py, and what every parent job shares in children.py.

A trial is an ordinary command job: the sweep's `trial` (command, code, environment, resources) with the sampled
values as literal inputs, `${{search_space.x}}` in the command read as `${{inputs.x}}`, on the sweep's compute.
"""

import json
import re
from dataclasses import dataclass
from datetime import datetime

from emulator.domain import durations, payload
from emulator.domain.jobs import early_termination, search_space
from emulator.errors import ValidationFailed

P = "properties"
ALGORITHMS = {"Random": search_space.KINDS, "Grid": ("choice",), "Bayesian": ("choice", "uniform", "quniform")}
MAX_TOTAL, MAX_CONCURRENT = 1000, 100  # Azure's limits
_SEARCH = re.compile(r"\$\{\{\s*search_space\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# What Azure sets on a sweep once a trial has scored (the SDK's download reads the first).
BEST_CHILD, SCORE, BEST_STATUS = "best_child_run_id", "score", "best_metric_status"
HYPERPARAMETERS = "hyperparameters"  # a trial's sampled values, as JSON, among its properties


@dataclass(frozen=True)
class Sampling:
    algorithm: str  # one of ALGORITHMS
    seed: int | None


@dataclass(frozen=True)
class SweepSpec:
    space: dict[str, search_space.Dimension]
    sampling: Sampling
    metric: str
    maximize: bool
    max_total: int
    max_concurrent: int
    timeout_seconds: float | None
    trial_timeout_seconds: float | None
    policy: early_termination.Policy | None
    trial: dict


def _sampling(value: object) -> Sampling:
    target = f"{P}.samplingAlgorithm"
    body = payload.obj(value, target, required=True)
    kind = body.get("samplingAlgorithmType")
    if kind not in ALGORITHMS:
        raise ValidationFailed(f"{target}.samplingAlgorithmType must be one of {', '.join(ALGORITHMS)}, got {kind!r}.",
                               target=f"{target}.samplingAlgorithmType")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValidationFailed(f"{target}.seed must be a non-negative integer, got {seed!r}.", target=f"{target}.seed")
    if body.get("rule") not in (None, "Random"):
        raise ValidationFailed(f"{target}.rule: amlemu samples at random ('Random'), not {body['rule']!r}.",
                               target=f"{target}.rule")
    return Sampling(kind, seed)


def _objective(value: object) -> tuple[str, bool]:
    target = f"{P}.objective"
    body = payload.obj(value, target, required=True)
    metric = payload.string(body.get("primaryMetric"), f"{target}.primaryMetric")
    if not metric:
        raise ValidationFailed(f"{target}.primaryMetric names the metric the trials log (with mlflow.log_metric) "
                               "that the sweep optimises; it is missing.", target=f"{target}.primaryMetric")
    goal = str(body.get("goal") or "").lower()
    if goal not in ("maximize", "minimize"):
        raise ValidationFailed(f"{target}.goal must be 'maximize' or 'minimize', got {body.get('goal')!r}.",
                               target=f"{target}.goal")
    return metric, goal == "maximize"


def _limit(limits: dict, key: str, high: int, default: int) -> int:
    value = limits.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ValidationFailed(f"{P}.limits.{key} must be an integer from 1 to {high}, got {value!r}.",
                               target=f"{P}.limits.{key}")
    return value


def _seconds(limits: dict, key: str) -> float | None:
    value = limits.get(key)
    if value is None:
        return None
    seconds = durations.parse_seconds(value, f"{P}.limits.{key}")
    if seconds <= 0:
        raise ValidationFailed(f"{P}.limits.{key} must be longer than zero, got {value!r}.", target=f"{P}.limits.{key}")
    return seconds


def _trial(value: object, space: dict) -> dict:
    target = f"{P}.trial"
    trial = payload.obj(value, target, required=True)
    command = payload.required_string(trial.get("command"), f"{target}.command")
    payload.required_string(trial.get("environmentId"), f"{target}.environmentId")
    unknown = sorted(set(_SEARCH.findall(command)) - set(space))
    if unknown:
        raise ValidationFailed(f"{target}.command refers to search_space.{unknown[0]}, which is not in "
                               f"{P}.searchSpace.", target=f"{target}.command")
    return trial


def parse(body: object) -> tuple[dict, SweepSpec]:
    """The properties to store (as given) and the spec the controller drives the sweep by."""
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = dict(payload.obj(body.get(P), P, required=True))
    space = search_space.parse(props.get("searchSpace"))
    sampling = _sampling(props.get("samplingAlgorithm"))
    search_space.allow_only(space, ALGORITHMS[sampling.algorithm], sampling.algorithm)
    metric, maximize = _objective(props.get("objective"))
    policy = early_termination.parse(props.get("earlyTermination"))
    if policy is not None and sampling.algorithm == "Bayesian":
        raise ValidationFailed(f"{P}.earlyTermination: Bayesian sampling takes no early termination policy.",
                               target=f"{P}.earlyTermination")
    limits = payload.obj(props.get("limits"), f"{P}.limits")
    max_total = _limit(limits, "maxTotalTrials", MAX_TOTAL, MAX_TOTAL)
    if sampling.algorithm == "Grid":
        max_total = min(max_total, search_space.grid_size(space))
    spec = SweepSpec(space, sampling, metric, maximize, max_total,
                     _limit(limits, "maxConcurrentTrials", MAX_CONCURRENT, min(max_total, MAX_CONCURRENT)),
                     _seconds(limits, "timeout"), _seconds(limits, "trialTimeout"), policy,
                     _trial(props.get("trial"), space))
    props.pop("status", None)  # read-only
    for kind in ("inputs", "outputs"):  # the SDK sends null for an output left to its defaults
        props[kind] = {k: v for k, v in payload.obj(props.get(kind), f"{P}.{kind}").items() if v is not None}
    props["isArchived"] = bool(props.get("isArchived", False))
    return props, spec


def text(value) -> str:
    """A sampled value as a literal input's text."""
    return repr(value) if isinstance(value, float) else str(value)


def trial_body(props: dict, spec: SweepSpec, name: str, params: dict) -> dict:
    """The command job (its PUT body) of the trial `name` with the sampled `params`."""
    trial = spec.trial
    limits = {"jobLimitsType": "Command", "timeout": props["limits"]["trialTimeout"]} \
        if (props.get("limits") or {}).get("trialTimeout") else None
    inputs = {**(props.get("inputs") or {}),
              **{key: {"jobInputType": "literal", "value": text(value)} for key, value in params.items()}}
    body = {"jobType": "Command", "command": _SEARCH.sub(r"${{inputs.\1}}", trial["command"]),
            "codeId": trial.get("codeId"), "environmentId": trial["environmentId"],
            "environmentVariables": trial.get("environmentVariables") or {},
            "resources": trial.get("resources") or props.get("resources"), "distribution": trial.get("distribution"),
            "computeId": props.get("computeId"), "inputs": inputs, "outputs": props.get("outputs") or {},
            "experimentName": props.get("experimentName"), "displayName": name, "limits": limits,
            "queueSettings": props.get("queueSettings"), "tags": dict(props.get("tags") or {}),
            "properties": {HYPERPARAMETERS: json.dumps(params, sort_keys=True)}}
    return {P: {key: value for key, value in body.items() if value is not None}}


def timed_out(started: datetime | None, seconds: float | None, now: datetime) -> bool:
    return started is not None and seconds is not None and (now - started).total_seconds() >= seconds


def best(scores: dict[str, float], maximize: bool) -> str | None:
    """The trial with the best score (the first of equals, by name order given)."""
    if not scores:
        return None
    pick = max if maximize else min
    return pick(scores, key=lambda name: scores[name])
