"""Job inputs outside the workspace, in-process: served from the mirror, fetched from a server on 127.0.0.1 (and
cached), or refused before anything is created, naming the URL and the mirror command. No traffic leaves the
machine: fetching is off unless a test turns it on against its own loopback server."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from emulator.domain.jobs import command_job
from emulator.store.tables import Job
from tests.service.test_api import API, assert_arm_error, cluster, put_cluster
from tests.service.test_jobs import JOBS, job_body, job_names, put_job, ready  # noqa: F401 (fixture)
from tests.waiting import wait_until

ROWS = b"a,b\n1,2\n"
TARGET = "properties.inputs.rows.uri"
pytestmark = pytest.mark.usefixtures("ready")


class _Site(BaseHTTPRequestHandler):
    """A tiny web server: a file, redirects good and bad, a large file, a missing one."""
    hits: list[str]
    released: threading.Event

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.hits.append(self.path)
        path = self.path.split("?")[0]
        if path == "/slow/rows.csv" and not self.released.wait(10):  # answers once the test lets it
            self.send_error(503)
            return
        redirects = {"/moved.csv": "/data/rows.csv", "/to-file.csv": "file:///etc/passwd",
                     "/loop.csv": "/loop.csv"}
        if path in redirects:
            self.send_response(302)
            self.send_header("Location", redirects[path])
            self.end_headers()
        elif path in ("/data/rows.csv", "/big.csv", "/slow/rows.csv"):
            body = b"x" * 5000 if path == "/big.csv" else ROWS
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    handler = type("Site", (_Site,), {"hits": [], "released": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.hits, handler.released
    handler.released.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def tls_site(site, tmp_path, monkeypatch):
    """The same site over https, under a CA of the test's own, which the fetch trusts as it would a public one
    (SSL_CERT_FILE, as a machine behind a TLS-inspecting proxy sets it)."""
    import ssl

    from emulator import pki
    base, hits, released = site
    handler = type("TlsSite", (_Site,), {"hits": hits, "released": released})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    cert, key = pki.issue_server_cert(tmp_path / "ca", ["127.0.0.1"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca" / "ca.crt"))
    yield f"https://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


@pytest.fixture
def settings(settings, request):
    """Fetching on, from loopback too (only the site fixture's loopback server is ever named), a small size cap;
    a test's parameter (indirect) may say otherwise."""
    return settings.model_copy(update={"external_fetch": True, "external_max_bytes": 1000,
                                       "external_timeout_seconds": 5, "external_private_hosts": True,
                                       **getattr(request, "param", {})})


def _job(uri: str, input_type: str = "uri_file", mode: str = "ReadOnlyMount") -> dict:
    return job_body(command="cat ${{inputs.rows}}",
                    inputs={"rows": {"jobInputType": input_type, "uri": uri, "mode": mode}})


def _stored(app, name: str) -> dict:
    with app.state.context.store.transaction() as repo:
        return next(j.body for j in repo.session.query(Job).all() if j.name == name)


def _snapshot(settings, datastore_uri: str) -> Path:
    path = datastore_uri.split("/paths/", 1)[1]
    blobs = [p for p in (settings.data_dir / "blobs").glob("*/azureml-blobstore-*")]
    assert len(blobs) == 1
    return blobs[0] / path


def _mirror(settings, key: str) -> Path:
    path = settings.data_dir / "mirror" / key
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_a_mirrored_file_is_copied_into_the_datastore_and_the_job_shows_its_url(app, client, auth, settings):
    _mirror(settings, "example.com/data/rows.csv").write_bytes(ROWS)
    shown = put_job(client, auth, "job-1", _job("https://example.com/data/rows.csv"))
    assert shown["properties"]["inputs"]["rows"]["uri"] == "https://example.com/data/rows.csv"
    resolved = _stored(app, "job-1")[command_job.RESOLVED_INPUTS]["rows"]
    assert resolved.startswith("azureml://datastores/workspaceblobstore/paths/.amlemu-external/")
    assert resolved.endswith("/rows.csv") and _snapshot(settings, resolved).read_bytes() == ROWS
    # The job reads what was there at submit: a later mirror makes a copy of its own.
    _mirror(settings, "example.com/data/rows.csv").write_bytes(b"changed\n")
    put_job(client, auth, "job-2", _job("https://example.com/data/rows.csv"))
    assert _snapshot(settings, resolved).read_bytes() == ROWS
    assert _snapshot(settings, _stored(app, "job-2")[command_job.RESOLVED_INPUTS]["rows"]).read_bytes() \
        == b"changed\n"


@pytest.mark.parametrize("uri", ["wasbs://public@acct.blob.core.windows.net/sets/iris",
                                 "abfss://public@acct.dfs.core.windows.net/sets/iris/",
                                 "https://acct.blob.core.windows.net/public/sets/iris"])
def test_a_storage_folder_is_mirrored_once_for_every_way_of_writing_it(app, client, auth, settings, uri):
    folder = _mirror(settings, "acct.blob.core.windows.net/public/sets/iris")
    (folder / "part").mkdir(parents=True)
    (folder / "part" / "a.csv").write_bytes(ROWS)
    put_job(client, auth, "job-1", _job(uri, "uri_folder"))
    copy = _snapshot(settings, _stored(app, "job-1")[command_job.RESOLVED_INPUTS]["rows"])
    assert (copy / "part" / "a.csv").read_bytes() == ROWS


def test_a_file_is_fetched_once_then_read_from_the_cache(app, client, auth, settings, site):
    base, hits, _ = site
    put_job(client, auth, "job-1", _job(f"{base}/moved.csv?sig=x"))
    assert hits == ["/moved.csv?sig=x", "/data/rows.csv"]
    host = base.removeprefix("http://")
    assert (settings.data_dir / "external-cache" / host / "moved.csv").read_bytes() == ROWS
    assert _snapshot(settings, _stored(app, "job-1")[command_job.RESOLVED_INPUTS]["rows"]).read_bytes() == ROWS
    put_job(client, auth, "job-2", _job(f"{base}/moved.csv"))
    assert len(hits) == 2  # cached: no second fetch
    assert not list((settings.data_dir / "external-cache" / host).glob(".partial-*"))


def test_an_https_file_is_fetched_and_its_certificate_checked(app, client, auth, settings, tls_site, monkeypatch):
    base, hits = tls_site
    put_job(client, auth, "job-1", _job(f"{base}/moved.csv"))
    assert hits == ["/moved.csv", "/data/rows.csv"]
    assert _snapshot(settings, _stored(app, "job-1")[command_job.RESOLVED_INPUTS]["rows"]).read_bytes() == ROWS
    monkeypatch.delenv("SSL_CERT_FILE")  # a certificate no trusted CA signed: refused, nothing created
    response = client.put(f"{JOBS}/job-2", params=API, headers=auth, json=_job(f"{base}/data/other.csv"))
    assert "CERTIFICATE_VERIFY_FAILED" in assert_arm_error(response, 400, target="properties.inputs.rows.uri")["message"]
    assert job_names(client, auth) == ["job-1"]


def test_a_fetch_holds_no_lock_on_the_store(client, auth, site):
    """While a submit waits for a slow server, other writes go on (the fetch runs before the transaction)."""
    base, hits, released = site
    submitted = {}
    submit = threading.Thread(target=lambda: submitted.update(response=client.put(
        f"{JOBS}/job-1", params=API, headers=auth, json=_job(f"{base}/slow/rows.csv"))))
    submit.start()
    wait_until(lambda: "/slow/rows.csv" in hits, timeout=10, message="the fetch to start")
    put_cluster(client, auth, "other", cluster(max_nodes=1))  # would wait for the fetch if it held the lock
    released.set()
    submit.join(timeout=30)
    assert submitted["response"].status_code == 201, submitted["response"].text


@pytest.mark.parametrize(("path", "why"), [("/missing.csv", "answered 404"),
                                           ("/to-file.csv", "not http or https"),
                                           ("/loop.csv", "redirects more than 5 times"),
                                           ("/big.csv", "more than the 1000")])
def test_a_fetch_that_fails_refuses_the_job_and_creates_nothing(client, auth, settings, site, path, why):
    base, _, _ = site
    response = client.put(f"{JOBS}/bad-job", params=API, headers=auth, json=_job(f"{base}{path}"))
    message = assert_arm_error(response, 400, target=TARGET)["message"]
    assert why in message and f"amlemu data mirror '{base}{path}'" in message
    assert job_names(client, auth, listViewType="All") == []
    host = base.removeprefix("http://")
    assert [p.name for p in (settings.data_dir / "external-cache" / host).iterdir()] == []
    assert not list(settings.data_dir.glob("blobs/*/*/.amlemu-external/*"))


def test_an_unreachable_server_is_refused_within_the_timeout(client, auth):
    with socket_closed() as port:
        response = client.put(f"{JOBS}/bad-job", params=API, headers=auth,
                              json=_job(f"http://127.0.0.1:{port}/rows.csv"))
    message = assert_arm_error(response, 400, target=TARGET)["message"]
    assert "could not be fetched" in message and "amlemu data mirror" in message


class socket_closed:  # noqa: N801 (used as a context manager)
    """A loopback port nothing listens on."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()


@pytest.mark.parametrize("settings", [{"external_private_hosts": False}], indirect=True)  # Azure's reach
def test_by_default_the_machines_own_addresses_are_not_fetched_as_azure_could_not_reach_them(client, auth, site):
    """A job asking the api to read loopback (or a private, link-local, metadata address) is refused before any
    request is sent."""
    base, hits, _ = site
    for url in (f"{base}/data/rows.csv", "http://169.254.169.254/metadata/instance", "http://10.0.0.1/x.csv",
                "http://[::1]/x.csv"):
        response = client.put(f"{JOBS}/bad-job", params=API, headers=auth, json=_job(url))
        assert_arm_error(response, 400, target=TARGET)
        assert job_names(client, auth, listViewType="All") == []
    assert hits == []
    message = client.put(f"{JOBS}/bad-job", params=API, headers=auth,
                         json=_job(f"{base}/data/rows.csv")).json()["error"]["message"]
    assert "AMLEMU_EXTERNAL_PRIVATE_HOSTS" in message
