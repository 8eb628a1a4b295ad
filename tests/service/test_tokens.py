"""Token audiences and bad credentials: management tokens work only on the api, scoring tokens only on the
scoring router (run in-process on the api's store), and no bad header gets a 500 or an error naming an
exception."""

import asyncio

import httpx
import pytest

from emulator import tokens
from emulator.scoring.app import Router
from tests.service.conftest import RESOURCE
from tests.service.test_api import API, COMPUTES, WS_PATH, assert_arm_error, cluster, list_computes
from tests.service.test_online_endpoints import ENDPOINTS, endpoint_body


def msi_token(client, secret: bytes, resource: str) -> str:
    response = client.get("/msi/token", params={"api-version": "2019-08-01", "resource": resource},
                          headers={"X-IDENTITY-HEADER": tokens.identity_header(secret)})
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# The resource azure-ai-ml asks for (the cloud metadata's resourceManager, without its slash, as
# _get_cloud_information_from_metadata strips it), with the slash, and ARM's own audiences.
# The emulator's own URL under the other names its certificate carries (`amlemu env` asks for localhost's).
@pytest.mark.parametrize("resource", [RESOURCE, RESOURCE + "/", "https://management.azure.com/",
                                      "https://management.core.windows.net/", "https://127.0.0.1:8443",
                                      "https://[::1]:8443/"])
def test_management_accepts_the_audiences_clients_ask_for(shared, resource):
    response = shared.client.get(WS_PATH, params=API, headers=bearer(msi_token(shared.client, shared.secret,
                                                                                resource)))
    assert response.status_code == 200, response.text


def _refused_everywhere(shared, headers: dict) -> list[dict]:
    """A reading and a writing route both refuse with 401, and the write changes nothing."""
    client = shared.client
    before = list_computes(client, shared.auth)
    errors = [assert_arm_error(client.get(COMPUTES, params=API, headers=headers), 401),
              assert_arm_error(client.put(f"{COMPUTES}/refused", params=API, headers=headers, json=cluster()), 401)]
    assert list_computes(client, shared.auth) == before
    return errors


@pytest.mark.parametrize("resource", [tokens.SCORING_AUDIENCE, tokens.SCORING_AUDIENCE + "/"])
def test_management_refuses_an_aad_scoring_token(shared, resource):
    token = msi_token(shared.client, shared.secret, resource)
    for error in _refused_everywhere(shared, bearer(token)):
        assert error["code"] == "InvalidAuthenticationTokenAudience"
        assert "'https://ml.azure.com" in error["message"] and "scoring token" in error["message"]
        assert RESOURCE in error["message"]  # the audience to ask for instead


def test_management_refuses_an_endpoints_aml_token(shared):
    client, auth = shared.client, shared.auth
    assert client.put(f"{ENDPOINTS}/ep-aml", params=API, headers=auth,
                      json=endpoint_body("AMLToken")).status_code == 201
    token = client.post(f"{ENDPOINTS}/ep-aml/token", params=API, headers=auth).json()["accessToken"]
    for error in _refused_everywhere(shared, bearer(token)):
        assert error["code"] == "InvalidAuthenticationTokenAudience"
        assert "scoring token" in error["message"]


@pytest.mark.parametrize("resource", ["https://blob_access.azure.com", "https://vault.azure.net", "x",
                                      "https://localhost:8444", "http://localhost:8443"])
def test_management_refuses_other_audiences(shared, resource):
    for error in _refused_everywhere(shared, bearer(msi_token(shared.client, shared.secret, resource))):
        assert error["code"] == "InvalidAuthenticationTokenAudience"
        assert f"'{resource}'" in error["message"] and "https://management.azure.com" in error["message"]


# Raw bytes: httpx would refuse to encode non-ASCII str values itself.
BAD_AUTHORIZATION = {
    "non-ASCII token": "Bearer ééé".encode(),
    "latin-1 bytes": b"Bearer \xff\xfe\xfd",
    "non-ASCII scheme": "Bëarer x".encode(),
    "huge token": b"Bearer " + b"A" * 60_000,
    "huge garbage": b"x" * 60_000,
    "dots only": b"Bearer ...",
    "tab inside": b"Bearer a\tb.c.d",
    "token of another audience and a valid one": b"Bearer a.b.c, Bearer d.e.f",
}


@pytest.mark.parametrize("kind", BAD_AUTHORIZATION)
def test_management_refuses_malformed_authorization_headers(shared, kind):
    for error in _refused_everywhere(shared, {"Authorization": BAD_AUTHORIZATION[kind]}):
        assert error["code"] in ("AuthenticationFailed", "InvalidAuthenticationToken")
        assert "Error(" not in error["message"] and "Traceback" not in error["message"]


BAD_IDENTITY_HEADERS = {
    "non-ASCII": ("ééé".encode(), 400),
    "latin-1 bytes": (b"\xff" * 32, 400),
    "the right value with a non-ASCII tail": (None, 400),
    "too long": (b"a" * 257, 400),
    "huge": (b"a" * 60_000, 400),
    "control character": (b"abc\x7fdef", 400),
    "tab": (b"abc\tdef", 400),
    "wrong": (b"0" * 32, 401),
    "the right value in capitals": (None, 401),
}


@pytest.mark.parametrize("kind", BAD_IDENTITY_HEADERS)
def test_msi_token_refuses_malformed_identity_headers_with_an_arm_error(shared, kind):
    value, status = BAD_IDENTITY_HEADERS[kind]
    right = tokens.identity_header(shared.secret)
    if kind == "the right value with a non-ASCII tail":
        value = (right + "é").encode()
    elif kind == "the right value in capitals":
        value = right.upper().encode()
    response = shared.client.get("/msi/token", params={"resource": RESOURCE}, headers={"X-IDENTITY-HEADER": value})
    error = assert_arm_error(response, status, target="X-IDENTITY-HEADER")
    assert "IDENTITY_HEADER" in error["message"] and "access_token" not in response.text


def test_unexpected_errors_render_without_the_exception(app, client, auth, monkeypatch, caplog):
    """A bug in a route: a generic 500 ARM body (storage XML under /blob), the stack only in the log."""
    from emulator.services import blobs

    def broken(*args, **kwargs):
        raise RuntimeError("<object at 0xdeadbeef> with a secret")

    monkeypatch.setattr(blobs.BlobStore, "create_container", broken)
    app.add_api_route("/_test/broken", lambda: broken())
    arm, blob = client.get("/_test/broken"), client.put(f"/blob/{_sas_container(app)}&restype=container")
    assert_arm_error(arm, 500, "InternalServerError")
    assert blob.status_code == 500 and blob.headers["x-ms-error-code"] == "InternalError"
    for response in (arm, blob):
        assert "deadbeef" not in response.text and "RuntimeError" not in response.text
    assert "deadbeef" in caplog.text  # the stack went to the api's log


def _sas_container(app) -> str:
    from datetime import UTC, datetime

    from emulator.domain.ids import WorkspaceRef
    from emulator.domain.storage import blob_access
    from emulator.settings import DEFAULT_SUBSCRIPTION
    account = blob_access.workspace_account(WorkspaceRef(DEFAULT_SUBSCRIPTION, "amlemu", "amlemu"))
    container = "fresh-container"
    return f"{account}/{container}?{blob_access.mint(app.state.context.secret, account, container, datetime.now(UTC))}"


# ---------------------------------------------------------------- the scoring router

@pytest.fixture
def scoring(app, client, auth):
    """The router on the api's store, with one endpoint per auth mode, and a call that gives its answer."""
    for name, mode in (("ep-key", "Key"), ("ep-aml", "AMLToken"), ("ep-aad", "AADToken")):
        assert client.put(f"{ENDPOINTS}/{name}", params=API, headers=auth,
                          json=endpoint_body(mode)).status_code == 201
    context = app.state.context
    router = Router(context.settings, context.store, context.secret)
    asyncio.run(router.refresh())

    def call(endpoint: str, credential: str) -> httpx.Response:
        async def go():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=router),
                                         base_url="http://router") as scorer:
                return await scorer.post(f"/endpoints/{endpoint}/score", json={}, headers=bearer(credential))
        return asyncio.run(go())
    return call


def test_scoring_router_takes_scoring_tokens_and_refuses_management_ones(scoring, client, secret, auth, token):
    aml = client.post(f"{ENDPOINTS}/ep-aml/token", params=API, headers=auth).json()["accessToken"]
    aad = msi_token(client, secret, tokens.SCORING_AUDIENCE)
    key = client.post(f"{ENDPOINTS}/ep-key/listKeys", params=API, headers=auth).json()["primaryKey"]
    # Past the credential check: no deployment to route to yet, which is a 404, not a 401.
    assert scoring("ep-aml", aml).status_code == 404
    assert scoring("ep-aad", aad).status_code == 404
    assert scoring("ep-key", key).status_code == 404
    refused = {"ep-aad": [token, aml, msi_token(client, secret, "https://management.azure.com")],
               "ep-aml": [token, aad], "ep-key": [token, aad, aml]}
    for endpoint, credentials in refused.items():
        for credential in credentials:
            response = scoring(endpoint, credential)
            assert response.status_code == 401, (endpoint, response.text)
            assert set(response.json()) == {"message"} and endpoint in response.json()["message"]
    message = scoring("ep-aad", token).json()["message"]
    assert "wrong audience" in message and "management token" in message and tokens.SCORING_AUDIENCE in message
