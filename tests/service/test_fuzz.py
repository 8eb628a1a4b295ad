"""Property-based fuzzing of every operation in the control plane's OpenAPI schema: no input gives a 5xx.

Every request carries a valid token (and the identity header), so the fuzz reaches past authentication.
Half of the generated paths are steered onto the default workspace and a valid compute name, so bodies
reach the validators instead of stopping at "workspace not found"; half of the request bodies of the
writing operations are ARM-shaped with fuzzed leaves.
"""

import re

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import utils as conjecture_utils
from schemathesis import DataGenerationMethod
from schemathesis.checks import not_a_server_error

from emulator import tokens

SUB = "00000000-0000-0000-0000-000000000000"
STEERED_PATH = {"subscription_id": SUB, "resource_group": "amlemu", "workspace_name": "amlemu", "location": "local"}
COMPUTE_NAMES = st.sampled_from(["fuzz-cluster", "cpu", "Fuzz-2"])
OUR_HEADERS = ("authorization", "x-identity-header")


def _legacy_more(self) -> bool:
    """`many.more()` as hypothesis-jsonschema 0.23 calls it, on top of the newer `with many(...)` / `for` API."""
    if self._depth is None:  # first call: what entering `with many(...) as elements: for _ in elements` does
        self.__enter__()
        self._legacy_elements = iter(self)
    try:
        next(self._legacy_elements)
        return True
    except StopIteration:
        self.__exit__(None, None, None)
        return False


@pytest.fixture(scope="module", autouse=True)
def hypothesis_jsonschema_compat():
    """The venv pairs hypothesis-jsonschema 0.23.1 (which schemathesis 3.x generates objects with) with a
    hypothesis whose conjecture `many` no longer has `more()`: every object draw fails with AttributeError.
    Until the versions are pinned to a compatible pair, give `many` the old method for this module only."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        if not hasattr(conjecture_utils.many, "more"):
            monkeypatch.setattr(conjecture_utils.many, "more", _legacy_more, raising=False)
        yield


@pytest.fixture(scope="module")
def api_schema(shared):
    # FastAPI publishes OpenAPI 3.1, which schemathesis 3.x only loads when told to; forcing "30" loads it with
    # the same generator (only response-schema validation, unused here, would differ) and no global switch.
    return schemathesis.from_asgi("/openapi.json", shared.app, force_schema_version="30",
                                  data_generation_methods=[DataGenerationMethod.positive,
                                                           DataGenerationMethod.negative])


schema = schemathesis.from_pytest_fixture("api_schema")


@schema.hook
def before_generate_path_parameters(context, strategy):
    placeholders = re.findall(r"{(\w+)}", context.operation.path)
    if not placeholders:
        return strategy

    def complete(params: dict | None) -> dict:
        # Known bug (see test_api.py::test_openapi_declares_every_path_parameter): the vmSizes operation does not
        # declare {subscription_id}, so nothing would be generated for it; fill in any undeclared one.
        params = dict(params or {})
        for name in placeholders:
            params.setdefault(name, STEERED_PATH.get(name, "x"))
        return params

    def steer(params: dict, compute_name: str) -> dict:
        steered = {key: STEERED_PATH.get(key, value) for key, value in complete(params).items()}
        if "compute_name" in steered:
            steered["compute_name"] = compute_name
        return steered

    return st.one_of(strategy.map(complete), st.builds(steer, strategy, COMPUTE_NAMES))


# JSON leaves for ARM-shaped bodies: mostly plausible values, some junk of every JSON type.
JUNK = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=5)
COUNTS = st.one_of(st.integers(min_value=-2, max_value=6), JUNK)
# Known bug (see test_api.py::test_huge_idle_duration_is_a_400): durations beyond timedelta's range give a
# 500, so the generated durations stay within it until that is fixed.
DURATIONS = st.one_of(st.sampled_from(["PT0S", "PT30S", "PT120S", "PT5M", "P1D", "P1Y", "P1M", "-PT5S", "PT", "P",
                                       "120", "PT1e3S", "P1W"]),
                      st.from_regex(r"\APT[0-9]{1,5}S\Z"), JUNK)
SCALE = st.fixed_dictionaries({}, optional={"minNodeCount": COUNTS, "maxNodeCount": COUNTS,
                                            "nodeIdleTimeBeforeScaleDown": DURATIONS})
INNER = st.fixed_dictionaries({}, optional={
    "vmSize": st.one_of(st.sampled_from(["Standard_DS3_v2", "standard_nc6", "Standard_Nope"]), JUNK),
    "vmPriority": st.one_of(st.sampled_from(["Dedicated", "LowPriority", "Spot"]), JUNK),
    "scaleSettings": st.one_of(SCALE, JUNK),
    "remoteLoginPortPublicAccess": JUNK,
})
# Known bug (see test_api.py::test_non_latin1_location_is_refused_and_stores_nothing): a location that is not
# latin-1 breaks the Azure-AsyncOperation header, so generated locations stay ASCII until that is fixed.
LOCATIONS = st.one_of(st.sampled_from(["local", "eastus", ""]), st.text(st.characters(max_codepoint=126,
                                                                                         min_codepoint=32),
                                                                         max_size=10))
TAGS = st.one_of(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2), JUNK)
COMPUTE_BODY = st.fixed_dictionaries({}, optional={
    "location": st.one_of(LOCATIONS, JUNK),
    "tags": TAGS,
    "identity": JUNK,
    "properties": st.one_of(st.fixed_dictionaries({}, optional={
        "computeType": st.one_of(st.sampled_from(["AmlCompute", "Kubernetes", "Nope"]), JUNK),
        "description": JUNK,
        "disableLocalAuth": JUNK,
        # Known bug (see test_api.py::test_patch_with_non_object_inner_properties_is_a_400): PATCH with a
        # non-object properties.properties gives a 500, so it is always an object or null here.
        "properties": st.one_of(INNER, st.none()),
    }), JUNK),
})
WORKSPACE_BODY = st.fixed_dictionaries({}, optional={
    "location": st.one_of(LOCATIONS, JUNK),
    "tags": TAGS,
    "kind": JUNK,
    "identity": JUNK,
    "properties": st.one_of(st.fixed_dictionaries({}, optional={
        "friendlyName": JUNK, "description": JUNK, "hbiWorkspace": JUNK, "publicNetworkAccess": JUNK,
    }), JUNK),
})


@schema.hook
def before_generate_body(context, strategy):
    path, method = context.operation.path, context.operation.method.upper()
    if path.endswith("/computes/{compute_name}") and method in ("PUT", "PATCH"):
        return st.one_of(strategy, COMPUTE_BODY)
    if path.endswith("/workspaces/{workspace_name}") and method in ("PUT", "PATCH"):
        return st.one_of(strategy, WORKSPACE_BODY)
    return strategy


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much, HealthCheck.data_too_large])
def test_no_server_errors(case, shared):
    # The generated case may carry its own Authorization / X-IDENTITY-HEADER (the routes declare them):
    # drop any spelling of them so the valid ones below are the only ones sent.
    if case.headers:
        case.headers = {k: v for k, v in case.headers.items() if k.lower() not in OUR_HEADERS}
    headers = {"Authorization": shared.auth["Authorization"],
               "X-IDENTITY-HEADER": tokens.identity_header(shared.secret)}
    response = case.call(headers=headers)
    case.validate_response(response, checks=(not_a_server_error,))
    assert response.status_code != 401, f"the token was not accepted: {response.text}"
