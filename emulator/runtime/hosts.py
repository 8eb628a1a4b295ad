"""Remote Docker hosts (attached compute, issue 23): their engines reached over SSH with the address, port, user and
key (or password) Azure's attach carries, or named directly (`tcp://host:2375`, an engine listening on a private
network). Checked before an attach is accepted; a DockerRuntime over the host's engine once attached.

The key never touches ~/.ssh, the SSH agent or a file: paramiko gets it in memory (docker-py's own SSH adapter reads
~/.ssh/config and the default keys, so ours replaces its client). No message here carries a secret."""

import base64
import io
import socket
import urllib.parse
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field

import docker
import paramiko
import urllib3
from docker.errors import APIError, DockerException, ImageNotFound
from docker.transport.sshconn import SSHHTTPAdapter
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection

from emulator.runtime.docker import DockerRuntime

CONNECT_SECONDS = 8  # reaching the port, then the SSH handshake and login: a host that takes longer is unreachable
# Channels (one per pooled HTTP connection) a client keeps open: sshd allows 10 sessions per connection (MaxSessions).
POOLED_CHANNELS = 4
# A host cut off the network sends nothing back, not even a reset: a call waiting for its answer (or a copy sending
# to it) would wait out its read timeout, or for ever for a wait on a container, and the controller's pass with it.
# The kernel's own probes end such a connection within seconds, whatever the call on it: keepalive after 2 s idle,
# every 2 s, 3 unanswered; and data unacknowledged for 8 s (TCP_USER_TIMEOUT, in ms). A live host answers probes.
KEEPALIVE = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1), (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 2),
             (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 2), (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3),
             (socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, CONNECT_SECONDS * 1000)]


@dataclass(frozen=True)
class HostAccess:
    """How to reach one host. `engine_url` names the engine directly (tcp://...); otherwise it is reached over SSH."""
    address: str
    ssh_port: int = 22
    username: str | None = None
    private_key: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    engine_url: str | None = None
    host_key: str | None = None  # "ssh-ed25519 AAAA...": the host's SSH key seen at attach, required from then on


@dataclass(frozen=True)
class HostFacts:
    """What `docker info` says of the host: what attached compute may use (no size limits beyond these)."""
    cpus: int
    memory_bytes: int
    engine_version: str
    os: str
    host_key: str | None = None  # the SSH key the host showed (None for an engine named by URL)


class ImageMissing(Exception):
    """An image to copy to a host that the emulator's own engine does not have (not built yet)."""


class HostCheckFailed(Exception):
    """`part` says which of the attach's settings is wrong: address, sshPort, credentials, privateKey or engine."""

    def __init__(self, part: str, message: str):
        super().__init__(message)
        self.part = part


# What a host that stopped answering raises, from its SSH transport or its engine: its callers treat it as lost.
# urllib3's own errors escape requests from a streamed answer read on (an image copy's progress, events): a probe's
# ETIMEDOUT there is a TimeoutError, which urllib3 takes for a read timeout.
UNREACHABLE = (HostCheckFailed, DockerException, paramiko.SSHException, OSError, EOFError, urllib3.exceptions.HTTPError)


def private_key(text: str) -> paramiko.PKey:
    """The key in OpenSSH or PEM form (RSA, ECDSA or Ed25519); HostCheckFailed("privateKey") otherwise."""
    for kind in (paramiko.RSAKey, paramiko.ECDSAKey, paramiko.Ed25519Key):
        try:
            return kind.from_private_key(io.StringIO(text))
        except paramiko.PasswordRequiredException as exc:
            raise HostCheckFailed("privateKey", "the private key is protected by a passphrase; attach takes a key "
                                                "without one") from exc
        except (paramiko.SSHException, ValueError, IndexError, TypeError):
            continue
    raise HostCheckFailed("privateKey", "the private key is not an RSA, ECDSA or Ed25519 private key in OpenSSH or "
                                        "PEM form")


class _KeyedSSHAdapter(SSHHTTPAdapter):
    """docker-py's SSH transport (`docker system dial-stdio` on the host, as `docker -H ssh://` runs it) with a
    paramiko client of ours: the given key or password only, no ~/.ssh, no agent."""

    def __init__(self, access: HostAccess, timeout: float | None):
        self._access = access
        super().__init__(f"ssh://{access.address}:{access.ssh_port}", timeout=timeout or 60,
                         max_pool_size=POOLED_CHANNELS)

    def get_connection(self, url, proxies=None):
        # docker-py keeps a pool per request URL, each holding its channels open: past ten URLs sshd refuses more
        # sessions. One pool for the host.
        return super().get_connection("http+docker://ssh", proxies)

    def _create_paramiko_client(self, base_url):
        access = self._access
        self.ssh_client = paramiko.SSHClient()
        if access.host_key:  # pinned at attach: another key is another machine (or someone in between)
            kind, _, data = access.host_key.partition(" ")
            name = access.address if access.ssh_port == 22 else f"[{access.address}]:{access.ssh_port}"
            self.ssh_client.get_host_keys().add(name, kind, paramiko.PKey.from_type_string(kind, base64.b64decode(data)))
            self.ssh_client.set_missing_host_key_policy(paramiko.RejectPolicy())
        else:  # the attach itself: Azure's takes no host key either, so the first one seen is trusted and kept
            self.ssh_client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        self.ssh_params = {"hostname": access.address, "port": access.ssh_port, "username": access.username,
                           "pkey": private_key(access.private_key) if access.private_key else None,
                           "password": access.password, "look_for_keys": False, "allow_agent": False,
                           "timeout": CONNECT_SECONDS, "banner_timeout": CONNECT_SECONDS,
                           "auth_timeout": CONNECT_SECONDS}

    def _connect(self):
        super()._connect()  # one TCP connection to the host, every channel (pooled HTTP connection) over it
        sock = self.ssh_client.get_transport().sock
        for level, option, value in KEEPALIVE:
            sock.setsockopt(level, option, value)


class _KeepaliveAdapter(HTTPAdapter):
    """requests' adapter for an engine named by tcp:// URL, its connections with the KEEPALIVE options."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, socket_options=HTTPConnection.default_socket_options + KEEPALIVE, **kwargs)


def engine_client(access: HostAccess, timeout: float | None = 120) -> docker.DockerClient:
    """A client of the host's engine (`timeout` None: no read timeout, for waits on containers)."""
    if access.engine_url:
        client = docker.DockerClient(base_url=access.engine_url, timeout=timeout)
        client.api.mount("http://", _KeepaliveAdapter())
        return client
    adapter = _KeyedSSHAdapter(access, timeout)  # connects and logs in now: its errors are the caller's
    # What APIClient does itself for an ssh:// URL, with our adapter: version given, so nothing is asked yet.
    client = docker.DockerClient(base_url="tcp://127.0.0.1:9", version="1.41", timeout=timeout)
    api = client.api
    api._custom_adapter = adapter
    api.mount("http+docker://ssh", adapter)
    api._unmount("http://", "https://")
    api.base_url = "http+docker://ssh"
    return client


def _reach(access: HostAccess) -> None:
    """The port answers: HostCheckFailed naming the address (no such host, no route) or the port (refused)."""
    host, port = (access.address, access.ssh_port)
    if access.engine_url:
        parsed = urllib.parse.urlparse(access.engine_url)
        host, port = parsed.hostname, parsed.port
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise HostCheckFailed("address", f"the host {host!r} cannot be resolved") from exc
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except ConnectionRefusedError as exc:
        raise HostCheckFailed("sshPort" if not access.engine_url else "engine",
                              f"nothing listens on port {port} of {host}") from exc
    except OSError as exc:
        raise HostCheckFailed("address", f"{host} cannot be reached on port {port} ({exc.strerror or 'timed out'})")\
            from exc


def connect(access: HostAccess, timeout: float | None = 120) -> docker.DockerClient:
    """A client of the host's engine, its answer checked: HostCheckFailed says which setting is wrong."""
    _reach(access)
    try:
        client = engine_client(access, timeout)
    except paramiko.BadHostKeyException as exc:
        raise HostCheckFailed("hostKey", f"{access.address} shows another SSH host key than when it was attached")\
            from exc
    except paramiko.AuthenticationException as exc:
        raise HostCheckFailed("credentials", f"{access.address} refused the login of {access.username!r} with the "
                                             "given key or password") from exc
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise HostCheckFailed("sshPort", f"port {access.ssh_port} of {access.address} does not speak SSH") from exc
    try:
        client.ping()
    except (DockerException, paramiko.SSHException, OSError) as exc:
        client.close()
        raise HostCheckFailed("engine", "the host's Docker engine does not answer (is Docker installed and running, "
                                        "and may the user run `docker`?)") from exc
    return client


def check(access: HostAccess) -> HostFacts:
    """Reachable, login accepted, engine answering: what the host offers. HostCheckFailed otherwise."""
    with closing(connect(access)) as client:
        try:
            info = client.info()
        except (DockerException, paramiko.SSHException, OSError) as exc:
            raise HostCheckFailed("engine", "the host's Docker engine does not answer `docker info`") from exc
        adapter = getattr(client.api, "_custom_adapter", None)
        seen = adapter.ssh_client.get_transport().get_remote_server_key() if isinstance(adapter, _KeyedSSHAdapter) \
            else None
    return HostFacts(cpus=int(info.get("NCPU") or 1), memory_bytes=int(info.get("MemTotal") or 0),
                     engine_version=str(info.get("ServerVersion") or ""), os=str(info.get("OperatingSystem") or ""),
                     host_key=f"{seen.get_name()} {seen.get_base64()}" if seen else None)


def _has(client: docker.DockerClient, image_id: str) -> bool:
    try:
        client.images.get(image_id)
        return True
    except ImageNotFound:
        return False


def copy_image(source: docker.DockerClient, target: docker.DockerClient, image: str) -> list[str]:
    """Make `image` (a tag or id of the source engine) exist on the target with the same id and tags, copying it
    (docker save | docker load, streamed) only when the target lacks that id. What it added there: [the image id]
    when it copied it, the tags it put on an image the target had, or nothing."""
    local = source.images.get(image)
    if _has(target, local.id):
        there = target.images.get(local.id)
        missing = [tag for tag in local.tags if tag not in there.tags]
        for tag in missing:  # same content under another name: tag it, nothing to copy
            there.tag(tag)
        return missing
    chunks: Iterator[bytes] = source.api.get_image(image if local.tags else local.id)
    for _status in target.api.load_image(chunks):
        pass
    if not _has(target, local.id):
        raise DockerException(f"loading {image} into the host's engine did not give image {local.id}")
    return [local.id]


class HostRuntime(DockerRuntime):
    """The DockerRuntime of one attached host's engine: everything the emulator runs there goes through it."""

    def __init__(self, access: HostAccess):
        self.access = access
        client = connect(access)
        super().__init__(client, streams=engine_client(access, timeout=None).api)

    def ensure_image(self, source: docker.DockerClient, image: str) -> list[str]:
        """`image` of the local engine made present here: what that added (copy_image), for the compute to record
        and its detach to remove. ImageMissing when the local engine lacks it."""
        try:
            return copy_image(source, self.client, image)
        except ImageNotFound as exc:
            if _has(source, image):  # the host's own engine said so mid-copy: that host is in trouble
                raise
            raise ImageMissing(f"{image} is not on the emulator's engine to copy") from exc

    def answers(self) -> None:
        """The engine's ping, waited for CONNECT_SECONDS at most; raises (one of UNREACHABLE) when it does not come: a
        host that hangs (its packets dropped, not refused) is found lost at once, not after the client's timeout,
        and the controller's pass goes on without it."""
        api = self.client.api
        api.get(f"{api.base_url}/_ping", timeout=CONNECT_SECONDS).raise_for_status()

    def remove_image(self, ref: str) -> None:
        """What copy_image added here: an image by its id (each of its tags first: an image under two names is
        refused by id, 409), or a tag. Kept when a container still uses it (409), or gone already."""
        try:
            names = self.client.images.get(ref).tags if ref.startswith("sha256:") else []
        except ImageNotFound:
            return
        for name in [*names, ref]:  # the last name gone takes the image with it, unless a container uses it
            try:
                self.client.images.remove(name, force=False, noprune=False)
            except ImageNotFound:
                pass
            except APIError as exc:
                if exc.status_code != 409:
                    raise
