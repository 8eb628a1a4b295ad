"""A folder in blob storage as a job input (https://<account>.blob..., wasbs://, abfss://): listed with blob
storage's List Blobs call, fetched whole into the cache, copied for the job. Here the account is a loopback TLS
server the test names acct.blob.core.windows.net, under a CA of its own."""

import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from emulator import pki
from emulator.domain.jobs import command_job
from tests.service.test_api import API, assert_arm_error
from tests.service.test_external_data import _job, _snapshot, _stored, settings  # noqa: F401 (fixture)
from tests.service.test_jobs import JOBS, job_names, put_job, ready  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("ready")
ACCOUNT = "acct.blob.core.windows.net"
FILES = {"/public/sets/iris/a.csv": b"a\n1\n", "/public/sets/iris/part/b.csv": b"b\n2\n"}
PAGES = {"": (["sets/iris/a.csv", "sets/iris/part"], "2"), "2": (["sets/iris/part/b.csv"], ""),
         "evil": (["sets/evil/../../../outside.csv"], "")}


def _listing(names: list[str], marker: str) -> bytes:
    blobs = "".join(f"<Blob><Name>{n}</Name><Properties><Content-Length>{len(FILES.get('/public/' + n, b''))}"
                    f"</Content-Length></Properties></Blob>" for n in names)
    return (f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Blobs>{blobs}</Blobs>'
            f"<NextMarker>{marker}</NextMarker></EnumerationResults>").encode()


class _Account(BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.hits.append(self.path)
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/public" and query.get("comp") == "list":
            page = "evil" if query.get("prefix") == "sets/evil/" else query.get("marker", "")
            body = _listing(*PAGES[page])
        elif parts.path in FILES:
            body = FILES[parts.path]
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def account(tmp_path, monkeypatch):
    handler = type("Account", (_Account,), {"hits": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    cert, key = pki.issue_server_cert(tmp_path / "ca", [ACCOUNT])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca" / "ca.crt"))
    resolve = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: resolve(
        "127.0.0.1" if host == ACCOUNT else host, *a, **k))
    yield f"https://{ACCOUNT}:{server.server_address[1]}", handler.hits
    server.shutdown()
    server.server_close()


def test_a_blob_storage_folder_is_listed_fetched_once_and_copied(app, client, auth, settings, account):  # noqa: F811
    base, hits = account
    put_job(client, auth, "job-1", _job(f"{base}/public/sets/iris?sv=2024&sig=x", "uri_folder"))
    copy = _snapshot(settings, _stored(app, "job-1")[command_job.RESOLVED_INPUTS]["rows"])
    assert (copy / "a.csv").read_bytes() == b"a\n1\n" and (copy / "part" / "b.csv").read_bytes() == b"b\n2\n"
    assert sorted(p.name for p in copy.iterdir()) == ["a.csv", "part"]  # the folder marker made no file
    listed = [h for h in hits if "comp=list" in h]
    assert len(listed) == 2 and all("sig=x" in h and "prefix=sets%2Firis%2F" in h for h in listed)
    put_job(client, auth, "job-2", _job(f"{base}/public/sets/iris/", "uri_folder"))
    assert len(hits) == 4  # two pages and two files, once: the second job reads the cache
    cache = settings.data_dir / "external-cache"
    assert not [p for p in cache.rglob(".partial-*")]


def test_a_listed_name_climbing_out_of_the_folder_refuses_the_job_and_creates_nothing(
        client, auth, settings, account):  # noqa: F811
    base, _ = account
    response = client.put(f"{JOBS}/bad-job", params=API, headers=auth,
                          json=_job(f"{base}/public/sets/evil", "uri_folder"))
    assert "'..'" in assert_arm_error(response, 400, target="properties.inputs.rows.uri")["message"]
    assert job_names(client, auth, listViewType="All") == []
    assert not (settings.data_dir / "outside.csv").exists()
    assert not [p for p in settings.data_dir.rglob("outside.csv")]
