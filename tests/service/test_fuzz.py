"""Property-based fuzzing of every operation in the control plane's OpenAPI schema: no input gives a 5xx.

Every request carries a valid token (and the identity header), so the fuzz reaches past authentication.
Two in three generated paths are steered onto the default workspace and a few valid compute names (one of
which always exists), so requests reach the validators instead of stopping at "not found"; the writing
operations also get ARM-shaped bodies with junk at every level, and non-object bodies.

Schema violations come from these hooks rather than from schemathesis' negative mode: with the
hypothesis / hypothesis-jsonschema pair in the venv, negative generation for this schema's string path
parameters and headers is unsatisfiable (and can spin for minutes).
"""

import os
import re
import time
from datetime import UTC, datetime

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import DataGenerationMethod
from schemathesis.checks import not_a_server_error

from emulator import tokens
from emulator.services import computes as compute_service
from emulator.services import workspaces as workspace_service

SUB = "00000000-0000-0000-0000-000000000000"
STEERED_PATH = {"subscription_id": SUB, "resource_group": "amlemu", "workspace_name": "amlemu",
                "location": "local"}
EXISTING = "cpu"  # re-created before every example if a fuzzed DELETE took it away
COMPUTE_NAMES = st.sampled_from([EXISTING, EXISTING.upper(), "fuzz-cluster"])
OUR_HEADERS = ("authorization", "x-identity-header")
NOT_READY_HERE = "/_emulator/ready"
VALID_CLUSTER = {"properties": {"computeType": "AmlCompute", "properties": {
    "vmSize": "Standard_DS3_v2", "scaleSettings": {"minNodeCount": 0, "maxNodeCount": 2}}}}


@pytest.fixture(scope="module")
def api_schema(shared):
    # FastAPI publishes OpenAPI 3.1, which schemathesis 3.x only loads when told to; forcing "30" loads it
    # with the same generator (only response-schema validation, unused here, would differ) and no global
    # switch.
    return schemathesis.from_asgi("/openapi.json", shared.app, force_schema_version="30")


schema = schemathesis.from_pytest_fixture("api_schema")


@schema.hook
def before_generate_path_parameters(context, strategy):
    placeholders = re.findall(r"{(\w+)}", context.operation.path)
    if not placeholders:
        return strategy

    def complete(params: dict | None) -> dict:
        # Fill in any placeholder the schema leaves undeclared (test_api.py checks there are none).
        params = dict(params or {})
        for name in placeholders:
            params.setdefault(name, STEERED_PATH.get(name, "x"))
        return params

    def steer(params: dict, compute_name: str) -> dict:
        steered = {key: STEERED_PATH.get(key, value) for key, value in complete(params).items()}
        if "compute_name" in steered:
            steered["compute_name"] = compute_name
        return steered

    steered = st.builds(steer, strategy, COMPUTE_NAMES)
    return st.one_of(strategy.map(complete), steered, steered)


def _often(plausible: st.SearchStrategy, junk: st.SearchStrategy) -> st.SearchStrategy:
    """Plausible values two times in three, junk otherwise."""
    return st.one_of(plausible, plausible, junk)


# Any JSON value (no NaN/Infinity: the client cannot send them; test_api.py sends them raw), with non-empty
# ones boosted: Hypothesis otherwise mostly draws the falsy [], {}, "", 0 and null that `x or default`
# absorbs.
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=8))
ANY_JSON = st.recursive(SCALARS,
                        lambda inner: (st.lists(inner, max_size=3)
                                       | st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                        max_leaves=5)
TRUTHY = st.one_of(st.just(True), st.integers().filter(bool), st.text(min_size=1, max_size=8),
                   st.lists(ANY_JSON, min_size=1, max_size=3))
JUNK = st.one_of(ANY_JSON, TRUTHY)
NOT_OBJECT = JUNK.filter(lambda value: not isinstance(value, dict))
COUNTS = st.one_of(st.integers(min_value=1, max_value=6), st.integers(min_value=0, max_value=6),
                   st.integers(min_value=-2, max_value=0), JUNK)
DURATIONS = _often(st.one_of(st.sampled_from(["PT0S", "PT30S", "PT120S", "PT5M", "P1D", "P1W", "PT1H30M",
                                              "P1Y", "P1M", "-PT5S", "PT", "P", "120", "PT1e3S", "00:02:00",
                                              "P30D", "P3651D", "P99999999999D", "PT99999999999999999999S"]),
                             st.from_regex(r"\AP(T[0-9]{1,25}[HMS]|[0-9]{1,12}D)\Z")), JUNK)
SCALE = st.fixed_dictionaries({"maxNodeCount": COUNTS},
                              optional={"minNodeCount": COUNTS, "nodeIdleTimeBeforeScaleDown": DURATIONS})
INNER = st.fixed_dictionaries({"scaleSettings": _often(SCALE, JUNK)}, optional={
    "vmSize": _often(st.sampled_from(["Standard_DS3_v2", "standard_nc6", "STANDARD_D2_V3", "Standard_Nope",
                                      ""]), JUNK),
    "vmPriority": _often(st.sampled_from(["Dedicated", "LowPriority", "Spot", "dedicated"]), JUNK),
    "remoteLoginPortPublicAccess": JUNK,
    "somethingElse": JUNK,
})
LOCATIONS = st.one_of(st.sampled_from(["local", "eastus", "East US", "", "東京", "a/b?c"]),
                      st.text(max_size=10))
TAGS = _often(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2), JUNK)
COMPUTE_PROPERTIES = st.fixed_dictionaries({
    "computeType": _often(st.just("AmlCompute"), st.one_of(st.sampled_from(["Kubernetes", "amlcompute", ""]),
                                                              JUNK)),
    "properties": _often(INNER, JUNK),
}, optional={"description": JUNK, "disableLocalAuth": JUNK})
COMPUTE_BODY = st.fixed_dictionaries({"properties": _often(COMPUTE_PROPERTIES, JUNK)},
                                     optional={"location": _often(LOCATIONS, JUNK), "tags": TAGS,
                                               "identity": JUNK})
WORKSPACE_PROPERTIES = st.fixed_dictionaries({}, optional={
    "friendlyName": JUNK, "description": JUNK, "hbiWorkspace": JUNK, "publicNetworkAccess": JUNK,
    "notWritable": JUNK})
WORKSPACE_BODY = st.fixed_dictionaries({"location": _often(LOCATIONS, JUNK),
                                        "properties": _often(WORKSPACE_PROPERTIES, JUNK)},
                                       optional={"tags": TAGS, "kind": JUNK, "identity": JUNK})


@schema.hook
def before_generate_body(context, strategy):
    path, method = context.operation.path, context.operation.method.upper()
    # ARM-shaped bodies three times as often as the schema's own (any object); every body is an object in the
    # schema, so other JSON values are sent too.
    if path.endswith("/computes/{compute_name}") and method in ("PUT", "PATCH"):
        strategy = st.one_of(COMPUTE_BODY, COMPUTE_BODY, COMPUTE_BODY, strategy, NOT_OBJECT)
    elif path.endswith("/workspaces/{workspace_name}") and method in ("PUT", "PATCH"):
        strategy = st.one_of(WORKSPACE_BODY, WORKSPACE_BODY, WORKSPACE_BODY, strategy, NOT_OBJECT)
    else:
        strategy = st.one_of(strategy, NOT_OBJECT)
    return strategy


def _restore_fixtures(shared) -> None:
    """Put back what earlier fuzzed DELETEs took away: the default workspace and the cluster EXISTING
    (a cluster left Deleting is removed, as the controller would once its containers are gone)."""
    ctx = shared.app.state.context
    now = datetime.now(UTC)
    with ctx.store.transaction() as repo:
        workspace_service.ensure_default(repo, ctx.settings, now)
        ref = workspace_service.default_ref(ctx.settings)
        row = repo.compute(ref.child_id("computes", EXISTING))
        if row is not None and row.provisioning_state == "Deleting":
            repo.remove(row)
            repo.session.flush()
            row = None
        if row is None:
            compute_service.put(repo, ref, repo.workspace(ref.key), EXISTING, VALID_CLUSTER, now)


FUZZ_SETTINGS = settings(deadline=None, derandomize=True, database=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                HealthCheck.filter_too_much, HealthCheck.data_too_large])


def _call_and_check(case, shared) -> None:
    _restore_fixtures(shared)
    # The generated case may carry its own Authorization / X-IDENTITY-HEADER (the routes declare them):
    # drop any spelling of them so the valid ones below are the only ones sent.
    if case.headers:
        case.headers = {k: v for k, v in case.headers.items() if k.lower() not in OUR_HEADERS}
    authorization = shared.auth["Authorization"]
    if re.search(r"/batchEndpoints/[^/]+/(deployments/[^/]+/)?jobs$", case.operation.path):
        # a batch endpoint's data plane takes Azure ML data-plane tokens only
        authorization = f"Bearer {tokens.issue(shared.secret, tokens.SCORING_AUDIENCE)[0]}"
    headers = {"Authorization": authorization, "X-IDENTITY-HEADER": tokens.identity_header(shared.secret)}
    if case.operation.path.startswith("/studio"):
        # the Studio's pages take a browser's session cookie, not the token: the fuzz gets a valid one
        case.cookies = {tokens.SESSION_COOKIE: tokens.studio_session(shared.secret, time.time())}
    response = case.call(headers=headers)
    if case.operation.path == NOT_READY_HERE and response.status_code == 503:
        return  # no MLflow server runs here: not ready is the right answer (test_api.py checks what it says)
    case.validate_response(response, checks=(not_a_server_error,))
    if case.operation.path != "/studio/login":  # a fuzzed login ticket is refused, as it should be
        assert response.status_code != 401, f"the token was not accepted: {response.text}"


# Every operation in one test (schemathesis runs them as subtests): past the suite's 600 s per test on a loaded
# machine since the attached and Kubernetes computes, the node files and the Execution Service added routes.
FUZZ_TIMEOUT = pytest.mark.timeout(1800)
# Examples per operation, and per writing operation's body. The examples are the same each run (derandomized); these
# counts keep the two tests near 200 s together, which make test's 30 minutes on two cores can spare (at 25 and 100
# they took 610 s of a 1947 s run; at 12 and 50, 420 s of a 2122 s one). AMLEMU_FUZZ_DEPTH multiplies both for a
# deeper run by hand.
DEPTH = float(os.environ.get("AMLEMU_FUZZ_DEPTH", "1"))
EXAMPLES, BODY_EXAMPLES = round(6 * DEPTH), round(25 * DEPTH)


@FUZZ_TIMEOUT
@schema.parametrize(data_generation_methods=[DataGenerationMethod.positive])
@settings(FUZZ_SETTINGS, max_examples=EXAMPLES)
def test_no_server_errors(case, shared):
    """Every operation."""
    _call_and_check(case, shared)


def _has_body(ctx) -> bool:
    return "requestBody" in ctx.operation.definition.raw


@FUZZ_TIMEOUT
@schema.include(_has_body).parametrize(data_generation_methods=[DataGenerationMethod.positive])
@settings(FUZZ_SETTINGS, max_examples=BODY_EXAMPLES)
def test_no_server_errors_from_bodies(case, shared):
    """The operations that take a body, where the validation lives, get more examples."""
    _call_and_check(case, shared)
