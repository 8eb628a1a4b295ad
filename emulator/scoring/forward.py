"""A minimal HTTP/1.1 client for the router's one hop to a model server: a request out, a response back.

A general client (httpx) costs the router about a millisecond of CPU per request; this costs a tenth of that,
which is most of the latency budget of an endpoint on a small machine. It keeps idle connections per instance
when the server allows (the inference server's gunicorn closes each one, so mostly it does not).
"""

import asyncio
from dataclasses import dataclass, field

MAX_IDLE = 16  # idle connections kept per instance


class Unreachable(Exception):
    """The instance refused or dropped the connection before answering: another instance may."""


@dataclass
class Response:
    status: int
    headers: dict[bytes, bytes]
    body: bytes


@dataclass
class Pool:
    idle: dict[str, list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = field(default_factory=dict)

    async def request(self, address: str, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes,
                      timeout: float) -> Response:
        """`timeout` bounds the whole exchange (asyncio.TimeoutError past it)."""
        return await asyncio.wait_for(self._exchange(address, method, path, headers, body), timeout)

    async def _exchange(self, address: str, method: str, path: str, headers: list[tuple[bytes, bytes]],
                        body: bytes) -> Response:
        reader, writer = await self._connection(address)
        try:
            head = [f"{method} /{path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {len(body)}\r\n".encode()]
            head += [name + b": " + value + b"\r\n" for name, value in headers]
            writer.write(b"".join(head) + b"\r\n" + body)
            response, reusable = await _read_response(reader)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            writer.close()
            raise Unreachable(f"{address}: {exc!r}") from exc
        except BaseException:
            writer.close()
            raise
        idle = self.idle.setdefault(address, [])
        if reusable and len(idle) < MAX_IDLE:
            idle.append((reader, writer))
        else:
            writer.close()
        return response

    async def _connection(self, address: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        idle = self.idle.get(address)
        while idle:
            reader, writer = idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        host, _, port = address.rpartition(":")
        try:
            return await asyncio.open_connection(host, int(port))
        except OSError as exc:
            raise Unreachable(f"{address}: {exc!r}") from exc

    def close(self) -> None:
        for connections in self.idle.values():
            for _reader, writer in connections:
                writer.close()
        self.idle.clear()


async def _read_response(reader: asyncio.StreamReader) -> tuple[Response, bool]:
    status_line = await reader.readuntil(b"\r\n")
    version, status = status_line.split(b" ", 2)[:2]
    headers: dict[bytes, bytes] = {}
    while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    keep = headers.get(b"connection", b"").lower() != b"close" and version == b"HTTP/1.1"
    if b"content-length" in headers:
        body = await reader.readexactly(int(headers[b"content-length"]))
    elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = await _chunks(reader)
    else:
        body, keep = await reader.read(), False
    return Response(int(status), headers, body), keep


async def _chunks(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
        parts.append((await reader.readexactly(size + 2))[:-2])
    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, then the blank line that ends the body
        pass
    return b"".join(parts)
