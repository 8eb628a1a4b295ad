"""The router's view of the store: each endpoint's credentials, traffic and the ready instances of each of
its deployments. Rebuilt from the database every refresh; requests only read the latest snapshot."""

from dataclasses import dataclass, field

from emulator.domain import durations
from emulator.domain.serving import model_server
from emulator.store.db import Store


@dataclass(frozen=True)
class Deployment:
    name: str
    addresses: tuple[str, ...]  # host:port of ready instances
    timeout: float  # requestSettings.requestTimeout, seconds
    server_key: bytes = b""  # what its model servers ask of every request (domain.serving.server_key)
    cluster: str | None = None  # its instances are pods (NAMESPACE/NAME) of this Kubernetes cluster (scoring/pod_hops.py)


@dataclass(frozen=True)
class Endpoint:
    key: str
    name: str
    auth_mode: str
    keys: tuple[str, ...]
    traffic: dict[str, int]
    mirror: dict[str, int]
    deployments: dict[str, Deployment] = field(default_factory=dict)  # by lower-cased name

    def deployment(self, name: str) -> Deployment | None:
        return self.deployments.get(name.lower())


def load(store: Store, secret: bytes) -> dict[str, Endpoint]:
    """Endpoints by lower-cased name (scoring URLs name endpoints alone)."""
    table: dict[str, Endpoint] = {}
    with store.reading() as repo:
        by_endpoint: dict[str, dict[str, Deployment]] = {}
        for row in repo.online_deployments():
            if row.provisioning_state == "Deleting":
                continue
            ready = [i for i in row.instances if i.get("ready") and not i.get("drainingSince")]
            addresses, cluster = tuple(i["address"] for i in ready), next((i["cluster"] for i in ready if "cluster" in i), None)
            timeout = durations.parse_seconds(row.body["properties"]["requestSettings"]["requestTimeout"], "timeout")
            server_key = model_server.server_key(secret, row.key).encode()
            by_endpoint.setdefault(row.endpoint_key, {})[row.name.lower()] = Deployment(row.name, addresses, timeout,
                                                                                        server_key, cluster)
        for row in repo.online_endpoints():
            if row.provisioning_state == "Deleting":
                continue
            props = row.body["properties"]
            table[row.name.lower()] = Endpoint(row.key, row.name, props["authMode"],
                                               (row.keys["primaryKey"], row.keys["secondaryKey"]),
                                               dict(props["traffic"]), dict(props["mirrorTraffic"]),
                                               by_endpoint.get(row.key, {}))
    return table
