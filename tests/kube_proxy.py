"""The pod proxy of the stand-in API server (tests/kube_api.py): `/api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy`
and `.../proxy/PATH`, forwarded over HTTP to the pod's IP as kube-apiserver forwards it, which is how the emulator
reaches a model server's pod on a cluster whose network it is not on.

Written from the kube-apiserver's source: the target from pkg/registry/core/pod/strategy.go `ResourceLocation` (the id
split as `name`, `name:port` or `scheme:name:port`, else a 400 `invalid pod request "ID"`; no port: the first declared
containerPort, else the scheme's; the pod's `status.podIPs[0]`, a 400 `address not allowed` when it has none), and
the failure to reach it as kube-apiserver v1.20.2 answered it when recorded (tests/kube_recordings/pod-proxy-refused.json:
a 500 Status with neither reason nor details, `error trying to reach service: ` and Go's wording of the dial's error,
e.g. `dial tcp 10.1.2.3:5001: connect: connection refused`; later releases answer 503 ServiceUnavailable). Its one departure: a loopback pod IP is
allowed (the real one wants a global unicast address), since the unit tests stand a pod's server on 127.x.y.z.
"""

import http.client
import ipaddress
import os
import re
import ssl
from dataclasses import dataclass

PROXY = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/proxy(/.*)?$")
TIMEOUT = 60.0  # seconds; the real proxy has none (a long-running request), a stand-in must not hang a test
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}
NOT_FORWARDED = HOP_BY_HOP | {"host", "authorization", "content-length"}  # the api server's own (its credentials)


class Unreachable(Exception):
    """The pod's address did not answer: Go's wording of why."""


@dataclass(frozen=True)
class Target:
    scheme: str
    ip: str
    port: str

    @property
    def host(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


def split_id(id_: str) -> tuple[str, str, str] | None:
    """(scheme, name, port) of `name`, `name:port` or `scheme:name:port`, as apimachinery's SplitSchemeNamePort."""
    parts = id_.split(":")
    if len(parts) > 3:
        return None
    scheme, name, port = parts if len(parts) == 3 else ("", parts[0], parts[1] if len(parts) == 2 else "")
    return (scheme, name, port) if name and scheme in ("", "http", "https") else None


def target(pod: dict, scheme: str, port: str) -> Target | None:
    """Where the request goes, or None when the pod has no address the proxy may dial (`address not allowed`)."""
    if not port:
        port = next((str(c["ports"][0]["containerPort"]) for c in pod["spec"]["containers"] if c.get("ports")), "")
    ips = (pod.get("status") or {}).get("podIPs") or []
    try:
        ip = ipaddress.ip_address(ips[0]["ip"] if ips else "")
    except ValueError:
        return None
    if ip.is_unspecified or ip.is_multicast or ip.is_link_local or ip == ipaddress.ip_address("255.255.255.255"):
        return None
    scheme = scheme or "http"
    return Target(scheme, str(ip), port or ("443" if scheme == "https" else "80"))


def forward(to: Target, method: str, path: str, headers: dict[str, str], body: bytes,
            timeout: float = TIMEOUT) -> tuple[int, list[tuple[str, str]], bytes]:
    """The pod's answer, whole: its status, its headers but the hop-by-hop ones and its length, its body. A pod's
    HTTPS certificate is not checked, as the API server's proxy transport does not."""
    if not to.port.isdigit():  # a port's name: Go would look it up in /etc/services, no pod's business
        raise Unreachable(f"dial tcp: lookup tcp/{to.port}: unknown port")
    connection = (http.client.HTTPSConnection(to.ip, int(to.port), timeout=timeout,
                                              context=ssl._create_unverified_context())
                  if to.scheme == "https" else http.client.HTTPConnection(to.ip, int(to.port), timeout=timeout))
    try:
        try:
            connection.connect()
        except OSError as exc:
            raise Unreachable(f"dial tcp {to.host}: " + (
                "i/o timeout" if isinstance(exc, TimeoutError) else
                "connect: " + (os.strerror(exc.errno).lower() if exc.errno else str(exc)))) from exc
        local = "{}:{}".format(*connection.sock.getsockname()[:2])
        try:
            sent = {key: value for key, value in headers.items() if key.lower() not in NOT_FORWARDED}
            connection.request(method, path, body=body or None, headers=sent)
            answer = connection.getresponse()
            returned = [(k, v) for k, v in answer.getheaders() if k.lower() not in HOP_BY_HOP | {"content-length"}]
            return answer.status, returned, answer.read()
        except http.client.RemoteDisconnected as exc:
            raise Unreachable("EOF") from exc
        except OSError as exc:
            raise Unreachable(f"read tcp {local}->{to.host}: " + (
                "i/o timeout" if isinstance(exc, TimeoutError) else
                "read: " + (os.strerror(exc.errno).lower() if exc.errno else str(exc)))) from exc
        except http.client.HTTPException as exc:
            raise Unreachable(f"malformed HTTP response: {exc}") from exc
    finally:
        connection.close()
