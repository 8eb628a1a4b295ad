"""The sweep's driver (services/parents.py runs it): which trials to start, which to stop, and the best one.

Its record (`job.driver`) keeps every trial made, in order: its name, what the sampler drew, its hyperparameters,
and once it has ended its metric values (`series`, at most SERIES_KEPT) and score (the last value logged). The
metric is read from MLflow by the controller before its transaction (services/trial_metrics.py): the values of
live trials when an early termination policy needs them, and once more those of each trial that has ended.

- trials run up to `max_concurrent_trials` at once and `max_total_trials` in all (a grid's size at most); they
  queue on the sweep's compute as any job does, so autoscaling and preemption apply to them;
- a trial running past `trial_timeout`, and every live trial once the sweep's `timeout` has passed, is cancelled;
- the early termination policy cancels the trials it stops;
- the best trial (of the completed ones with a score) is shown as `best_child_run_id` and `score`.
"""

from collections.abc import Mapping, Sequence
from datetime import datetime

from emulator.domain.jobs import artifacts, children, early_termination, sampling, sweep
from emulator.domain.jobs.status import TERMINAL, JobStatus
from emulator.services.parents import Plan
from emulator.store.tables import Job

S = JobStatus
SERIES_KEPT = 1000  # logged values kept per ended trial, for the policy's comparisons


def _stamp(now: datetime, source: str, text: str) -> str:
    return f"[{now.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}][{source}][INFO]{text}"


class SweepDriver:
    outcome = children.Outcome.ANY_COMPLETED
    log_name = artifacts.PARENT_LOGS["Sweep"]  # what the SDK streams for a sweep

    @staticmethod
    def spec(parent: Job) -> sweep.SweepSpec:
        return sweep.parse({sweep.P: parent.body})[1]  # checked when it was submitted

    def wanted(self, parent: Job, kids: Sequence[Job]) -> tuple[str, list[str]] | None:
        spec, record = self.spec(parent), parent.driver
        read = {t["name"] for t in record["trials"] if "series" in t}
        keys = [k.key for k in kids if k.name not in read and
                (S(k.status) in TERMINAL or (spec.policy is not None and k.status == S.RUNNING))]
        return (spec.metric, keys) if keys else None

    def decide(self, parent: Job, kids: Sequence[Job], series: Mapping[str, list[float]], now: datetime) -> Plan:
        spec, record = self.spec(parent), {**parent.driver, "trials": [dict(t) for t in parent.driver["trials"]]}
        by_name = {k.name: k for k in kids}
        plan = Plan(record=record)
        self._scored(record["trials"], by_name, series, now, plan)
        live = {t["name"] for t in record["trials"] if t["name"] in by_name and S(by_name[t["name"]].status)
                not in TERMINAL and by_name[t["name"]].status != S.CANCEL_REQUESTED}
        sweep_over = sweep.timed_out(parent.started_at or (now if parent.status == S.NOT_STARTED else None),
                                     spec.timeout_seconds, now)
        plan.stop = self._stops(spec, record["trials"], by_name, live, series, sweep_over, now)
        if not sweep_over:
            self._start(parent, spec, record, len(live - plan.stop.keys()), now, plan)
        made_all = sweep_over or len(record["trials"]) >= spec.max_total
        plan.done = made_all and all("series" in t for t in record["trials"] if t["name"] not in live)
        plan.properties = self._best(spec, record["trials"], by_name)
        for name, why in plan.stop.items():
            plan.said.append(_stamp(now, "CONTROLLER", f"Cancelling job, id='{name}': {why}"))
        return plan

    @staticmethod
    def _scored(trials: list[dict], by_name: Mapping[str, Job], series: Mapping[str, list[float]], now: datetime,
                plan: Plan) -> None:
        """Ended trials whose values were read this pass keep them, and their score."""
        for trial in trials:
            child = by_name.get(trial["name"])
            if child is None or "series" in trial or S(child.status) not in TERMINAL or child.key not in series:
                continue
            values = series[child.key]
            trial["series"], trial["score"] = values[-SERIES_KEPT:], values[-1] if values else None
            plan.said.append(_stamp(now, "SCHEDULER", f"Job id='{trial['name']}' ended {child.status}"
                                    + (f" with score {trial['score']!r}" if values else " without a metric value")))

    @staticmethod
    def _stops(spec: sweep.SweepSpec, trials: list[dict], by_name: Mapping[str, Job], live: set[str],
               series: Mapping[str, list[float]], sweep_over: bool, now: datetime) -> dict[str, str]:
        if sweep_over:
            return {name: "the sweep's timeout has passed" for name in sorted(live)}
        stops = {name: "its trial_timeout has passed" for name in sorted(live)
                 if sweep.timed_out(by_name[name].started_at, spec.trial_timeout_seconds, now)}
        if spec.policy is not None:
            values = {t["name"]: t.get("series") or series.get(by_name[t["name"]].key, []) for t in trials
                      if t["name"] in by_name}
            for name in sorted(early_termination.to_stop(spec.policy, values, live, spec.maximize) - stops.keys()):
                stops[name] = f"early termination ({spec.policy.kind} policy)"
        return stops

    @staticmethod
    def _start(parent: Job, spec: sweep.SweepSpec, record: dict, running: int, now: datetime, plan: Plan) -> None:
        trials = record["trials"]
        count = min(spec.max_concurrent - running, spec.max_total - len(trials))
        if count <= 0:
            return
        made = [sampling.Made(t["draws"], t.get("score")) for t in trials]
        draws = sampling.next_draws(spec.space, spec.sampling.algorithm, record["seed"], made, count, spec.maximize)
        plan.said.append(_stamp(now, "GENERATOR", f"Trying to sample '{count}' jobs from the hyperparameter space"))
        for each in draws:
            name = children.child_name(parent.name, len(trials))
            params = sampling.values(spec.space, each)
            trials.append({"name": name, "draws": each, "params": params})
            plan.make.append((name, sweep.trial_body(parent.body, spec, name, params)))
            plan.said.append(_stamp(now, "SCHEDULER", f"Scheduling job, id='{name}' with {params}"))

    @staticmethod
    def _best(spec: sweep.SweepSpec, trials: list[dict], by_name: Mapping[str, Job]) -> dict[str, str]:
        scores = {t["name"]: t["score"] for t in trials if t.get("score") is not None
                  and t["name"] in by_name and by_name[t["name"]].status == S.COMPLETED}
        best = sweep.best(scores, spec.maximize)
        if best is None:
            return {}
        return {sweep.BEST_CHILD: best, sweep.SCORE: repr(scores[best]), sweep.BEST_STATUS: "Succeeded"}
