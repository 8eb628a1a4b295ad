"""The Studio's pictures: a metric's line and a pipeline's graph, placed inside their SVG boxes."""

from emulator.api import studio_charts


def test_a_metrics_line_spans_the_chart_from_its_first_step_to_its_last():
    chart = studio_charts.chart("loss", [(0, 1.0), (1, 0.5), (2, 0.25), (4, 0.0)])
    points = [tuple(map(float, p.split(","))) for p in chart.points.split()]
    pad, width, height = chart.pad, chart.width, chart.height
    assert [x for x, _ in points] == [pad, pad + (width - 2 * pad) / 4, pad + (width - 2 * pad) / 2, width - pad]
    assert points[0][1] == pad and points[-1][1] == height - pad  # the highest value on top, the lowest at the bottom
    assert (chart.steps, chart.values, chart.last, chart.count) == ((0, 4), (0.0, 1.0), 0.0, 4)


def test_one_value_is_a_dot_in_the_middle_and_nothing_logged_is_no_chart():
    chart = studio_charts.chart("accuracy", [(0, 0.9)])
    assert chart.dots == [(chart.width / 2, chart.height / 2)]
    assert studio_charts.chart("none", []) is None


def test_a_pipelines_steps_stand_right_of_the_steps_they_read():
    graph = studio_charts.graph({"prep": [], "train": ["prep"], "score": ["train", "prep"], "report": []})
    at = {box.step: (box.x, box.y) for box in graph.boxes}
    assert at["prep"][0] < at["train"][0] < at["score"][0] and at["report"][0] == at["prep"][0]
    assert len(graph.edges) == 3
    assert all(x1 < x2 for x1, _, x2, _ in graph.edges)
    assert all(box.x + graph.box_w <= graph.width and box.y + graph.box_h <= graph.height for box in graph.boxes)
    assert studio_charts.graph({}) is None
