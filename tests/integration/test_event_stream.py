"""Node reports reach the controller through a Redis stream: an event is acknowledged only once applied; one
that fails is tried again at the next pass, and after a few failures set aside, never blocking the ones behind it."""

import json

import pytest

from emulator.dispatch import protocol


@pytest.fixture
def events(broker):
    for key in (protocol.EVENTS, protocol.DEAD_EVENTS):
        broker.delete(key)
    yield broker
    for key in (protocol.EVENTS, protocol.DEAD_EVENTS):
        broker.delete(key)


def _send(broker, **event) -> None:
    broker.xadd(protocol.EVENTS, {"event": json.dumps(event)})


def test_an_event_that_fails_to_apply_stays_pending_and_is_applied_at_the_next_pass(events):
    _send(events, kind="running", job="j1")
    _send(events, kind="ended", job="j2")
    applied, store_down = [], True

    def apply(event):
        if store_down and event["job"] == "j1":
            raise RuntimeError("database is locked")
        applied.append(event["job"])

    assert protocol.consume(events, "controller", apply) == 1
    assert applied == ["j2"]  # the one behind it was not held up
    assert events.xpending(protocol.EVENTS, protocol.GROUP)["pending"] == 1  # not acknowledged
    store_down = False
    assert protocol.consume(events, "controller", apply) == 1
    assert applied == ["j2", "j1"]
    assert events.xpending(protocol.EVENTS, protocol.GROUP)["pending"] == 0
    assert events.xlen(protocol.EVENTS) == 0


def test_an_event_that_never_applies_is_set_aside_after_a_few_tries(events):
    _send(events, kind="bogus", job="j3")

    def apply(event):
        raise ValueError("no such job")

    for _ in range(protocol.MAX_DELIVERIES):
        assert protocol.consume(events, "controller", apply) == 0
    assert events.xpending(protocol.EVENTS, protocol.GROUP)["pending"] == 0
    [(_id, fields)] = events.xrange(protocol.DEAD_EVENTS)
    assert json.loads(fields[b"event"]) == {"kind": "bogus", "job": "j3"}
