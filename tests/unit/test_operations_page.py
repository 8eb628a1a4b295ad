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


def test_the_sdk_is_followed_down_each_kind_of_path(rows):
    def calls(group, method):
        return {page.short(str(c)) for c, _ in rows[(group, method)].calls}

    assert "GET {ws}/jobs/{id}" in calls("jobs", "get")  # a client MLClient hands down by keyword, a partial's alias
    assert "GET {ws}" in calls("workspaces", "get")  # super()
    assert "PUT {rg}/registries/{registryName}" in calls("registries", "begin_create")  # a build_*_request of its own
    assert "POST {ws}/computes/{...}/enableSso" in calls("compute", "enable_sso")  # an HttpRequest built by hand
    assert "GET {ws}/batchEndpoints/{...}/jobs" in calls("batch_endpoints", "list_jobs")  # its requests pipeline
    assert "`jobs.create_or_update`" in rows[("data", "import_data")].note  # MLClient's operations container
    assert "`compute.get`" in rows[("jobs", "create_or_update")].note  # another group's operation, not followed
