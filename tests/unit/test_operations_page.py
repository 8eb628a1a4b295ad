"""docs/supported-operations.md is what tests/operations_page.py renders from the installed SDK and the route table
(as README's table is the sweep's list: tests/unit/test_readme_operations.py), and its statuses agree with what
the end-to-end read-back sweep drives."""

import pytest

from tests import operations_notes as notes
from tests import operations_page as page
from tests.sdk_surface import SURFACE


@pytest.fixture(scope="module")
def routes():
    return page.route_table()


@pytest.fixture(scope="module")
def rows(routes):
    return {(r.group, r.method): r for r in page.rows(routes)}


def test_the_page_is_current(routes):
    assert page.PAGE.read_text() == page.render(routes), f"docs/supported-operations.md is stale: run `{page.COMMAND}`"


def test_what_the_sweep_drives_is_served_and_what_it_refuses_is_not(rows):
    for group in SURFACE:
        for method in group.supported:
            assert rows[(group.attr, method)].status != page.NOT_YET, (group.attr, method)
        for method in group.unsupported:
            assert rows[(group.attr, method)].status != page.SUPPORTED, (group.attr, method)


def test_every_hand_kept_entry_names_an_sdk_operation(rows):
    for key in {*notes.HAND_CALLS, *notes.LIMITS, *notes.CLIENT_SIDE}:
        assert key in rows, f"tests/operations_notes.py names {key}, which the installed SDK does not have"


def test_every_operation_makes_a_call_or_says_why_not(rows):
    silent = [k for k, r in rows.items() if not r.calls and "through" not in r.note and k not in notes.CLIENT_SIDE]
    assert silent == []


def test_calls_match_routes_as_arm_does():
    assert page._matches("/Subscriptions/{s}/jobs/{id}", "/subscriptions/{subscription_id}/jobs/{name}")
    assert not page._matches("/subscriptions/{s}/jobs/{id}", "/subscriptions/{subscription_id}/jobs/cancelStatus")
    assert page._matches("/blob/{account}/{container}/{blob}", "/blob/{account}/{container}/{blob:path}")
    assert page._matches("/registries/{...}/models", "/registries/{registry_name}/models")
    assert not page._matches("/subscriptions/{s}/jobs", "/subscriptions/{subscription_id}/jobs/{name}")
