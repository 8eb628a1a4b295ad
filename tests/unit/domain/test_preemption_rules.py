"""Preemption rules with a fake clock: the Scheduled Events document, acknowledgements, policies, and the
seeded random timeline."""

from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain.compute import preemption as p
from emulator.errors import ValidationFailed

T0 = datetime(2026, 11, 22, 17, 7, 2, tzinfo=UTC)


def test_the_document_has_azures_shape_and_the_incarnation_moves_with_each_change():
    assert p.document(None) == {"DocumentIncarnation": 0, "Events": []}
    notice = p.new_notice("c1bf8322-4cbf", "tvmps_x_p", T0, 30.0)
    doc = p.document(notice)
    assert doc == {"DocumentIncarnation": 1, "Events": [{
        "EventId": "C1BF8322-4CBF", "EventType": "Preempt", "ResourceType": "VirtualMachine",
        "Resources": ["tvmps_x_p"], "EventStatus": "Scheduled", "NotBefore": "Sun, 22 Nov 2026 17:07:32 GMT",
        "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}]}
    started = notice.start()
    assert p.document(started)["DocumentIncarnation"] == 2
    assert (p.document(started)["Events"][0]["EventStatus"], p.document(started)["Events"][0]["NotBefore"]) == \
        ("Started", "")
    assert started.start() == started  # acknowledging twice changes nothing
    assert p.Notice.from_row(started.to_row()) == started


def test_a_notice_falls_due_at_not_before_or_once_acknowledged():
    notice = p.new_notice("e", "n", T0, 30.0)
    assert not notice.due(T0 + timedelta(seconds=29.9))
    assert notice.due(T0 + timedelta(seconds=30))
    assert notice.start().due(T0)


def test_a_taken_node_is_killed_once_its_job_has_ended_or_after_the_grace():
    notice = p.new_notice("e", "n", T0, 30.0)
    assert not notice.kill_due(T0 + timedelta(seconds=60), busy=False)  # not taken yet: no kill, however late
    taken = notice.take(T0 + timedelta(seconds=30))
    assert (taken.status, taken.incarnation, taken.taken_at) == ("Started", 2, T0 + timedelta(seconds=30))
    assert taken.take(T0 + timedelta(seconds=31)) == taken  # the first moment stands
    assert notice.start().take(T0).incarnation == 2  # acknowledged, then taken: one change of the document
    grace = timedelta(seconds=30 + p.SHUTDOWN_GRACE_SECONDS)
    assert not taken.kill_due(T0 + grace - timedelta(seconds=0.1), busy=True)
    assert taken.kill_due(T0 + grace, busy=True)
    assert taken.kill_due(T0 + timedelta(seconds=30), busy=False)  # nothing left to wait for
    assert p.Notice.from_row(taken.to_row()) == taken
    legacy = {k: v for k, v in notice.to_row().items() if k != "takenAt"}
    assert p.Notice.from_row(legacy) == notice


@pytest.mark.parametrize("body", [None, [], {}, {"StartRequests": {}}, {"StartRequests": [{"EventId": ""}]},
                                  {"StartRequests": [{"Id": "x"}]}, {"StartRequests": ["x"]}])
def test_a_malformed_start_request_is_refused(body):
    with pytest.raises(ValidationFailed) as caught:
        p.start_requests(body)
    assert caught.value.target == "StartRequests"


def test_start_requests_name_their_events():
    assert p.start_requests({"StartRequests": [{"EventId": "a-1"}, {"EventId": "B"}]}) == ["A-1", "B"]
    assert p.start_requests({"StartRequests": []}) == []


def test_a_policy_keeps_defaults_for_what_it_leaves_out_and_names_a_bad_field():
    defaults = p.Policy(None, None, p.REQUEUE)
    assert p.parse_policy({}, defaults) == defaults
    assert p.parse_policy({"meanSecondsBetweenPreemptions": 10, "seed": 7}, defaults) == p.Policy(10.0, 7, "requeue")
    assert p.parse_policy({"meanSecondsBetweenPreemptions": None}, p.Policy(5.0)).mean_seconds is None
    for body, target in [({"meanSecondsBetweenPreemptions": 0}, "meanSecondsBetweenPreemptions"),
                         ({"meanSecondsBetweenPreemptions": "10"}, "meanSecondsBetweenPreemptions"),
                         ({"meanSecondsBetweenPreemptions": True}, "meanSecondsBetweenPreemptions"),
                         ({"seed": 1.5}, "seed"), ({"onPreemption": "retry"}, "onPreemption")]:
        with pytest.raises(ValidationFailed) as caught:
            p.parse_policy(body, defaults)
        assert caught.value.target == target
    with pytest.raises(ValidationFailed):
        p.parse_policy([], defaults)


def test_the_jobs_own_choice_wins_over_its_clusters():
    assert p.outcome({"amlemu.onPreemption": "fail"}, p.Policy(on_preemption="requeue")) == "fail"
    assert p.outcome({}, p.Policy(on_preemption="fail")) == "fail"
    assert p.outcome(None, p.Policy()) == "requeue"
    with pytest.raises(ValidationFailed) as caught:
        p.job_choice({"amlemu.onPreemption": "maybe"})
    assert caught.value.target == "properties.properties.amlemu.onPreemption"


def test_a_seed_replays_the_same_timeline_and_victims():
    one, again = (p.Timeline(7, "cluster-a", 10.0, T0) for _ in range(2))
    instants = [one.instant(n) for n in range(20)]
    assert instants == [again.instant(n) for n in range(20)]
    assert instants == sorted(instants) and instants[0] > T0
    nodes = ["n1", "n2", "n3"]
    assert [one.victim(n, nodes) for n in range(20)] == [again.victim(n, nodes) for n in range(20)]
    assert one.victim(0, []) is None
    # Another seed, or another cluster with the same seed, moves differently.
    assert [p.Timeline(8, "cluster-a", 10.0, T0).instant(n) for n in range(5)] != instants[:5]
    assert [p.Timeline(7, "cluster-b", 10.0, T0).instant(n) for n in range(5)] != instants[:5]


def test_the_timeline_averages_its_mean_and_counts_what_fell_due():
    timeline = p.Timeline(1, "c", 10.0, T0)
    gaps = (timeline.instant(199) - T0).total_seconds() / 200
    assert 8.0 < gaps < 12.0  # exponential gaps of mean 10 s
    assert timeline.due(0, T0) == 0
    at = timeline.instant(2)
    assert timeline.due(0, at) == 3 and timeline.due(3, at) == 0
    assert timeline.due(0, at - timedelta(microseconds=1)) == 2


def test_an_unseeded_timeline_draws_its_seed_once():
    import random
    assert p.unseeded(5, random.Random(1)) == 5
    assert p.unseeded(None, random.Random(1)) == p.unseeded(None, random.Random(1))
