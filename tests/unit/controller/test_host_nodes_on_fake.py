"""Jobs on an attached VirtualMachine compute, on FakeRuntime standing in for the host's engine: one node there, the
node image and each queued job's image copied first (and recorded for the detach), the job sent through the queue;
a host that stops answering makes its node unusable at once and its job requeues; once it answers again, what the
emulator left there is removed and a new node starts."""

import pytest
from cryptography import x509

from emulator import pki, tokens
from emulator.controller.host_engines import RETRY_SECONDS
from emulator.controller.host_nodes import HostNodes
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.controller.specs.host_nodes import host_network
from emulator.dispatch import protocol, rank_files
from emulator.dispatch.celery_app import cluster_queue, ready_key
from emulator.dispatch.protocol import job_tag
from emulator.domain.compute.cluster import NodeState
from emulator.runtime.base import ContainerSpec
from emulator.runtime.fake import FakeRuntime
from emulator.runtime.hosts import HostCheckFailed
from emulator.runtime.labels import ATTEMPT, JOB, NODE, RANK, ROLE, STACK
from emulator.services import attached, computes, jobs
from emulator.settings import Settings
from emulator.store.tables import Job
from tests.unit.controller.test_clusters_on_fake import report, submit


class FakeHost(FakeRuntime):
    """The host's engine: it copies images by recording them, and can be cut off."""

    def __init__(self, clock):
        super().__init__(clock)
        self.copied: list[str] = []
        self.reachable = True
        self.client = self

    def ping(self) -> bool:
        if not self.reachable:
            raise HostCheckFailed("address", "cut off")
        return True

    def answers(self) -> None:
        self.ping()

    def ensure_image(self, _source, image: str) -> list[str]:
        if image in self.copied:
            return []
        self.copied.append(image)
        return [f"sha256:{image}"]

    def remove_image(self, image_id: str) -> None:
        self.copied = [image for image in self.copied if f"sha256:{image}" != image_id]


@pytest.fixture
def host(clock) -> FakeHost:
    return FakeHost(clock)


@pytest.fixture
def host_nodes(settings, store, broker, clock, scheduler, host) -> HostNodes:
    pki.ensure_ca(settings.ca_dir)
    settings.advertised_redis_url = "redis://10.1.0.1:6379/0"
    secret = tokens.load_secret(settings.data_dir / "token.key")

    def runtime_of(_access):
        if not host.reachable:
            raise HostCheckFailed("address", "cut off")
        return host
    sent: list = []
    jobs_reconciler = JobReconciler(settings, lambda *_: None, lambda _env: None)
    nodes = HostNodes(settings, store, broker, clock, secret, scheduler, source=None,
                      send=lambda queue, message: sent.append((queue, message)), runtime_of=runtime_of,
                      active_attempts=jobs_reconciler.active_attempts)
    nodes.sent = sent
    return nodes


def attach(azure, settings, name: str = "vm-a") -> str:
    secret = tokens.load_secret(settings.data_dir / "token.key")
    body = {"properties": {"computeType": "VirtualMachine", "resourceId": "/subscriptions/s/resourceGroups/r/providers/"
            f"Microsoft.Compute/virtualMachines/{name}", "properties": {
                "address": "10.1.0.5", "sshPort": 22, "administratorAccount": {"username": "azureuser",
                                                                               "password": "secret"}}}}
    attachment = attached.checked(body, secret, lambda _access: attached.HostFacts(4, 1 << 33, "26", "Debian"))
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), name, body, azure.clock(), attachment)
    return azure.key(name)


def up(azure, host_nodes, broker, name: str = "vm-a"):
    host_nodes.tick()
    (node,) = azure.nodes(name)
    broker.set(ready_key(node.node_id), 1)
    host_nodes.tick()
    (node,) = azure.nodes(name)
    assert node.state == NodeState.IDLE
    return node


def test_one_node_on_the_host_with_its_image_copied_and_recorded(azure, settings, host_nodes, host, broker):
    key = attach(azure, settings)
    node = up(azure, host_nodes, broker)
    (spec,) = [call[1] for call in host.calls if call[0] == "run"]
    assert spec.labels[NODE] == node.node_id and spec.labels[ROLE] == "node"
    assert spec.env["AMLEMU_REDIS_URL"] == settings.advertised_redis_url
    assert host.copied == [settings.node_image]
    assert azure.compute("vm-a").body["attached"]["copiedImages"] == [f"sha256:{settings.node_image}"]
    host_nodes.tick()
    assert len(azure.nodes("vm-a")) == 1 and not azure.fake.calls[1:]  # nothing on the emulator's own engine
    assert key


def test_a_job_on_the_vm_is_sent_to_its_node_after_its_image_is_copied(azure, settings, store, host_nodes, host,
                                                                       broker):
    attach(azure, settings)
    up(azure, host_nodes, broker)
    submit(azure, store, settings, "train", "vm-a")
    host_nodes.tick()
    assert "python:3.11-slim" in host.copied
    ((queue, message),) = host_nodes.sent
    assert queue == cluster_queue(azure.key("vm-a"))
    assert (message["job_name"], message["image"], message["world_size"]) == ("train", "python:3.11-slim", 1)
    # on the host's network, without the emulator's network sandboxes: neither exists on that engine
    assert (message["network"], message["sandbox_pool"]) == (host_network(settings, azure.compute("vm-a")), None)
    assert rank_files.recorded(broker, message["job_key"], 1, 0) is not None  # what its node may fetch, send back
    assert protocol.is_current(broker, azure.ref.child_id("jobs", "train").lower(), 1)


def test_a_job_asking_for_more_than_one_node_is_refused_naming_the_field(azure, settings, store):
    attach(azure, settings)
    with store.transaction() as repo, pytest.raises(Exception) as caught:
        jobs.put(repo, azure.ref, "wide", {"properties": {
            "jobType": "Command", "command": "true", "resources": {"instanceCount": 2},
            "environmentId": "azureml:AzureML-sklearn-1.5@latest",
            "computeId": azure.ref.child_id("computes", "vm-a")}}, azure.clock())
    assert getattr(caught.value, "target", "") == "properties.resources.instanceCount"


def test_a_host_cut_off_mid_job_makes_its_node_unusable_requeues_the_job_and_is_cleaned_when_back(
        azure, settings, store, host_nodes, host, broker, clock):
    attach(azure, settings)
    node = up(azure, host_nodes, broker)
    reconciler = submit(azure, store, settings, "train", "vm-a")
    host_nodes.tick()
    job_key = azure.ref.child_id("jobs", "train").lower()
    report(store, reconciler, clock, job_key, node.node_id, "claimed")
    report(store, reconciler, clock, job_key, node.node_id, "running")
    assert azure.nodes("vm-a")[0].state == NodeState.RUNNING
    job_labels = {STACK: settings.stack, ROLE: "job", JOB: job_tag(job_key), ATTEMPT: "1", RANK: "0"}
    host.run(ContainerSpec(name="attempt-1", image="python:3.11-slim", command=["python"], labels=job_labels))
    host_nodes.tick()
    assert host.list({ROLE: "job"})  # its attempt is the current one: it stays
    host.reachable = False
    host_nodes.tick()
    (lost,) = azure.nodes("vm-a")
    assert lost.state == NodeState.UNUSABLE
    with store.transaction() as repo:
        job = repo.session.get(Job, job_key)
        assert (job.status, job.attempt) == ("Queued", 2)
        assert f"Node {node.node_id} was lost while running attempt 1" in job.history[-1]["message"]
    assert not protocol.is_current(broker, job_key, 1)
    old = host.list({STACK: settings.stack, ROLE: "node"})
    assert [c.labels[NODE] for c in old] == [node.node_id]  # still there: nothing could touch it
    host.reachable = True
    host_nodes.tick()
    assert host.list({STACK: settings.stack, ROLE: "node"}) == old  # not tried again at once (each try waits)
    clock.advance(RETRY_SECONDS)
    host_nodes.tick()  # back: the old node's container goes, a new node starts
    left = host.list({STACK: settings.stack, ROLE: "node"})
    assert node.node_id not in [c.labels[NODE] for c in left] and len(left) == 1
    assert not host.list({ROLE: "job"})  # the lost node's job container too: its attempt is over
    clock.advance(120)
    host_nodes.tick()
    (fresh,) = azure.nodes("vm-a")
    assert fresh.node_id != node.node_id
    broker.set(ready_key(fresh.node_id), 1)
    host_nodes.tick()  # ready: the requeued attempt is sent to it
    assert protocol.is_current(broker, job_key, 2)
    assert [m["attempt"] for _, m in host_nodes.sent] == [1, 2]


def test_the_apis_certificate_names_the_address_attached_hosts_nodes_use(tmp_path):
    settings = Settings(data_dir=tmp_path, node_api_url="https://10.1.0.250:8443")
    assert "10.1.0.250" in settings.served_hosts and settings.served_hosts[0] == settings.public_host
    pki.ensure_ca(settings.ca_dir)
    cert, _ = pki.issue_server_cert(settings.ca_dir, settings.served_hosts)
    names = x509.load_pem_x509_certificate(cert.read_bytes()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert "10.1.0.250" in [str(ip) for ip in names.get_values_for_type(x509.IPAddress)]
