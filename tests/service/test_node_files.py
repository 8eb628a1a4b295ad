"""A detached node's files on the api (/_emulator/nodes/{node}/files): only with the node's own token, only for a
rank that node claimed while its attempt is current, only within the scope the controller recorded: what the
rank reads comes out as tar (links planted in the workspace not followed), its log is appended once, and what it
sends back lands inside its writable mounts and nowhere else. Redis is in memory (fakeredis)."""

import io
import tarfile

import fakeredis
import pytest

from emulator import tokens
from emulator.dispatch import protocol, rank_files
from emulator.dispatch.protocol import Attempt, Mount

JOB_KEY = "/subscriptions/s/resourcegroups/r/workspaces/w/jobs/j1"
JOB = "blobs/acct/azureml/ExperimentRun/dcid.j1"
NODE, OTHER = "tvmps_aaaa_d", "tvmps_bbbb_d"
FILES = f"/_emulator/nodes/{NODE}/files"


def _attempt(number: int = 1) -> Attempt:
    return Attempt(job_key=JOB_KEY, job_name="j1", attempt=number, rank=0, world_size=1, image="i", command="c",
                   env={}, labels={}, container_name="n", cpus=None, memory_bytes=None, gpus=0, network=None,
                   user=None, workdir=f"jobs/t/{number}/0/wd", code_dir="blobs/acct/code/snap",
                   log_file=f"{JOB}/user_logs/std_log.txt",
                   mounts=[Mount(f"{JOB}/outputs", "/mnt/azureml/wd/outputs"),
                           Mount("blobs/acct/data/in", "/mnt/azureml/inputs/data", read_only=True)],
                   disk_limit_bytes=64 << 10)


@pytest.fixture
def broker(app):
    broker = fakeredis.FakeRedis()
    app.state.context.services.node_files.broker = broker
    return broker


@pytest.fixture
def data(settings):
    root = settings.data_dir
    for folder in ("blobs/acct/code/snap", "blobs/acct/data/in", f"{JOB}/outputs", "ca"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "blobs/acct/code/snap/train.py").write_text("print('hi')")
    (root / "blobs/acct/data/in/greeting.txt").write_text("hello")
    (root / "blobs/acct/data/in/planted").symlink_to(root / "ca")  # a link another job left: never followed
    (root / "ca/secret.key").write_text("PRIVATE KEY")
    return root


def _running(broker, attempt: Attempt, node: str = NODE) -> None:
    """As the controller and the node leave it: current, scope recorded, rank claimed by `node`."""
    protocol.set_current(broker, attempt.job_key, attempt.attempt)
    rank_files.record(broker, attempt)
    broker.set(protocol.claim_key(attempt.job_key, attempt.attempt, attempt.rank), node)


def _auth(secret: bytes, node: str = NODE) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens.node_token(secret, node)}"}


def _rank(attempt: int = 1) -> dict:
    return {"job": JOB_KEY, "attempt": attempt, "rank": 0}


def _tar(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return out.getvalue()


def test_the_node_that_claimed_the_rank_fetches_what_it_reads_and_no_planted_link(client, secret, broker, data):
    _running(broker, _attempt())
    response = client.get(FILES, params=_rank(), headers=_auth(secret))
    assert response.status_code == 200, response.text
    tar = tarfile.open(fileobj=io.BytesIO(response.content))
    assert sorted(tar.getnames()) == sorted(["blobs/acct/code/snap", "blobs/acct/code/snap/train.py",
                                             "blobs/acct/data/in", "blobs/acct/data/in/greeting.txt",
                                             f"{JOB}/outputs"])
    assert b"PRIVATE KEY" not in response.content


@pytest.mark.parametrize("headers", [
    {}, {"Authorization": "Bearer nope"}, "other node's", "management",
], ids=["none", "garbage", "other-node", "management"])
def test_anything_but_the_nodes_own_token_is_refused(client, secret, broker, data, token, headers):
    _running(broker, _attempt())
    headers = {"other node's": _auth(secret, OTHER), "management": {"Authorization": f"Bearer {token}"}}.get(
        headers, headers) if isinstance(headers, str) else headers
    for method, path, body in (("GET", FILES, None), ("PUT", FILES, _tar({f"{JOB}/outputs/x": b"x"})),
                               ("POST", f"{FILES}/log", b"line\n")):
        params = {**_rank(), **({"offset": 0} if path.endswith("/log") else {})}
        response = client.request(method, path, params=params, headers=headers, content=body)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["error"]["code"] == "InvalidAuthenticationToken"
    assert not (data / JOB / "outputs" / "x").exists()


def test_a_rank_another_node_claimed_is_forbidden(client, secret, broker, data):
    _running(broker, _attempt(), node=OTHER)
    response = client.get(FILES, params=_rank(), headers=_auth(secret))
    assert response.status_code == 403 and response.json()["error"]["target"] == "rank"


def test_a_stale_attempts_late_upload_and_log_are_refused_and_change_nothing(client, secret, broker, data):
    _running(broker, _attempt(1))
    protocol.set_current(broker, JOB_KEY, 2)  # requeued: attempt 2 is current now
    (data / JOB / "outputs" / "result.txt").write_text("attempt 2's")
    for method, path, body, extra in (("PUT", FILES, _tar({f"{JOB}/outputs/result.txt": b"attempt 1's"}), {}),
                                      ("POST", f"{FILES}/log", b"late line\n", {"offset": 0}),
                                      ("GET", FILES, None, {})):
        response = client.request(method, path, params={**_rank(1), **extra}, headers=_auth(secret), content=body)
        assert response.status_code == 409, response.text
        assert response.json()["error"]["code"] == "StaleAttempt"
    assert (data / JOB / "outputs" / "result.txt").read_text() == "attempt 2's"
    assert not (data / JOB / "user_logs" / "std_log.txt").exists()


def test_an_upload_that_goes_stale_midway_stops_before_its_next_file(client, secret, broker, data, monkeypatch):
    _running(broker, _attempt())
    answers = iter([True, True, False])  # the route's check, the first file's, then requeued
    monkeypatch.setattr(protocol, "is_current", lambda *_: next(answers))
    body = _tar({f"{JOB}/outputs/a.txt": b"a", f"{JOB}/outputs/b.txt": b"b"})
    response = client.put(FILES, params=_rank(), headers=_auth(secret), content=body)
    assert response.status_code == 409 and response.json()["error"]["code"] == "StaleAttempt"
    assert (data / JOB / "outputs" / "a.txt").exists() and not (data / JOB / "outputs" / "b.txt").exists()


def test_outputs_sent_back_land_in_the_writable_mounts(client, secret, broker, data):
    _running(broker, _attempt())
    body = _tar({f"{JOB}/outputs/model/weights.bin": b"w" * 100, f"{JOB}/outputs/result.txt": b"ok"})
    response = client.put(FILES, params=_rank(), headers=_auth(secret), content=body)
    assert response.status_code == 200, response.text
    assert response.json() == {"written": 102}
    assert (data / JOB / "outputs" / "result.txt").read_text() == "ok"


@pytest.mark.parametrize("files, links", [
    ({"ca/secret.key": b"overwritten"}, None),
    ({"blobs/acct/data/in/greeting.txt": b"changed input"}, None),
    ({f"{JOB}/outputs/../../../../../ca/secret.key": b"overwritten"}, None),
    ({f"/{JOB}/outputs/abs": b"x"}, None),
    ({}, {f"{JOB}/outputs/escape": "/etc/passwd"}),
    ({}, {f"{JOB}/outputs/ca": "../../../../ca"}),
], ids=["outside", "read-only-input", "dotdot", "absolute", "symlink", "relative-link"])
def test_an_upload_outside_the_writable_mounts_or_with_links_is_refused(client, secret, broker, data, files, links):
    _running(broker, _attempt())
    response = client.put(FILES, params=_rank(), headers=_auth(secret), content=_tar(files, links))
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "PathEscape"
    assert (data / "ca/secret.key").read_text() == "PRIVATE KEY"
    assert (data / "blobs/acct/data/in/greeting.txt").read_text() == "hello"
    assert sorted(p.name for p in (data / JOB / "outputs").iterdir()) == []


def test_a_planted_link_where_an_output_goes_is_replaced_not_written_through(client, secret, broker, data):
    _running(broker, _attempt())
    (data / JOB / "outputs" / "result.txt").symlink_to(data / "ca" / "secret.key")
    response = client.put(FILES, params=_rank(), headers=_auth(secret),
                          content=_tar({f"{JOB}/outputs/result.txt": b"ok"}))
    assert response.status_code == 200, response.text
    assert (data / "ca/secret.key").read_text() == "PRIVATE KEY"
    assert (data / JOB / "outputs" / "result.txt").read_text() == "ok"


def test_an_upload_past_the_attempts_disk_limit_is_refused(client, secret, broker, data):
    _running(broker, _attempt())
    body = _tar({f"{JOB}/outputs/big.bin": b"x" * (80 << 10)})
    response = client.put(FILES, params=_rank(), headers=_auth(secret), content=body)
    assert response.status_code == 413, response.text
    assert not (data / JOB / "outputs" / "big.bin").exists()


def test_the_log_is_appended_once_however_often_a_chunk_is_sent(client, secret, broker, data):
    _running(broker, _attempt())
    log = f"{FILES}/log"

    def send(offset: int, body: bytes):
        return client.post(log, params={**_rank(), "offset": offset}, headers=_auth(secret), content=body)

    assert send(0, b"hello\n").json() == {"held": 6}
    assert send(0, b"hello\nworld\n").json() == {"held": 12}  # sent again with more: only the new bytes
    assert send(6, b"world\n").json() == {"held": 12}
    gap = send(100, b"later\n")
    assert gap.status_code == 409 and gap.json()["error"]["target"] == "offset"
    assert (data / JOB / "user_logs" / "std_log.txt").read_bytes() == b"hello\nworld\n"


def test_the_node_routes_are_not_in_the_openapi_schema(client):
    assert not any(path.startswith("/_emulator/nodes") for path in client.get("/openapi.json").json()["paths"])


def test_a_request_without_its_rank_is_a_bad_request_naming_the_field(client, secret, broker, data):
    response = client.get(FILES, params={"job": JOB_KEY, "attempt": 1}, headers=_auth(secret))
    assert response.status_code == 400, response.text
    assert response.json()["error"]["target"] == "rank"


def test_what_the_rank_removed_from_its_outputs_is_removed_from_the_workspace(client, secret, broker, data):
    _running(broker, _attempt())
    (data / JOB / "outputs" / "old").mkdir()
    (data / JOB / "outputs" / "old" / "ckpt-1.pt").write_text("1")
    (data / JOB / "outputs" / "keep.txt").write_text("k")
    response = client.post(f"{FILES}/removed", params=_rank(), headers=_auth(secret),
                           json={"paths": [f"{JOB}/outputs/old", f"{JOB}/outputs/gone-already"]})
    assert response.status_code == 200, response.text
    assert response.json() == {"removed": 1}
    assert sorted(p.name for p in (data / JOB / "outputs").iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("path", [
    "ca/secret.key", "blobs/acct/data/in/greeting.txt", f"{JOB}/outputs/../../../../../ca/secret.key",
    f"/{JOB}/outputs/keep.txt", f"{JOB}/outputs", f"{JOB}/outputs/planted/secret.key",
], ids=["outside", "read-only-input", "dotdot", "absolute", "the-mount-itself", "through-a-planted-link"])
def test_a_removal_outside_the_writable_mounts_changes_nothing(client, secret, broker, data, path):
    _running(broker, _attempt())
    (data / JOB / "outputs" / "keep.txt").write_text("k")
    (data / JOB / "outputs" / "planted").symlink_to(data / "ca")
    response = client.post(f"{FILES}/removed", params=_rank(), headers=_auth(secret), json={"paths": [path]})
    assert response.status_code in (200, 400, 403), response.text
    assert response.status_code != 200 or response.json() == {"removed": 0}
    assert (data / "ca/secret.key").read_text() == "PRIVATE KEY"
    assert (data / "blobs/acct/data/in/greeting.txt").read_text() == "hello"
    assert (data / JOB / "outputs" / "keep.txt").read_text() == "k"


def test_a_stale_attempts_removal_is_refused(client, secret, broker, data):
    _running(broker, _attempt())
    (data / JOB / "outputs" / "keep.txt").write_text("k")
    protocol.set_current(broker, JOB_KEY, 2)
    response = client.post(f"{FILES}/removed", params=_rank(), headers=_auth(secret),
                           json={"paths": [f"{JOB}/outputs/keep.txt"]})
    assert response.status_code == 409 and response.json()["error"]["code"] == "StaleAttempt"
    assert (data / JOB / "outputs" / "keep.txt").exists()
