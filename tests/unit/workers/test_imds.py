"""The node's IMDS refuses bodies past its limit before reading them, and bad lengths, and touches nothing."""

import http.client

import pytest
import redis

from emulator.workers import imds

URL = f"{imds.PATH}?api-version=2020-07-01"


@pytest.fixture
def server():
    broker = redis.Redis(host="127.0.0.1", port=1)  # nothing listens: any use of it would fail the request
    running = imds.serve(broker, "node-0", port=0, host="127.0.0.1")
    yield running.server_address
    running.shutdown()
    running.server_close()


def post(address, body: bytes, length: str | None = None) -> tuple[int, str]:
    connection = http.client.HTTPConnection(*address, timeout=10)
    try:
        connection.putrequest("POST", URL)
        connection.putheader("Metadata", "true")
        connection.putheader("Content-Length", length if length is not None else str(len(body)))
        connection.endheaders()
        if length is None:
            connection.send(body)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_a_body_over_the_limit_is_refused_unread_with_413_naming_it(server):
    status, text = post(server, b"", length=str(imds.MAX_BODY + 1))  # announced, never sent
    assert status == 413
    assert str(imds.MAX_BODY) in text and "error" in text


def test_a_negative_or_unreadable_length_is_a_bad_request(server):
    assert post(server, b"", length="-5")[0] == 400
    assert post(server, b"", length="lots")[0] == 400


def test_a_body_within_the_limit_is_read_and_checked(server):
    status, text = post(server, b'{"StartRequests": "nope"}')
    assert status == 400 and "Bad request" in text
