"""Kubernetes compute with a kubeconfig, at the API boundary: the official client talks to a stand-in API server on
127.0.0.1 (tests/kube_api.py; no real one can run here). Attach asks for the namespace and refuses one the server
says is not there; a job becomes one pod in the compute's namespace with its instance type's nodeSelector, requests
and limits, the environment's image and the resolved command; the job follows the pod's phase, its log is read back,
a failed pod fails it with the exit code, and a cancel deletes the pod."""

import pytest

from emulator import pki, tokens
from emulator.controller.effects import Effects
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.controller.reconcilers.pods import FOLLOW_GRACE_SECONDS, PodReconciler
from emulator.controller.specs.pods import FETCH, FOLLOW, JOB, pod_name
from emulator.dispatch import protocol, rank_files
from emulator.dispatch.job_container import WORKDIR
from emulator.domain.jobs import artifacts
from emulator.errors import ValidationFailed
from emulator.services import assets, computes, jobs
from emulator.services.environments import Prepared
from tests.unit.controller.conftest import AKS

pytestmark = pytest.mark.usefixtures("sqlite_only")
SECRET = b"s" * 32
SMALL = {"nodeSelector": {"pool": "cpu"},
         "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1500m", "memory": "1Gi"}}}


def _attach(azure, namespace: str = "ml") -> None:
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), "k8s", {"properties": {
            "computeType": "Kubernetes", "resourceId": AKS,
            "properties": {"namespace": namespace, "defaultInstanceType": "small",
                           "instanceTypes": {"small": SMALL}}}}, azure.clock(), data_dir=azure.settings.data_dir)


def _submit(azure, name: str, instance_type: str | None = None) -> None:
    with azure.store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, "py", "1", {"properties": {"image": "python:3.11-slim"}},
                   azure.clock())
        resources = {"instanceCount": 1, **({"instanceType": instance_type} if instance_type else {})}
        jobs.put(repo, azure.ref, name, {"properties": {
            "jobType": "Command", "command": "python train.py --x ${{inputs.x}}",
            "inputs": {"x": {"jobInputType": "literal", "value": "3"}}, "environmentVariables": {"A": "1"},
            "computeId": azure.ref.child_id("computes", "k8s"), "resources": resources,
            "environmentId": azure.ref.child_id("environments", "py") + "/versions/1"}},
            azure.clock(), data_dir=azure.settings.data_dir)


def _jobs_pass(settings, store, azure) -> None:
    reconciler = JobReconciler(settings, lambda *_: None, lambda _env: Prepared(image="python:3.11-slim"))
    with store.transaction() as repo:
        reconciler.tick(repo, azure.clock(), Effects())


def _job(azure, name: str):
    with azure.store.transaction() as repo:
        return repo.job(azure.ref.child_id("jobs", name))


def test_attach_asks_the_cluster_for_its_namespace(azure, api):
    with pytest.raises(ValidationFailed) as caught:
        _attach(azure, namespace="nope")
    assert caught.value.target == "properties.properties.namespace" and "does not exist" in caught.value.message
    assert azure.compute("k8s") is None  # nothing half-attached
    _attach(azure)
    assert [r[:2] for r in api.requests] == [("GET", "/api/v1/namespaces/nope"), ("GET", "/api/v1/namespaces/ml")]
    assert azure.compute("k8s").provisioning_state == "Succeeded"


def _reconciler(settings, store, clock, broker) -> PodReconciler:
    pki.ensure_ca(settings.ca_dir)  # the api makes it as it starts: the pod's containers check the api by it
    return PodReconciler(settings, store, clock, broker, SECRET)


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"]}


def test_a_job_runs_as_a_pod_and_follows_its_phase(azure, api, settings, store, clock, broker):
    _attach(azure)
    _submit(azure, "hello")
    key = azure.ref.child_id("jobs", "hello").lower()
    assert _job(azure, "hello").compute_key == azure.key("k8s")  # the compute itself: no local stand-in
    _jobs_pass(settings, store, azure)
    pods = _reconciler(settings, store, clock, broker)
    pods.tick()
    ((namespace, name), sent), = api.pods.items()
    assert namespace == "ml" and sent["metadata"]["namespace"] == "ml"
    assert sent["spec"]["nodeSelector"] == {"pool": "cpu"} and sent["spec"]["restartPolicy"] == "Never"
    (fetch,), (job, follow) = sent["spec"]["initContainers"], sent["spec"]["containers"]
    assert job["image"] == "python:3.11-slim" and job["command"][-1].endswith("; python train.py --x 3")
    assert job["resources"] == {"requests": {"cpu": "250m", "memory": str(512 * 2**20)},
                                "limits": {"cpu": "1500m", "memory": str(2**30)}}
    assert _env(job)["A"] == "1" and job["securityContext"]["runAsUser"] == 1000
    # its files: fetched and sent back by the emulator's own containers, with the pod's token, which the job lacks
    assert fetch["image"] == follow["image"] == settings.node_image
    assert [fetch["command"][-1], follow["command"][-1]] == ["pod-fetch", "pod-follow"]
    assert _env(fetch)[rank_files.TOKEN] == _env(follow)[rank_files.TOKEN] == tokens.node_token(SECRET, name)
    assert not any(SECRET.hex() in v or tokens.node_token(SECRET, name) in v for v in _env(job).values())
    workdir = next(m for m in job["volumeMounts"] if m["mountPath"] == WORKDIR)
    assert workdir["subPath"].startswith("data/") and workdir["name"] == sent["spec"]["volumes"][0]["name"]
    # the api gives and takes the rank's files to the pod alone, for the current attempt
    assert rank_files.claimed_by(broker, key, 1, 0) == name and rank_files.recorded(broker, key, 1, 0) is not None
    assert protocol.is_current(broker, key, 1)
    assert _job(azure, "hello").status == "Queued"  # Pending: waiting for a node of the cluster
    api.phases[name] = ("Running", None)
    pods.tick()
    assert _job(azure, "hello").status == "Running"
    api.phases[name] = ("Succeeded", 0)
    pods.tick()
    _jobs_pass(settings, store, azure)
    assert _job(azure, "hello").status == "Completed"
    log = settings.data_dir / artifacts.directory(azure.ref, "hello") / artifacts.log_name(0, 1)
    assert f"pod ml/{name}" in log.read_text()
    assert [m for m, p, _ in api.requests if p.endswith("/pods")] == ["POST"]  # created once


def test_a_failed_pod_fails_the_job_and_a_cancel_deletes_the_pod(azure, api, settings, store, clock, broker):
    _attach(azure)
    _submit(azure, "bad")
    _submit(azure, "stopped")
    _jobs_pass(settings, store, azure)
    pods = _reconciler(settings, store, clock, broker)
    pods.tick()
    bad, stopped = (pod_name(azure.ref.child_id("jobs", job).lower(), 1) for job in ("bad", "stopped"))
    assert {name for _, name in api.pods} == {bad, stopped}
    api.phases[bad] = ("Failed", 3)
    log = settings.data_dir / artifacts.directory(azure.ref, "bad") / artifacts.log_name(0, 1)
    with log.open("a") as out:  # as the pod's follower sent it
        out.write("Traceback: boom\n")
    pods.tick()
    job = _job(azure, "bad")
    assert job.status == "Failed" and job.error["innerError"]["exitCode"] == 3 and "boom" in job.error["message"]
    with store.transaction() as repo:
        jobs.cancel(repo, azure.ref, "stopped", clock())
    pods.tick()
    _jobs_pass(settings, store, azure)
    assert _job(azure, "stopped").status == "Canceled"
    assert ("DELETE", f"/api/v1/namespaces/ml/pods/{stopped}") in [r[:2] for r in api.requests]


def test_an_unknown_instance_type_is_refused_at_submit(azure, api):
    _attach(azure)
    with pytest.raises(ValidationFailed) as caught:
        _submit(azure, "huge", instance_type="huge")
    assert caught.value.target == "properties.resources.instanceType"
    assert _job(azure, "huge") is None



def _status(phase: str, init: dict[str, int | None], main: dict[str, int | None], reason: str | None = None) -> dict:
    """A kubelet's PodStatus: each container ended with its exit code, or running (None)."""
    def one(name: str, code: int | None) -> dict:
        state = {"running": {"startedAt": "2026-11-28T00:00:00Z"}} if code is None else {"terminated": {
            "exitCode": code, "reason": {0: "Completed", 137: "OOMKilled"}.get(code, "Error"),
            "startedAt": "2026-11-28T00:00:00Z", "finishedAt": "2026-11-28T00:00:01Z"}}
        return {"name": name, "state": state, "lastState": {}, "ready": code is None, "restartCount": 0,
                "image": "x", "imageID": "", "started": code is None}
    return {"phase": phase, **({"reason": reason} if reason else {}),
            "initContainerStatuses": [one(n, c) for n, c in init.items()],
            "containerStatuses": [one(n, c) for n, c in main.items()]}


def _one_pod(azure, api, settings, store, clock, broker, job: str) -> tuple[PodReconciler, str]:
    """A job submitted and its pod made: the reconciler, and the pod's name."""
    _attach(azure)
    _submit(azure, job)
    _jobs_pass(settings, store, azure)
    pods = _reconciler(settings, store, clock, broker)
    pods.tick()
    ((_, name),) = api.pods
    return pods, name


def test_a_pod_that_cannot_fetch_the_jobs_files_fails_it_saying_why(azure, api, settings, store, clock, broker):
    pods, name = _one_pod(azure, api, settings, store, clock, broker, "cut")
    api.statuses[name] = _status("Failed", {FETCH: 1}, {JOB: None, FOLLOW: None})
    api.container_logs[name, FETCH] = "httpx.ConnectError: [Errno 111] Connection refused\n"
    pods.tick()
    job = _job(azure, "cut")
    assert job.status == "Failed" and "could not fetch the job's files (amlemu-fetch exit code 1)" in job.error["message"]
    log = settings.data_dir / artifacts.directory(azure.ref, "cut") / artifacts.log_name(0, 1)
    assert "Connection refused" in log.read_text()  # the fetch's own log, in the job's


def test_a_job_container_killed_before_its_exit_status_ends_the_pod_after_a_grace(azure, api, settings, store,
                                                                                   clock, broker):
    """Killed (out of memory here), the job's shell writes no exit status, so the pod's follower waits on: the job
    ends from the job container's state, and the pod is deleted once its files had a while to be sent."""
    pods, name = _one_pod(azure, api, settings, store, clock, broker, "oom")
    api.statuses[name] = _status("Running", {FETCH: 0}, {JOB: 137, FOLLOW: None})
    pods.tick()
    assert _job(azure, "oom").status == "Running"  # the follower may still be sending its outputs
    clock.advance(FOLLOW_GRACE_SECONDS + 1)
    pods.tick()
    job = _job(azure, "oom")
    assert job.status == "Failed" and "OOMKilled, exit code 137" in job.error["message"]
    assert ("DELETE", f"/api/v1/namespaces/ml/pods/{name}") in [r[:2] for r in api.requests]


def test_a_kubelet_expands_what_the_job_does_not_mean_it_to(azure, api, settings, store, clock, broker):
    """`$(NAME)` and `$$` in a command or an env value are the kubelet's: the pod carries them escaped."""
    _attach(azure)
    with azure.store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, "py", "1", {"properties": {"image": "python:3.11-slim"}},
                   azure.clock())
        jobs.put(repo, azure.ref, "shell", {"properties": {
            "jobType": "Command", "command": "echo $(date) $$ $HOME", "environmentVariables": {"B": "$(A)"},
            "computeId": azure.ref.child_id("computes", "k8s"), "resources": {"instanceCount": 1},
            "environmentId": azure.ref.child_id("environments", "py") + "/versions/1"}},
            azure.clock(), data_dir=azure.settings.data_dir)
    _jobs_pass(settings, store, azure)
    _reconciler(settings, store, clock, broker).tick()
    (sent,) = api.pods.values()
    job = sent["spec"]["containers"][0]
    assert job["command"][-1].endswith("; echo $$(date) $$$$ $$HOME") and _env(job)["B"] == "$$(A)"


def test_what_holds_a_pod_up_is_said_in_the_jobs_log_once(azure, api, settings, store, clock, broker):
    """No node matches the instance type's nodeSelector, or the image cannot be pulled: the job stays queued, as a
    pod stays pending, and its log says why."""
    pods, name = _one_pod(azure, api, settings, store, clock, broker, "held")
    unschedulable = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    api.statuses[name] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable}]}
    pods.tick()
    pods.tick()
    api.statuses[name] = _status("Pending", {FETCH: 0}, {FOLLOW: None})
    api.statuses[name]["containerStatuses"].insert(0, {"name": JOB, "ready": False, "restartCount": 0, "image": "x",
                                                       "imageID": "", "state": {"waiting": {
                                                           "reason": "ImagePullBackOff",
                                                           "message": 'Back-off pulling image "nope:1"'}}})
    pods.tick()
    assert _job(azure, "held").status == "Queued"
    log = (settings.data_dir / artifacts.directory(azure.ref, "held") / artifacts.log_name(0, 1)).read_text()
    assert log.count(f"pod ml/{name} not scheduled: {unschedulable}") == 1
    assert 'container job waits: ImagePullBackOff (Back-off pulling image "nope:1")' in log
