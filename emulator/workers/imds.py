"""The node's Instance Metadata Service, as far as Scheduled Events go: what code on an Azure VM polls at
http://169.254.169.254/metadata/scheduledevents to learn of a coming preemption.

Job containers reach it at $AZUREML_EMU_IMDS_ENDPOINT (this node, by name, on the jobs network): giving
them 169.254.169.254 itself would need a host route for that address, which would hijack the host's own
metadata service on a cloud VM. The controller writes the document to Redis; an acknowledgement goes back
to it as an event. The standard library's threading HTTP server is enough for one small JSON document.
"""

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import redis

from emulator.dispatch import protocol
from emulator.domain.compute import preemption
from emulator.errors import ValidationFailed

PORT, PATH = protocol.IMDS_PORT, protocol.IMDS_PATH
# An acknowledgement is {"StartRequests": [{"EventId": ...}, ...]}: a few hundred bytes. A body past this is
# refused unread, so no caller can make the node hold an arbitrary amount.
MAX_BODY = 64 << 10
log = logging.getLogger("amlemu.imds")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], broker: redis.Redis, node_id: str):
        super().__init__(address, _Handler)
        self.broker, self.node_id = broker, node_id


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def _answer(self, status: int, body: dict | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refused(self) -> bool:
        """Azure's checks, in its order: the path, the Metadata header, the api-version."""
        url = urlsplit(self.path)
        if url.path.rstrip("/") != PATH:
            self._answer(404, {"error": "Not found"})
        elif (self.headers.get("Metadata") or "").lower() != "true":
            self._answer(400, {"error": "Bad request. Required metadata header not specified"})
        elif not parse_qs(url.query).get("api-version"):
            self._answer(400, {"error": "Bad request. api-version was not specified in the request"})
        else:
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if not self._refused():
            self._answer(200, protocol.read_notice(self.server.broker, self.server.node_id)
                         or preemption.document(None))

    def do_POST(self) -> None:  # noqa: N802
        if self._refused():
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0:
                raise ValueError(f"Content-Length {length} is negative")
            if length > MAX_BODY:
                self.close_connection = True  # the body stays unread
                self._answer(413, {"error": f"Request entity too large. The body is {length} bytes; "
                                            f"at most {MAX_BODY} are accepted."})
                return
            raw = self.rfile.read(length)
            events = preemption.start_requests(json.loads(raw or b"null"))
        except (ValueError, ValidationFailed) as exc:
            self._answer(400, {"error": f"Bad request. {getattr(exc, 'message', exc)}"})
            return
        protocol.acknowledge(self.server.broker, self.server.node_id, events)
        log.info("scheduled events acknowledged: %s", ", ".join(events))
        self._answer(200)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the stdlib's name)
        log.debug(format, *args)


def serve(broker: redis.Redis, node_id: str, port: int = PORT, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Start answering in a daemon thread; returns the server (its `server_address` has the real port)."""
    server = _Server((host, port), broker, node_id)
    threading.Thread(target=server.serve_forever, name="imds", daemon=True).start()
    return server
