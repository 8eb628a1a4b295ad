"""The pure model behind `amlemu demo preemption`: fed snapshots on a fake clock, it keeps each node's state
segments and each job's attempts, picks nodes to preempt, knows when the demo is over, sums it up, and renders."""

from rich.console import Console

from emulator.cli.demo_summary import render_summary, results_agree
from emulator.cli.demo_timeline import JobView, NodeView, Timeline, Track

T0 = 1000.0  # any clock: a monotonic one in the demo


def _render(renderable, width: int = 160) -> str:
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    console.print(renderable)
    return console.export_text()


def _preempted_run() -> Timeline:
    """Two jobs on two nodes; n1 is preempted under job A, which reruns on a third node and both complete."""
    tl = Timeline(T0)
    tl.add_job(T0, "job-a")
    tl.add_job(T0, "job-b")
    tl.observe(T0 + 1, [NodeView("n-1", "preparing"), NodeView("n-2", "preparing")],
               [JobView("job-a", "Queued", 0), JobView("job-b", "Queued", 0)])
    tl.observe(T0 + 3, [NodeView("n-1", "running", "job-a"), NodeView("n-2", "running", "job-b")],
               [JobView("job-a", "Running", 1), JobView("job-b", "Running", 1)])
    tl.preempt_requested(T0 + 8, "n-1")
    tl.observe(T0 + 9, [NodeView("n-1", "preempted"), NodeView("n-2", "running", "job-b"),
                        NodeView("n-3", "preparing")],
               [JobView("job-a", "Queued", 2), JobView("job-b", "Running", 1)])
    tl.observe(T0 + 11, [NodeView("n-1", "preempted"), NodeView("n-2", "running", "job-b"),
                         NodeView("n-3", "running", "job-a")],
               [JobView("job-a", "Running", 2), JobView("job-b", "Running", 1)])
    tl.observe(T0 + 20, [NodeView("n-1", "preempted"), NodeView("n-2", "idle"), NodeView("n-3", "idle")],
               [JobView("job-a", "Completed", 2), JobView("job-b", "Completed", 1)])
    tl.observe(T0 + 30, [NodeView("n-1", "preempted"), NodeView("n-2", "leaving"), NodeView("n-3", "leaving")], [])
    tl.observe(T0 + 31, [NodeView("n-1", "preempted")], [])
    return tl


def test_node_segments_follow_the_snapshots_and_end_when_the_node_is_gone():
    tl = _preempted_run()
    n1, n2, n3 = tl.nodes["n-1"], tl.nodes["n-2"], tl.nodes["n-3"]
    assert [(s.state, s.start - T0, s.end - T0 if s.end else None) for s in n2.track.segments] == [
        ("preparing", 1, 3), ("running", 3, 20), ("idle", 20, 30), ("leaving", 30, 31)]
    assert n2.gone_at == T0 + 31 and n2.track.state is None
    assert [s.state for s in n1.track.segments] == ["preparing", "running", "preempted"]
    assert n1.track.state == "preempted" and n1.gone_at is None  # listed for a while after it was taken
    assert (n1.label, n2.label, n3.label) == ("n1", "n2", "n3")


def test_jobs_count_attempts_and_remember_their_nodes():
    tl = _preempted_run()
    a, b = tl.jobs["job-a"], tl.jobs["job-b"]
    assert (a.label, a.status, a.attempt, a.preemptions) == ("#1", "Completed", 2, 1)
    assert a.nodes == {1: "n1", 2: "n3"}
    assert (b.attempt, b.nodes, b.preemptions) == (1, {1: "n2"}, 0)
    assert [s.state for s in a.track.segments] == ["Queued", "Running", "Queued", "Running", "Completed"]
    assert a.track.state == "Completed"  # drawn on to the end, in its colour
    assert a.track.marks == [(T0 + 9, "2")]  # the rerun is marked; the first run is not
    assert b.track.marks == []
    assert a.node is None and b.node is None  # nothing runs them any more


def test_summary_figures():
    summary = _preempted_run().summary()
    assert summary.wall_seconds == 31
    assert (summary.completed, summary.attempts, summary.preemptions, summary.requested) == (2, 3, 1, 1)
    assert summary.takeover_seconds == (1.0,)  # asked at +8, seen preempted at +9
    assert summary.nodes_used == 3
    assert [(j.label, j.attempts, j.nodes) for j in summary.jobs] == [("#1", 2, ("n1", "n3")), ("#2", 1, ("n2",))]


def test_finished_once_every_job_ended_and_no_node_is_left_but_preempted_ones():
    tl = Timeline(T0)
    assert not tl.finished()  # nothing submitted yet
    tl.add_job(T0, "job-a")
    tl.observe(T0 + 1, [NodeView("n-1", "running", "job-a")], [JobView("job-a", "Running", 1)])
    assert not tl.finished()
    tl.observe(T0 + 2, [NodeView("n-1", "idle")], [JobView("job-a", "Completed", 1)])
    assert not tl.finished()  # its node is still there
    tl.observe(T0 + 3, [NodeView("n-1", "leaving")], [])
    assert not tl.finished()
    tl.observe(T0 + 4, [], [])
    assert tl.finished()


def test_candidates_are_nodes_whose_job_ran_long_enough_least_preempted_first():
    tl = Timeline(T0)
    for name in ("job-a", "job-b", "job-c"):
        tl.add_job(T0, name)
    tl.observe(T0 + 1, [NodeView("n-1", "running", "job-a"), NodeView("n-2", "running", "job-b"),
                        NodeView("n-3", "idle")],
               [JobView("job-a", "Running", 1), JobView("job-b", "Running", 1), JobView("job-c", "Queued", 0)])
    assert tl.candidates(T0 + 3, min_running=4) == []  # not running for long enough yet
    assert tl.candidates(T0 + 6, min_running=4) == ["n-1", "n-2"]
    tl.preempt_requested(T0 + 6, "n-1")
    assert tl.candidates(T0 + 6, min_running=4) == ["n-2"]  # asked once is enough
    # job-a reruns on n-3; job-b, never preempted, comes before it
    tl.observe(T0 + 7, [NodeView("n-1", "preempted"), NodeView("n-2", "running", "job-b"),
                        NodeView("n-3", "running", "job-a")],
               [JobView("job-a", "Running", 2), JobView("job-b", "Running", 1), JobView("job-c", "Queued", 0)])
    assert tl.candidates(T0 + 20, min_running=4) == ["n-2", "n-3"]


def test_a_node_heard_of_by_an_event_keeps_its_label_in_the_snapshots():
    tl = Timeline(T0)
    assert tl.node_label("n-9") == "n1" and tl.node_label("n-9") == "n1"
    tl.observe(T0 + 1, [NodeView("n-2", "idle"), NodeView("n-9", "idle")], [])
    assert [r.label for r in tl.nodes.values()] == ["n1", "n2"] and tl.nodes["n-2"].label == "n2"
    assert tl.events == []  # snapshots draw the strips; the lines come from the platform's events


def test_an_attempt_runs_where_its_event_says_not_on_the_preempted_node_that_still_names_the_job():
    tl = Timeline(T0)
    tl.add_job(T0, "job-a")
    tl.observe(T0 + 1, [NodeView("n-1", "running", "job-a")], [JobView("job-a", "Running", 1)])
    tl.observe(T0 + 2, [NodeView("n-1", "preempted", "job-a"), NodeView("n-3", "idle")],
               [JobView("job-a", "Queued", 2)])
    assert tl.jobs["job-a"].node is None and 2 not in tl.jobs["job-a"].nodes
    tl.attempt_on("JOB-A", 2, "n-3")
    assert tl.jobs["job-a"].nodes == {1: "n1", 2: "n2"}  # n-3 was the second node seen


def test_track_state_in_prefers_a_short_preemption():
    track = Track()
    track.set(0, "running")
    track.set(9, "preempted")
    track.set(10, "idle")
    assert track.state_in(0, 5, now=20) == "running"
    assert track.state_in(5, 15, now=20, prefer=frozenset({"preempted"})) == "preempted"
    assert track.state_in(5, 15, now=20) == "idle"  # else the state that filled most of the cell
    assert track.state_in(12, 20, now=20) == "idle"
    assert track.state_in(20, 25, now=20) is None  # the future is blank
    assert not track.set(21, "idle")


def test_rendering_shows_the_nodes_jobs_states_and_events():
    tl = _preempted_run()
    tl.observe(T0 + 31, [NodeView("n-1", "preempted"), NodeView("n-4", "preparing")], [])
    text = _render(tl.render("the title"))
    for expected in ("the title", "nodes", "jobs", "n1", "n2", "n3", "n4", "#1", "#2", "preempted", "gone",
                     "preparing", "Completed", "idle", "running", "leaving", "Queued", "Running",
                     "8.0 s  preempt node n1 (running #1)"):
        assert expected in text, expected
    for i in range(8):
        tl.note(T0 + 40 + i, f"node n4 idle {i}", f"node.up #{100 + i}")
    text = _render(tl.render("the title"))
    assert "47.0 s  node n4 idle 7  [node.up #107]" in text
    assert "preempt node n1" not in text and "idle 0" not in text  # only the latest events are shown
    assert "2" in text.split("#1")[1]  # the attempt column and the rerun mark


def test_rendering_works_from_the_start_and_over_a_long_run():
    tl = Timeline(T0)
    assert "nodes" in _render(tl.render())
    tl.add_job(T0, "job-a")
    tl.observe(T0 + 10, [NodeView("n-1", "running", "job-a")], [JobView("job-a", "Running", 1)])
    tl.observe(T0 + 4000, [NodeView("n-1", "running", "job-a")], [JobView("job-a", "Running", 1)])
    text = _render(tl.render(width=40), width=120)
    assert "one cell = 100 s" in text  # beyond the last step: the whole run fits the strip
    node_row = next(line for line in text.splitlines() if "│ n1" in line)
    assert node_row.count("█") == 40


def test_summary_rendering_and_results():
    summary = _preempted_run().summary()
    same = {"a": 2.5, "b": -1.0, "loss": 0.1, "steps": 40}
    text = _render(render_summary(summary, {"job-a": same, "job-b": dict(same)}))
    for expected in ("job-a", "Completed", "n1 → n3", "jobs completed: 2/2", "preemptions: 1 (asked 1",
                     "attempts: 3 in all (#1 2, #2 1)", "wall time: 31.0 s", "identical across the 2 jobs", "a=2.5"):
        assert expected in text, expected
    assert results_agree({"job-a": same, "job-b": dict(same)})
    assert not results_agree({"job-a": same, "job-b": {**same, "a": 2.4}})
    assert "DIFFER" in _render(render_summary(summary, {"job-a": same, "job-b": {**same, "a": 2.4}}))
    assert not results_agree({"job-a": same, "job-b": None})
    assert "1 of 2 job(s) have no result.json" in _render(render_summary(summary, {"job-a": same, "job-b": None}))
    assert not results_agree({})


def test_the_summary_says_what_the_nodes_cost_low_priority_against_dedicated():
    line = {"seconds": 1800.0, "vmSize": "Standard_DS3_v2", "region": "eastus", "lowPriorityDollars": 0.0293,
            "dedicatedDollars": 0.1465}
    text = _render(render_summary(_preempted_run().summary(), {}, line), width=200)
    assert ("cost in Azure (Standard_DS3_v2, eastus retail prices): 0.500 node-hours, $0.0293 on low-priority "
            "nodes; the same node-hours dedicated: $0.1465, 80 % less") in text
