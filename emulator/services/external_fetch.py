"""The one place the emulator reaches outside the machine: one public file fetched over HTTP(S) into a file, or
read into memory (a blob storage listing).

Bounded every way, since a submit waits for it: a connect and read timeout, a deadline for the whole transfer,
a size cap (checked against Content-Length and while streaming), and at most MAX_REDIRECTS redirects, each
to http or https only (never file:// or anything else). The file appears whole or not at all: it is written
to a temporary name beside its place and renamed there.
"""

import io
import ipaddress
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

MAX_REDIRECTS = 5
CHUNK = 1 << 20


class FetchFailed(Exception):
    """Why the file could not be had; said to the user as is."""


@dataclass(frozen=True)
class Limits:
    timeout_seconds: float  # connect and each read; also the deadline of the whole transfer, times ten
    max_bytes: int
    private_hosts: bool = False  # Azure fetches from its cloud: loopback and private networks are out of its reach


def _public(url: str, limits: Limits) -> None:
    """Refuse a host that is (or resolves to) a loopback, private, link-local or reserved address: the api must
    not be made to read the machine's own services (a metadata endpoint, an admin port) for a job."""
    if limits.private_hosts:
        return
    host = urlsplit(url).hostname or ""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError as exc:
        raise FetchFailed(f"{host} could not be resolved ({exc.strerror or exc})") from exc
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%")[0])
        if not ip.is_global:
            raise FetchFailed(f"{host} is {ip}, a non-public address that Azure ML could not reach; set "
                              "AMLEMU_EXTERNAL_PRIVATE_HOSTS=true to fetch from it")


def _next(response: httpx.Response, url: str) -> str:
    location = response.headers.get("location")
    if not location:
        raise FetchFailed(f"{url} redirects ({response.status_code}) without a Location")
    target = urljoin(url, location)
    if urlsplit(target).scheme.lower() not in ("http", "https"):
        raise FetchFailed(f"{url} redirects to {target[:200]}, which is not http or https")
    return target


def _stream(response: httpx.Response, url: str, out, limits: Limits, deadline: float) -> None:
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limits.max_bytes:
        raise FetchFailed(f"{url} is {int(declared)} bytes, more than the {limits.max_bytes} amlemu fetches "
                          "(AMLEMU_EXTERNAL_MAX_BYTES)")
    size = 0
    for chunk in response.iter_bytes(CHUNK):
        size += len(chunk)
        if size > limits.max_bytes:
            raise FetchFailed(f"{url} is more than the {limits.max_bytes} bytes amlemu fetches "
                              "(AMLEMU_EXTERNAL_MAX_BYTES)")
        if time.monotonic() > deadline:
            raise FetchFailed(f"{url} took longer than {10 * limits.timeout_seconds:.0f} s to download "
                              "(AMLEMU_EXTERNAL_TIMEOUT_SECONDS, times ten)")
        out.write(chunk)


@contextmanager
def _answer(url: str, limits: Limits) -> Iterator[tuple[str, httpx.Response]]:
    """(the URL that answered, its 200 response, unread) after the redirects, each hop checked."""
    try:
        with httpx.Client(timeout=httpx.Timeout(limits.timeout_seconds), follow_redirects=False) as client:
            for _hop in range(MAX_REDIRECTS + 1):
                _public(url, limits)  # each hop: a public URL may redirect to a private one
                with client.stream("GET", url) as response:
                    if response.is_redirect:
                        url = _next(response, url)
                        continue
                    if response.status_code != 200:
                        raise FetchFailed(f"{url} answered {response.status_code} {response.reason_phrase}")
                    yield url, response
                    return
            raise FetchFailed(f"{url} redirects more than {MAX_REDIRECTS} times")
    except httpx.HTTPError as exc:
        raise FetchFailed(f"it could not be fetched ({type(exc).__name__}: {str(exc)[:200] or 'no answer'})") \
            from exc


def read(url: str, limits: Limits) -> bytes:
    """The body at `url`, held in memory (a listing: `limits` bounds it as any fetch)."""
    deadline = time.monotonic() + 10 * limits.timeout_seconds
    body = io.BytesIO()
    with _answer(url, limits) as (final, response):
        _stream(response, final, body, limits, deadline)
    return body.getvalue()


def fetch(url: str, folder: int, name: str, limits: Limits) -> None:
    """Download `url` into the file `name` of the open folder `folder` (replacing it whole)."""
    deadline = time.monotonic() + 10 * limits.timeout_seconds
    partial = f".partial-{uuid.uuid4().hex}"
    try:
        with _answer(url, limits) as (final, response):
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o644, dir_fd=folder)
            with os.fdopen(fd, "wb") as out:
                _stream(response, final, out, limits, deadline)
                out.flush()
                os.fsync(out.fileno())
            os.replace(partial, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError as exc:
        raise FetchFailed(f"it could not be stored ({exc.strerror})") from exc
    finally:
        try:
            os.unlink(partial, dir_fd=folder)
        except FileNotFoundError:
            pass
