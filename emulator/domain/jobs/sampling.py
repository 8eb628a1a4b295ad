"""Which values the next trials of a sweep get, drawn by optuna: RandomSampler (random), GridSampler (grid),
TPESampler (bayesian). Pure: no clock; the seed is the sweep's, recorded when it was submitted.

Nothing of optuna is kept between passes. A fresh in-memory study is built for every decision, so a controller
restarted at any moment decides as before:
- random and grid replay the seeded sampler: trial i is always the i-th ask of a study with that seed, whatever
  finished when (so a seeded random sweep samples the same values every time it is run);
- bayesian tells the study every scored trial first, then asks with a seed derived from how many trials were made.
"""

import logging
from dataclasses import dataclass

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from emulator.domain.jobs.search_space import Dimension

optuna.logging.set_verbosity(logging.WARNING)  # a study per decision: its creation is no news


@dataclass(frozen=True)
class Made:
    """A trial made so far: what was drawn for it, and its score once it has one."""
    draws: dict[str, float | int]
    score: float | None = None


def _distributions(space: dict[str, Dimension]) -> dict:
    found = {}
    for name, dim in space.items():
        draw = dim.draw
        if draw.kind == "category":
            found[name] = CategoricalDistribution(list(range(int(draw.high))))
        elif draw.kind == "int":
            found[name] = IntDistribution(int(draw.low), int(draw.high))
        else:
            found[name] = FloatDistribution(draw.low, draw.high)
    return found


def _replayed(sampler, distributions: dict, made: int, count: int) -> list[dict]:
    study = optuna.create_study(sampler=sampler)
    asked = [study.ask(distributions).params for _ in range(made + count)]
    return asked[made:]


def _bayesian(space, distributions, made: list[Made], count: int, seed: int, maximize: bool) -> list[dict]:
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed + len(made)),
                                direction="maximize" if maximize else "minimize")
    for each in made:
        if each.score is not None:
            study.add_trial(create_trial(params=each.draws, distributions=distributions, value=each.score,
                                         state=TrialState.COMPLETE))
    return [study.ask(distributions).params for _ in range(count)]


def next_draws(space: dict[str, Dimension], algorithm: str, seed: int, made: list[Made], count: int,
               maximize: bool) -> list[dict]:
    """The draws of the next `count` trials, after the `made` ones (in the order they were made)."""
    distributions = _distributions(space)
    if algorithm == "Random":
        return _replayed(optuna.samplers.RandomSampler(seed=seed), distributions, len(made), count)
    if algorithm == "Grid":
        grid = {name: list(range(int(dim.draw.high))) for name, dim in space.items()}
        return _replayed(optuna.samplers.GridSampler(grid, seed=seed), distributions, len(made), count)
    return _bayesian(space, distributions, made, count, seed, maximize)


def values(space: dict[str, Dimension], draws: dict) -> dict:
    """The hyperparameters a trial gets for its draws."""
    return {name: space[name].value(draws[name]) for name in space}
