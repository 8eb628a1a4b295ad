"""The geometry of the Studio's pictures, drawn as inline SVG by the templates: a metric's line chart and a pipeline's
graph. Pure arithmetic; no chart library, no JavaScript."""

from dataclasses import dataclass
from graphlib import TopologicalSorter

WIDTH, HEIGHT, PAD = 360, 160, 28
BOX_W, BOX_H, GAP_X, GAP_Y = 150, 44, 60, 18


@dataclass(frozen=True)
class Chart:
    name: str
    points: str  # the polyline's "x,y x,y ..." in the viewBox
    dots: list[tuple[float, float]]  # one per value when there are few (a single value shows as a dot)
    steps: tuple[int, int]
    values: tuple[float, float]
    last: float
    count: int
    width: int = WIDTH
    height: int = HEIGHT
    pad: int = PAD


def chart(name: str, series: list[tuple[int, float]]) -> Chart | None:
    """A metric's values against their step; None when nothing was logged."""
    if not series:
        return None
    steps = [s for s, _ in series]
    values = [v for _, v in series]
    x0, x1, y0, y1 = min(steps), max(steps), min(values), max(values)
    xs = [x0 - 1, x1 + 1] if x0 == x1 else [x0, x1]
    ys = [y0 - 1, y1 + 1] if y0 == y1 else [y0, y1]
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD

    def at(step: int, value: float) -> tuple[float, float]:
        return (round(PAD + (step - xs[0]) / (xs[1] - xs[0]) * inner_w, 1),
                round(HEIGHT - PAD - (value - ys[0]) / (ys[1] - ys[0]) * inner_h, 1))

    placed = [at(s, v) for s, v in series]
    return Chart(name, " ".join(f"{x},{y}" for x, y in placed), placed if len(placed) <= 30 else [],
                 (x0, x1), (y0, y1), values[-1], len(values))


@dataclass(frozen=True)
class Box:
    step: str
    x: int
    y: int


@dataclass(frozen=True)
class Graph:
    boxes: list[Box]
    edges: list[tuple[int, int, int, int]]  # x1, y1, x2, y2: from a step's right side to a reader's left side
    width: int
    height: int
    box_w: int = BOX_W
    box_h: int = BOX_H


def graph(upstream: dict[str, list[str]]) -> Graph | None:
    """A pipeline's steps in columns by depth (a step right of every step it reads from)."""
    if not upstream:
        return None
    depth: dict[str, int] = {}
    for step in TopologicalSorter({s: set(up) for s, up in upstream.items()}).static_order():
        depth[step] = 1 + max((depth[u] for u in upstream.get(step, []) if u in depth), default=-1)
    columns: dict[int, list[str]] = {}
    for step in sorted(depth, key=lambda s: (depth[s], s)):
        columns.setdefault(depth[step], []).append(step)
    where = {step: (10 + d * (BOX_W + GAP_X), 10 + i * (BOX_H + GAP_Y))
             for d, steps in columns.items() for i, step in enumerate(steps)}
    edges = [(where[u][0] + BOX_W, where[u][1] + BOX_H // 2, where[s][0], where[s][1] + BOX_H // 2)
             for s, ups in upstream.items() for u in ups if u in where]
    rows = max(len(steps) for steps in columns.values())
    return Graph([Box(s, *where[s]) for s in sorted(where)], edges, 20 + len(columns) * (BOX_W + GAP_X) - GAP_X,
                 20 + rows * (BOX_H + GAP_Y) - GAP_Y)
