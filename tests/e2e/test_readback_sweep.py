"""The read-back sweep (issue 24): every operation group of MLClient in tests/sdk_surface.py, driven through the
real SDK against a composed stack. An operation amlemu serves must succeed, and everything the SDK hands back is
walked (every public attribute and property, recursively, _to_dict() and dump()), so no answer of the emulator
breaks the SDK's deserialisers. An operation it does not serve must fail with an ARM error saying, in plain words,
that amlemu does not support it yet: never a bare route 404."""

import uuid

import pytest
from azure.core.exceptions import HttpResponseError

from tests.e2e.entity_walk import Walk
from tests.e2e.sweep_drivers import DRIVERS, Sweep
from tests.sdk_surface import SURFACE

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def sweep(ml_client, tmp_path_factory) -> Sweep:
    return Sweep(ml_client, tmp_path_factory.mktemp("sweep"), uuid.uuid4().hex[:6])


def test_every_listed_operation_has_a_driver_and_every_driver_a_listing():
    assert {g.attr: set(g.operations) for g in SURFACE} == {g: set(ops) for g, ops in DRIVERS.items()}


def _served(sweep: Sweep, attr: str, op: str) -> Walk:
    try:
        handed_back = DRIVERS[attr][op](sweep)
    except HttpResponseError as exc:
        pytest.fail(f"ml_client.{attr}.{op} is listed as served but failed: {exc.message}")
    walk = Walk()(handed_back, f"{attr}.{op}")
    if op in ("get", "list", "get_default"):  # a read hands back entities, and they are walked
        assert handed_back and walk.touched > 2, (attr, op, handed_back)
    print(f"ml_client.{attr}.{op}: {walk.touched} values read back")
    return walk


def _refused(sweep: Sweep, attr: str, op: str) -> str:
    with pytest.raises(HttpResponseError) as caught:
        DRIVERS[attr][op](sweep)
    status, message = caught.value.status_code, str(caught.value.message)
    assert status in (400, 404), (op, status, message)
    assert "amlemu" in message and "does not support" in message, (op, message)
    assert "No route" not in message, message
    print(f"ml_client.{attr}.{op}: {status} {message}")  # what a user reads (pytest -s shows it)
    return message


@pytest.mark.parametrize("group", SURFACE, ids=[g.attr for g in SURFACE])
def test_each_group_reads_back_whole(sweep, group):
    broken, refusals = [], {}
    for op in group.supported:
        broken += _served(sweep, group.attr, op).broken
    for op in group.unsupported:
        refusals[op] = _refused(sweep, group.attr, op)
    assert not broken, "\n".join(broken)
    assert set(refusals) == set(group.unsupported)
