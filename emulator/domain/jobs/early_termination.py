"""Early termination policies of a sweep, as rules over the primary metric each trial has logged. Pure.

An *interval* is one logged value of the primary metric: a trial that has logged k values has reached interval k.
A policy is applied at the intervals k > `delay_evaluation` that are multiples of `evaluation_interval` (0 counts as
1), and only ever stops trials still running; every trial that reached interval k is compared at k, so a trial
late to an interval is judged against the same peers as the early ones.

- Bandit: a trial whose best value up to k falls short of the best trial's by more than the slack (a factor,
  best / (1 + factor) when maximising, best * (1 + factor) when minimising; or an absolute amount) stops.
- MedianStopping: a trial whose best value up to k is worse than the median of the other trials' running averages
  over intervals 1..k stops.
- TruncationSelection: at each k, the `truncation_percentage` % worst trials at k (by their value at k) stop.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, median

from emulator.domain import payload
from emulator.errors import ValidationFailed

TARGET = "properties.earlyTermination"
POLICIES = ("Bandit", "MedianStopping", "TruncationSelection")


@dataclass(frozen=True)
class Policy:
    kind: str  # one of POLICIES
    evaluation_interval: int = 1
    delay_evaluation: int = 0
    slack_factor: float = 0.0
    slack_amount: float = 0.0
    truncation_percentage: int = 0

    def evaluated_at(self, interval: int) -> bool:
        return interval > self.delay_evaluation and interval % max(self.evaluation_interval, 1) == 0


def _count(body: dict, key: str, low: int = 0, high: int | None = None) -> int:
    value = body.get(key) or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise ValidationFailed(f"{TARGET}.{key} must be an integer {bounds}, got {value!r}.", target=f"{TARGET}.{key}")
    return value


def _slack(body: dict, key: str) -> float:
    value = body.get(key) or 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValidationFailed(f"{TARGET}.{key} must be a number ≥ 0, got {value!r}.", target=f"{TARGET}.{key}")
    return float(value)


def parse(value: object) -> Policy | None:
    body = payload.obj(value, TARGET)
    if not body:
        return None
    kind = body.get("policyType")
    if kind not in POLICIES:
        raise ValidationFailed(f"{TARGET}.policyType must be one of {', '.join(POLICIES)}, got {kind!r}.",
                               target=f"{TARGET}.policyType")
    timing = {"evaluation_interval": _count(body, "evaluationInterval"),
              "delay_evaluation": _count(body, "delayEvaluation")}
    if kind == "Bandit":
        factor, amount = _slack(body, "slackFactor"), _slack(body, "slackAmount")
        if (factor > 0) == (amount > 0):
            raise ValidationFailed(f"{TARGET}: a Bandit policy takes one of slackFactor and slackAmount, above 0.",
                                   target=f"{TARGET}.slackFactor")
        return Policy(kind, slack_factor=factor, slack_amount=amount, **timing)
    if kind == "TruncationSelection":
        return Policy(kind, truncation_percentage=_count(body, "truncationPercentage", 1, 99), **timing)
    return Policy(kind, **timing)


def _better(a: float, b: float, maximize: bool) -> bool:
    return a > b if maximize else a < b


def _best(values: Sequence[float], maximize: bool) -> float:
    return max(values) if maximize else min(values)


def _bandit_stops(policy: Policy, at_k: Mapping[str, Sequence[float]], maximize: bool) -> set[str]:
    leader = _best([_best(v, maximize) for v in at_k.values()], maximize)
    if policy.slack_factor:
        bar = leader / (1 + policy.slack_factor) if maximize else leader * (1 + policy.slack_factor)
    else:
        bar = leader - policy.slack_amount if maximize else leader + policy.slack_amount
    return {name for name, values in at_k.items() if _better(bar, _best(values, maximize), maximize)}


def _median_stops(at_k: Mapping[str, Sequence[float]], maximize: bool) -> set[str]:
    stops = set()
    for name, values in at_k.items():
        others = [fmean(v) for other, v in at_k.items() if other != name]
        if others and _better(median(others), _best(values, maximize), maximize):
            stops.add(name)
    return stops


def _truncation_stops(policy: Policy, at_k: Mapping[str, Sequence[float]], maximize: bool) -> set[str]:
    ranked = sorted(at_k, key=lambda name: at_k[name][-1], reverse=not maximize)  # worst first
    return set(ranked[:len(ranked) * policy.truncation_percentage // 100])


def to_stop(policy: Policy, series: Mapping[str, Sequence[float]], running: set[str], maximize: bool) -> set[str]:
    """The running trials the policy stops, given every trial's logged values of the primary metric in order."""
    stops: set[str] = set()
    for interval in range(1, max((len(v) for v in series.values()), default=0) + 1):
        if not policy.evaluated_at(interval):
            continue
        at_k = {name: values[:interval] for name, values in series.items() if len(values) >= interval}
        if policy.kind == "Bandit":
            stops |= _bandit_stops(policy, at_k, maximize)
        elif policy.kind == "MedianStopping":
            stops |= _median_stops(at_k, maximize)
        else:
            stops |= _truncation_stops(policy, at_k, maximize)
    return stops & running
