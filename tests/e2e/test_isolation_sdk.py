"""Workspaces are isolated, tried from inside a job. Two workspaces made through the SDK, each with a cluster: a
job in the default one connects, with a short timeout each, to a running job of the other (by address), to redis,
to the api on the stack's own network and on the other workspace's jobs network, and to a port the host listens on
at all its addresses; only the api under its name on the job's own network answers. The job's run token opens its
own workspace's tracking and not the other's; one workspace's endpoint key, endpoint token and scoped management
token are refused by the other's endpoint and api. The other workspace's networks go when it is deleted."""

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from azure.ai.ml import MLClient, command
from azure.ai.ml.entities import AmlCompute, Environment, ManagedOnlineEndpoint, Workspace
from azure.core.credentials import AccessToken
from azure.core.exceptions import HttpResponseError

from emulator.runtime.docker import DockerRuntime
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
AMLEMU = Path(sys.executable).with_name("amlemu")
ENV = Environment(image="python:3.11-slim")
OTHER = "iso-other"
MARK = "ISOLATION "

# Runs in the job: each host:port argument tried once with a 2 s timeout, then the tracking URI of its own
# workspace and of OTHER_WORKSPACE with the job's run token; one line of JSON with what happened.
PROBE = r'''
import json, os, socket, ssl, sys, urllib.error, urllib.request
seen = {}
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        seen[target] = "open"
    except OSError as exc:
        seen[target] = "closed: %s" % exc
own = os.environ["MLFLOW_TRACKING_URI"].replace("azureml://", "https://")
other = own.replace("/workspaces/" + os.environ["AZUREML_ARM_WORKSPACE_NAME"], "/workspaces/" + os.environ["OTHER_WORKSPACE"])
context = ssl.create_default_context(cafile=os.environ["REQUESTS_CA_BUNDLE"])
for name, uri in (("tracking-own", own), ("tracking-other", other)):
    request = urllib.request.Request(uri + "/api/2.0/mlflow/experiments/search?max_results=1",
                                     headers={"Authorization": "Bearer " + os.environ["AZUREML_RUN_TOKEN"]})
    try:
        seen[name] = urllib.request.urlopen(request, context=context, timeout=10).status
    except urllib.error.HTTPError as exc:
        seen[name] = exc.code
        seen[name + "-said"] = exc.read()[:300].decode(errors="replace")
print("ISOLATION " + json.dumps(seen), flush=True)
'''


class Token:
    """A bearer token as a credential: what the README shows a user."""

    def __init__(self, value: str):
        self.value = value

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        return AccessToken(self.value, int(time.time()) + 3600)


def _cluster(client: MLClient, name: str) -> None:
    client.compute.begin_create_or_update(AmlCompute(name=name, size="Standard_DS3_v2", min_instances=1,
                                                     max_instances=1, idle_time_before_scale_down=5)).result()


def _address(runtime: DockerRuntime, container, network: str | None = None) -> str | None:
    """A container's address on `network` (its only one when None); a job in a network sandbox has the sandbox's."""
    if container.labels.get("amlemu.sandbox"):
        container = runtime.find(container.labels["amlemu.sandbox"])
    networks = runtime.client.api.inspect_container(container.id)["NetworkSettings"]["Networks"]
    found = networks.get(network) if network else next(iter(networks.values()))
    return found and found["IPAddress"]


def _gateway(runtime: DockerRuntime, network: str) -> str:
    return runtime.client.networks.get(network).attrs["IPAM"]["Config"][0]["Gateway"]


def _service(runtime: DockerRuntime, stack, service: str):
    (found,) = runtime.list({"com.docker.compose.project": stack.project, "com.docker.compose.service": service},
                            managed=False)
    return found


def _running_job(runtime: DockerRuntime, stack, name: str):
    wanted = {"amlemu.stack": stack.label, "amlemu.role": "job", "amlemu.job-name": name}
    return next((c for c in runtime.list(wanted) if c.running), None)


def _listening(runtime: DockerRuntime, container) -> bool:
    code, _ = runtime.exec(container.id, ["python", "-c", "import socket; socket.create_connection(('127.0.0.1', "
                                                          "8000), timeout=1).close()"])
    return code == 0


def test_a_job_reaches_nothing_of_another_workspace_nor_the_stack_nor_the_host(ml_client, credential, stack, tmp_path,
                                                                            job_dir):
    runtime = DockerRuntime()
    ml_client.workspaces.begin_create(Workspace(name=OTHER, location="local")).result()
    other = MLClient(credential, stack.subscription, stack.resource_group, OTHER)
    _cluster(ml_client, "iso-a")
    _cluster(other, "iso-b")
    served = other.jobs.create_or_update(command(  # a job of the other workspace, listening on every address
        command="python -c \"import http.server, threading; s = http.server.HTTPServer(('0.0.0.0', 8000), "
                "http.server.SimpleHTTPRequestHandler); threading.Timer(240, s.shutdown).start(); s.serve_forever()\"",
        environment=ENV, compute="iso-b", display_name="listens"))

    # Keys and tokens first, while the other workspace's job starts.
    suffix = uuid.uuid4().hex[:6]
    mine, theirs = f"iso-a-{suffix}", f"iso-b-{suffix}"
    ml_client.online_endpoints.begin_create_or_update(ManagedOnlineEndpoint(name=mine, auth_mode="key")).result()
    other.online_endpoints.begin_create_or_update(ManagedOnlineEndpoint(name=theirs, auth_mode="aml_token")).result()
    key = ml_client.online_endpoints.get_keys(mine).primary_key
    token = other.online_endpoints.get_keys(theirs).access_token
    uris = {name: client.online_endpoints.get(name).scoring_uri for name, client in ((mine, ml_client), (theirs, other))}
    for credential_of, endpoint, status in ((key, mine, 404), (key, theirs, 401), (token, theirs, 404),
                                            (token, mine, 401)):  # 404: let in, nothing deployed
        answer = httpx.post(uris[endpoint], json={}, headers={"Authorization": f"Bearer {credential_of}"})
        assert answer.status_code == status, (endpoint, answer.text)
    scoped = subprocess.run([str(AMLEMU), "token", "--role", "Owner", "--workspace", stack.workspace,
                             "--principal", "iso-e2e"], env=os.environ, capture_output=True, text=True, check=True)
    owner_here = Token(scoped.stdout.strip())
    assert "iso-a" in [c.name for c in MLClient(owner_here, stack.subscription, stack.resource_group,
                                                stack.workspace).compute.list()]
    with pytest.raises(HttpResponseError) as refused:
        list(MLClient(owner_here, stack.subscription, stack.resource_group, OTHER).compute.list())
    assert refused.value.status_code == 403 and refused.value.error.code == "AuthorizationFailed"

    # What a job of the default workspace tries: the other's job, redis, the api by its addresses and name, the host.
    listener = socket.create_server(("0.0.0.0", 0))
    try:
        target = wait_until(lambda: (c := _running_job(runtime, stack, served.name)) and _listening(runtime, c) and c,
                            timeout=90, message="the other workspace's job to listen")
        ids = {"mine": ml_client.workspaces.get(stack.workspace).id, "theirs": other.workspaces.get(OTHER).id}
        jobs_networks = {k: _jobs_network(runtime, stack, v) for k, v in ids.items()}
        api = _service(runtime, stack, "api")
        port = listener.getsockname()[1]
        probes = {"their job": f"{_address(runtime, target)}:8000",
                  "redis": f"{_address(runtime, _service(runtime, stack, 'redis'))}:6379",
                  "api on the stack's network": f"{_address(runtime, api, stack.network)}:8443",
                  "api on their jobs network": f"{_address(runtime, api, jobs_networks['theirs'])}:8443",
                  "api by its name here": "api:8443",
                  "the host through the stack's network": f"{_gateway(runtime, stack.network)}:{port}",
                  "the host through this network": f"{_gateway(runtime, jobs_networks['mine'])}:{port}",
                  "the host through theirs": f"{_gateway(runtime, jobs_networks['theirs'])}:{port}"}
        (tmp_path / "probe.py").write_text(PROBE)
        job = ml_client.jobs.create_or_update(command(
            code=str(tmp_path), command="python probe.py " + " ".join(probes.values()), environment=ENV,
            compute="iso-a", environment_variables={"OTHER_WORKSPACE": OTHER}, display_name="tries"))
        wait_until(lambda: ml_client.jobs.get(job.name).status in ("Completed", "Failed"), timeout=90,
                   message="the probing job to end")
    finally:
        listener.close()
    log = (job_dir(job.name) / "user_logs" / "std_log.txt").read_text()
    seen = json.loads(next(line for line in log.splitlines() if line.startswith(MARK))[len(MARK):])
    reached = {what: seen[where] == "open" for what, where in probes.items()}
    assert reached == {what: what == "api by its name here" for what in probes}, seen
    # let in at its own (MLflow itself may still be starting: 503), refused at the other's
    assert seen["tracking-own"] not in (401, 403) and seen["tracking-other"] == 401, seen

    other.jobs.begin_cancel(served.name).result()
    for name, client in ((mine, ml_client), (theirs, other)):
        client.online_endpoints.begin_delete(name).result()
    ml_client.compute.begin_delete("iso-a").result()  # its node would outlive the test (min_instances=1)
    ml_client.workspaces.begin_delete(OTHER, delete_dependent_resources=False).result()
    wait_until(lambda: not runtime.networks({"amlemu.stack": stack.label, "amlemu.workspace": OTHER}), timeout=60,
               message="the deleted workspace's networks to go")


def _jobs_network(runtime: DockerRuntime, stack, workspace_id: str) -> str:
    """A workspace's jobs network, found by its labels as the stack made it."""
    (name,) = runtime.networks({"amlemu.stack": stack.label, "amlemu.network": "jobs",
                                "amlemu.workspace-key": workspace_id.lower()})
    return name
