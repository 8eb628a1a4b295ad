"""A sweep's search space as the SDK sends it (`{"lr": ["uniform", [0.01, 0.1]]}`), checked, and Azure's meaning of
each distribution. Pure.

Every distribution is one draw an optimiser makes (`Draw`: a category index, an integer, or a float in a range) and a
rule from the draw to the value the trial gets, as Azure defines it: `loguniform(a, b)` is exp(uniform(a, b)) (its
bounds are exponents), `quniform(a, b, q)` is round(uniform(a, b) / q) * q, and the normal family is drawn as a
quantile in (0, 1) and mapped through the normal distribution's inverse CDF, so one optimiser serves them all.
"""

import math
from dataclasses import dataclass
from statistics import NormalDist

from emulator.domain import payload
from emulator.errors import ValidationFailed

SPACE = "properties.searchSpace"
_ARITY = {"choice": 1, "randint": 1, "uniform": 2, "loguniform": 2, "quniform": 3, "qloguniform": 3, "normal": 2,
          "lognormal": 2, "qnormal": 3, "qlognormal": 3}
KINDS = tuple(_ARITY)
_EDGE = 1e-12  # a quantile of exactly 0 or 1 is infinite


@dataclass(frozen=True)
class Draw:
    """What the optimiser picks: `kind` "category" (an index below `high`), "int" (low..high) or "float"."""
    kind: str
    low: float
    high: float


@dataclass(frozen=True)
class Dimension:
    name: str
    kind: str  # one of KINDS
    args: tuple  # the wire's arguments: (values,) for choice, (upper,) for randint, (a, b[, q]) otherwise

    @property
    def draw(self) -> Draw:
        if self.kind == "choice":
            return Draw("category", 0, len(self.args[0]))
        if self.kind == "randint":
            return Draw("int", 0, self.args[0] - 1)
        if self.kind in ("uniform", "quniform", "loguniform", "qloguniform"):
            return Draw("float", self.args[0], self.args[1])
        return Draw("float", _EDGE, 1 - _EDGE)  # a quantile of the normal family

    def value(self, drawn: float | int):
        """The trial's value for what the optimiser drew."""
        kind, args = self.kind, self.args
        if kind == "choice":
            return args[0][int(drawn)]
        if kind == "randint":
            return int(drawn)
        if kind in ("normal", "qnormal", "lognormal", "qlognormal"):
            drawn = NormalDist(args[0], args[1]).inv_cdf(drawn)
        if "log" in kind:
            drawn = math.exp(drawn)
        return _quantised(drawn, args[2]) if kind.startswith("q") else float(drawn)


    def example(self):
        """A value of the distribution without drawing (the middle of what may be drawn): a submission's trial is
        tried with it before the sweep is accepted."""
        draw = self.draw
        if draw.kind == "category":
            return self.value(0)
        middle = (draw.low + draw.high) / 2
        return self.value(int(middle) if draw.kind == "int" else middle)


def _quantised(value: float, q: float) -> float | int:
    steps = round(value / q) * q
    return int(steps) if float(q).is_integer() else steps


def _number(value: object, target: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationFailed(f"{target}: {what} must be a number, got {value!r}.", target=target)
    return value


def _choices(values: object, target: str) -> tuple:
    if not isinstance(values, list) or not values:
        raise ValidationFailed(f"{target}: choice needs a non-empty list of values.", target=target)
    for value in values:
        if not isinstance(value, str | int | float | bool):  # Azure's nested search spaces (dicts)
            raise ValidationFailed(f"{target}: amlemu takes choices among strings and numbers, not {value!r} "
                                   "(nested search spaces are not supported).", target=target)
    return (tuple(values),)


def _checked(kind: str, args: list, target: str) -> tuple:
    if kind == "choice":
        return _choices(args[0], target)
    numbers = tuple(_number(v, target, f"argument {i + 1} of {kind}") for i, v in enumerate(args))
    if kind == "randint":
        if not float(numbers[0]).is_integer() or numbers[0] < 1:
            raise ValidationFailed(f"{target}: randint(upper) needs an integer upper bound of at least 1, got "
                                   f"{numbers[0]!r}.", target=target)
        return (int(numbers[0]),)
    if kind.endswith("normal"):
        if numbers[1] <= 0:
            raise ValidationFailed(f"{target}: {kind}(mu, sigma) needs sigma > 0, got {numbers[1]!r}.", target=target)
    elif numbers[0] >= numbers[1]:
        raise ValidationFailed(f"{target}: {kind} needs min_value < max_value, got {numbers[0]!r} and {numbers[1]!r}.",
                               target=target)
    if kind.startswith("q") and numbers[2] <= 0:
        raise ValidationFailed(f"{target}: {kind} needs q > 0, got {numbers[2]!r}.", target=target)
    return numbers


def dimension(name: str, value: object) -> Dimension:
    target = f"{SPACE}.{name}"
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], list):
        raise ValidationFailed(f"{target} must be [distribution, [arguments]], e.g. [\"uniform\", [0.01, 0.1]].",
                               target=target)
    kind, args = value
    if kind not in _ARITY:
        raise ValidationFailed(f"{target}: unknown distribution {kind!r}; one of {', '.join(KINDS)}.", target=target)
    if len(args) != _ARITY[kind]:
        raise ValidationFailed(f"{target}: {kind} takes {_ARITY[kind]} argument(s), got {len(args)}.", target=target)
    return Dimension(name, kind, _checked(kind, args, target))


def parse(value: object) -> dict[str, Dimension]:
    space = payload.obj(value, SPACE, required=True)
    if not space:
        raise ValidationFailed(f"{SPACE} must name at least one hyperparameter.", target=SPACE)
    return {name: dimension(name, entry) for name, entry in space.items()}


def allow_only(space: dict[str, Dimension], kinds: tuple[str, ...], algorithm: str) -> None:
    """Grid and Bayesian sampling take only some distributions (a grid only countable ones)."""
    for dim in space.values():
        if dim.kind not in kinds:
            raise ValidationFailed(f"{SPACE}.{dim.name}: {algorithm} sampling supports {', '.join(kinds)} only, not "
                                   f"{dim.kind}.", target=f"{SPACE}.{dim.name}")


def grid_size(space: dict[str, Dimension]) -> int:
    return math.prod(len(dim.args[0]) for dim in space.values())
