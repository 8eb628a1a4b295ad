"""The router's HTTP/1.1 client against a tiny local server: lengths, chunks, close, reuse, refusal, timeout."""

import asyncio

import pytest

from emulator.scoring import forward


async def serve(answers: list[bytes]) -> tuple[asyncio.Server, str, list[int]]:
    """Answers each request with the next canned response; counts connections."""
    connections = []

    async def handle(reader, writer):
        connections.append(1)
        while answers:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            await reader.readexactly(length)
            answer = answers.pop(0)
            if answer == b"hang":
                await asyncio.Event().wait()
            writer.write(answer)
            await writer.drain()
            if b"Connection: close" in answer:
                break
        writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"127.0.0.1:{port}", connections


def run(coroutine):
    return asyncio.run(coroutine)


def test_content_length_and_keep_alive_reuse():
    async def go():
        ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        server, address, connections = await serve([ok, ok])
        pool = forward.Pool()
        first = await pool.request(address, "POST", "score", [(b"content-type", b"application/json")], b"{}", 5)
        second = await pool.request(address, "POST", "score", [], b"{}", 5)
        pool.close()
        server.close()
        return first, second, len(connections)
    first, second, connections = run(go())
    assert (first.status, first.body, first.headers[b"content-type"]) == (200, b"{}", b"application/json")
    assert second.body == b"{}" and connections == 1


def test_chunked_and_connection_close():
    async def go():
        chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                   b"3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n")
        server, address, connections = await serve([chunked])
        pool = forward.Pool()
        response = await pool.request(address, "POST", "score", [], b"", 5)
        idle = len(pool.idle[address])
        server.close()
        return response, idle
    response, idle = run(go())
    assert response.body == b"abcde" and idle == 0


def test_refused_is_unreachable_and_slow_is_a_timeout():
    async def refused():
        server, address, _ = await serve([])
        server.close()
        await server.wait_closed()
        await forward.Pool().request(address, "POST", "score", [], b"", 5)
    with pytest.raises(forward.Unreachable):
        run(refused())

    async def slow():
        server, address, _ = await serve([b"hang"])
        try:
            await forward.Pool().request(address, "POST", "score", [], b"", 0.2)
        finally:
            server.close()
    with pytest.raises(asyncio.TimeoutError):
        run(slow())
