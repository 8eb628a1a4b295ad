"""Property-based fuzzing of what test_fuzz.py keeps valid: the credential headers, and the blob routes past
their SAS check. No input gives a 5xx, and no error names an exception.

Headers: Authorization (valid, scoring, other audiences, claims of the wrong type, random bytes, non-ASCII,
huge), X-IDENTITY-HEADER and a Content-Length that does not match the body, on the identity endpoint and a
sample of management operations (they share one authentication dependency). Blobs: every blob operation in the
schema, most often on a container whose SAS is minted as the api mints it (all permissions, as
startPendingUpload and listSecrets do, or read only, as job outputs get), with random blob names, comp values,
block ids, block lists, bodies, query parameters and storage headers.
"""

import base64
import hashlib
import json
import re
import uuid
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote

import jwt
import schemathesis
from hypothesis import settings
from hypothesis import strategies as st
from schemathesis.constants import NOT_SET

from emulator import tokens
from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access
from emulator.services.blob_io import Staged
from emulator.services.blobs import BlobStore
from emulator.settings import DEFAULT_SUBSCRIPTION
from tests.service.conftest import RESOURCE
from tests.service.test_fuzz import FUZZ_SETTINGS, STEERED_PATH, _restore_fixtures, api_schema  # noqa: F401

schema = schemathesis.from_pytest_fixture("api_schema")
ACCOUNT, CONTAINER = blob_access.workspace_account(WorkspaceRef(DEFAULT_SUBSCRIPTION, "amlemu", "amlemu")), "fuzz"
SEEDED = "seed/blob.bin"  # put back before every example, so reads, deletes and block lists find something
HEADER_OPERATIONS = r"(/msi/token|/computes/\{compute_name\}|/onlineEndpoints/\{endpoint_name\}/token)$"
REPR = re.compile(r"Traceback|\b\w+Error\(|<\w[\w.]* object at 0x")

def _staged(store: BlobStore, data: bytes) -> Staged:
    """A body as the blob routes receive one: in the store's staging folder, with its MD5."""
    store.tmp.mkdir(parents=True, exist_ok=True)
    path = store.tmp / uuid.uuid4().hex
    path.write_bytes(data)
    return Staged(path, base64.b64encode(hashlib.md5(data).digest()).decode(), len(data))


# ---------------------------------------------------------------- strategies

SHORT_TEXT = st.text(max_size=12)
RAW = st.binary(max_size=40)


def _jwt(claims: dict, secret: bytes | None) -> str:
    return jwt.encode(claims, secret, algorithm="HS256") if secret else jwt.encode(claims, None, algorithm="none")


def authorization_values(secret: bytes) -> st.SearchStrategy:
    """Bytes as sent on the wire: valid and scoring tokens, tokens of our own key with odd claims, and junk."""
    ours = st.builds(lambda resource: tokens.issue(secret, resource)[0],
                     st.one_of(st.sampled_from([RESOURCE, tokens.SCORING_AUDIENCE, "https://management.azure.com"]),
                               SHORT_TEXT))
    odd_claims = st.builds(_jwt, st.dictionaries(st.sampled_from(["aud", "exp", "nbf", "iat", "tid"]),
                                                 st.one_of(st.integers(), SHORT_TEXT, st.lists(SHORT_TEXT, max_size=2),
                                                           st.none()), max_size=5),
                           st.sampled_from([secret, None, b"another key of thirty-two bytes."]))
    endpoint = st.builds(lambda key: tokens.issue_endpoint_token(secret, key, int(datetime.now(UTC).timestamp()))[0],
                         SHORT_TEXT)
    bearer = st.one_of(ours, odd_claims, endpoint, SHORT_TEXT).map(lambda token: f"Bearer {token}".encode())
    return st.one_of(bearer, RAW, SHORT_TEXT.map(str.encode), st.builds(lambda n: b"Bearer " + b"A" * n,
                                                                         st.integers(1000, 70_000)))


def identity_values(secret: bytes) -> st.SearchStrategy:
    right = tokens.identity_header(secret)
    return st.one_of(st.just(right.encode()), RAW, SHORT_TEXT.map(str.encode),
                     st.builds(lambda tail: (right + tail).encode(), SHORT_TEXT),
                     st.integers(200, 10_000).map(lambda n: b"a" * n))


BLOCK_IDS = st.one_of(st.binary(min_size=1, max_size=64).map(lambda b: base64.b64encode(b).decode()),
                      st.sampled_from(["seed-block", "", "=" * 200]), SHORT_TEXT)


def _block_list(ids: list[str], tags: list[str]) -> bytes:
    entries = "".join(f"<{tag}>{block}</{tag}>" for tag, block in zip(tags, ids, strict=False))
    return f'<?xml version="1.0" encoding="utf-8"?><BlockList>{entries}</BlockList>'.encode()


BLOCK_LISTS = st.builds(_block_list, st.lists(BLOCK_IDS.map(lambda b: b.replace("<", "")), max_size=3),
                        st.lists(st.sampled_from(["Latest", "Committed", "Uncommitted", "Other"]), max_size=3))
BODIES = st.one_of(st.binary(max_size=512), BLOCK_LISTS, st.sampled_from([b"", b"<BlockList>", b"<a/>"]))
BLOB_QUERY = st.fixed_dictionaries({}, optional={
    "comp": st.one_of(st.sampled_from(["block", "blocklist", "metadata", "list", "properties"]), SHORT_TEXT),
    "restype": st.one_of(st.just("container"), SHORT_TEXT),
    "blockid": BLOCK_IDS,
    "prefix": SHORT_TEXT, "marker": SHORT_TEXT, "delimiter": SHORT_TEXT, "include": SHORT_TEXT,
    "maxresults": st.one_of(st.integers(-5, 6000).map(str), SHORT_TEXT),
    "timeout": SHORT_TEXT,
})
HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=16)
BLOB_HEADERS = st.fixed_dictionaries({}, optional={
    "x-ms-blob-type": st.one_of(st.sampled_from(["BlockBlob", "PageBlob", "AppendBlob"]), HEADER_TEXT),
    "Content-MD5": st.one_of(st.just("body"), HEADER_TEXT),  # "body": the body's own MD5
    "x-ms-range": st.one_of(st.builds("bytes={}-{}".format, st.integers(0, 600), st.integers(0, 600)),
                            st.builds("bytes={}-".format, st.integers(0, 10**12)), HEADER_TEXT),
    "Range": HEADER_TEXT,
    "x-ms-range-get-content-md5": st.sampled_from(["true", "false", "maybe"]),
    "If-None-Match": st.one_of(st.just("*"), HEADER_TEXT),
    "x-ms-meta-": st.tuples(HEADER_TEXT, HEADER_TEXT),  # a metadata header, name and value
    "x-ms-blob-content-type": HEADER_TEXT,
    "x-ms-version": HEADER_TEXT,
})
BLOB_NAMES = st.one_of(st.just(SEEDED), st.just(SEEDED), st.from_regex(r"\A[\w./ -]{1,30}\Z"),
                       st.sampled_from(["new.bin", "dir/new", "a" * 1025, "..", "a/../b", "a//b", " "]),
                       st.text(min_size=1, max_size=30))
VALID_BLOCK_IDS = st.binary(min_size=1, max_size=48).map(lambda b: base64.b64encode(b).decode())
MD5 = st.just({"Content-MD5": "body"})
META = st.dictionaries(st.from_regex(r"\Ax-ms-meta-[a-z_][a-z0-9_]{0,8}\Z"), HEADER_TEXT, max_size=2)


def _request_of(query: dict, headers: st.SearchStrategy = st.just({}), bodies: st.SearchStrategy = st.just(b"")):
    return st.fixed_dictionaries({"query": st.just(query), "headers": headers, "body": bodies})


def _merged(*parts: st.SearchStrategy) -> st.SearchStrategy:
    return st.tuples(*parts).map(lambda dicts: {k: v for d in dicts for k, v in d.items()})


# What azure-storage-blob sends (each call of the subset the routes serve), with random names, ids and bodies.
PLAUSIBLE = st.one_of(
    _request_of({}, _merged(st.just({"x-ms-blob-type": "BlockBlob"}), st.one_of(MD5, st.just({})), META),
                st.binary(max_size=512)),
    st.builds(lambda request, block: {**request, "query": {"comp": "block", "blockid": block}},
              _request_of({}, st.one_of(MD5, st.just({})), st.binary(max_size=512)), VALID_BLOCK_IDS),
    _request_of({"comp": "blocklist"}, META, st.builds(_block_list, st.lists(
        st.one_of(st.just("seed-block"), VALID_BLOCK_IDS), max_size=3), st.just(["Latest"] * 3))),
    _request_of({"comp": "metadata"}, META),
    st.builds(lambda request, query: {**request, "query": {"restype": "container", "comp": "list", **query}},
              _request_of({}), st.fixed_dictionaries({}, optional={
                  "prefix": st.sampled_from(["", "seed", "seed/", "dir/"]), "delimiter": st.just("/"),
                  "maxresults": st.integers(1, 3).map(str), "include": st.just("metadata"),
                  "marker": st.sampled_from(["", SEEDED])})),
    _request_of({}, st.fixed_dictionaries({}, optional={
        "x-ms-range": st.builds("bytes={}-{}".format, st.integers(0, 450), st.integers(0, 450)),
        "x-ms-range-get-content-md5": st.just("true")})),
)
JUNK_REQUEST = st.fixed_dictionaries({"query": BLOB_QUERY, "headers": BLOB_HEADERS, "body": BODIES})
BLOB_REQUEST = st.builds(lambda request, permissions: {**request, "permissions": permissions},
                         st.one_of(PLAUSIBLE, PLAUSIBLE, JUNK_REQUEST),
                         st.sampled_from([blob_access.ALL_PERMISSIONS] * 3 + ["r"]))


@schema.hook
def before_generate_path_parameters(context, strategy):
    """Blob operations: the SAS's container four times in five, with any blob name; others as test_fuzz steers."""
    if context.operation.path.startswith("/blob/"):
        ours = st.fixed_dictionaries({"account": st.just(ACCOUNT), "container": st.just(CONTAINER),
                                      "blob": BLOB_NAMES})
        return st.one_of(ours, ours, ours, ours, strategy).map(lambda params: _only(params, context.operation.path))
    return strategy.map(lambda params: {key: STEERED_PATH.get(key, value) for key, value in (params or {}).items()})


def _only(params: dict, path: str) -> dict:
    return {key: value for key, value in params.items() if "{" + key in path}


# ---------------------------------------------------------------- checks

def _assert_served(response) -> None:
    assert response.status_code < 500, f"{response.status_code}: {response.text[:2000]}"
    assert not REPR.search(response.text), f"an error names an exception: {response.text[:2000]}"


def _path(case) -> str:
    """The operation's path with its parameters percent-encoded (a blob name keeps its slashes)."""
    params = case.path_parameters or {}
    return re.sub(r"{(\w+)(?::path)?}", lambda m: quote(str(params.get(m[1], "x")), safe="/" if m[1] == "blob" else ""),
                  case.operation.path)


def _request(shared, case, headers: dict, **content):
    return shared.client.request(case.method, _path(case), params=case.query or None, headers=headers, **content)


# ---------------------------------------------------------------- tests

@schema.include(path_regex=HEADER_OPERATIONS).parametrize()
@schema.given(data=st.data())
@settings(FUZZ_SETTINGS, max_examples=30)
def test_no_server_errors_from_credential_headers(case, data, shared):
    _restore_fixtures(shared)
    headers = {"Authorization": data.draw(authorization_values(shared.secret), "Authorization"),
               "X-IDENTITY-HEADER": data.draw(identity_values(shared.secret), "X-IDENTITY-HEADER")}
    body = b"" if case.body is NOT_SET else json.dumps(case.body).encode()
    if body:
        headers["Content-Type"] = "application/json"
    if data.draw(st.booleans(), "wrong Content-Length"):
        headers["Content-Length"] = str(data.draw(st.integers(0, 10**9).filter(lambda n: n != len(body))))
    response = _request(shared, case, headers, content=body)
    _assert_served(response)
    if response.status_code < 400:  # let through: only with the right credential
        if case.operation.path == "/msi/token":
            assert headers["X-IDENTITY-HEADER"] == tokens.identity_header(shared.secret).encode()
        else:
            tokens.verify(shared.secret, headers["Authorization"].decode("latin-1"),
                          tokens.management_audiences([RESOURCE]))


@schema.include(path_regex=r"^/blob/").parametrize()
@schema.given(blob=BLOB_REQUEST)
@settings(FUZZ_SETTINGS, max_examples=40)
def test_no_server_errors_from_blob_requests_past_the_sas(case, blob, shared):
    ctx = shared.app.state.context
    store = BlobStore(ctx.settings.data_dir)
    store.create_container(ACCOUNT, CONTAINER)
    store.put(ACCOUNT, CONTAINER, SEEDED, _staged(store, b"seed" * 100), now=datetime.now(UTC))
    store.put_block(ACCOUNT, CONTAINER, SEEDED, "seed-block", _staged(store, b"block"), None)
    params = case.path_parameters or {}
    sas = blob_access.mint(ctx.secret, params.get("account", ACCOUNT), params.get("container", CONTAINER),
                       datetime.now(UTC), permissions=blob["permissions"])
    case.query = {**dict(parse_qsl(sas)), **blob["query"]}
    headers = {name: value for name, value in blob["headers"].items() if name != "x-ms-meta-"}  # see below
    if "x-ms-meta-" in blob["headers"]:
        name, value = blob["headers"]["x-ms-meta-"]
        headers[f"x-ms-meta-{name}"] = value
    if headers.get("Content-MD5") == "body":
        headers["Content-MD5"] = base64.b64encode(hashlib.md5(blob["body"]).digest()).decode()
    _assert_served(_request(shared, case, headers, content=blob["body"] if case.method != "HEAD" else None))
