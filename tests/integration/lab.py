"""The job lab: a real controller loop run here one `tick()` at a time, with real node and job containers;
every wait ticks it until a condition holds."""

from datetime import UTC, datetime
from pathlib import Path

from emulator.controller.main import Controller
from emulator.dispatch import protocol
from emulator.domain.jobs import artifacts
from emulator.domain.storage import blob_access, datastores
from emulator.runtime.images import EnvironmentImages
from emulator.services import assets, computes, jobs, workspaces
from emulator.services.environments import EnvironmentResolver
from emulator.store.tables import Job, Node
from tests.waiting import wait_until

JOB_TIMEOUT = 120.0
IMAGE = "python:3.11-slim"  # resolves to the python stand-in


def now() -> datetime:
    return datetime.now(UTC)


class Lab:
    def __init__(self, settings, store, runtime, broker, docker_client, redis_host_url):
        self.settings, self.store, self.runtime, self.broker = settings, store, runtime, broker
        self.ref = workspaces.default_ref(settings)
        with store.transaction() as repo:
            workspaces.ensure_default(repo, settings, now())
        broker.delete(protocol.EVENTS)
        self.controller = Controller(settings, store, runtime, broker, now,
                                     EnvironmentResolver(EnvironmentImages(docker_client)), redis_host_url)
        self.redis_host_url = redis_host_url
        self.account = blob_access.workspace_account(self.ref)
        self._codes = 0

    def cluster(self, name: str = "cpu", max_nodes: int = 2, idle: str = "PT1S", vm_size: str = "Standard_DS3_v2",
                priority: str = "Dedicated"):
        body = {"properties": {"computeType": "AmlCompute", "properties": {
            "vmSize": vm_size, "vmPriority": priority, "scaleSettings": {"minNodeCount": 0, "maxNodeCount": max_nodes,
                                                 "nodeIdleTimeBeforeScaleDown": idle}}}}
        with self.store.transaction() as repo:
            computes.put(repo, self.ref, repo.workspace(self.ref.key), name, body, now())

    def code(self, files: dict[str, str]) -> str:
        self._codes += 1
        folder = self.settings.data_dir / "blobs" / self.account / f"code-{self._codes}" / "src"
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text)
        code_id = self.ref.child_id("codes", f"c{self._codes}") + "/versions/1"
        uri = f"https://localhost:8443/blob/{self.account}/code-{self._codes}/src"
        with self.store.transaction() as repo:
            assets.put(repo, self.ref, assets.CODES, f"c{self._codes}", "1",
                       {"properties": {"codeUri": uri, "isAnonymous": True}}, now())
        return code_id

    def environment(self, name: str = "py", **props) -> str:
        with self.store.transaction() as repo:
            assets.put(repo, self.ref, assets.ENVIRONMENTS, name, "1",
                       {"properties": {"image": IMAGE, **props}}, now())
        return self.ref.child_id("environments", name) + "/versions/1"

    def submit(self, name: str, command: str, code_id: str | None = None, env_id: str | None = None,
               compute: str = "cpu", **props) -> None:
        body = {"jobType": "Command", "command": command, "environmentId": env_id or self.environment(),
                "computeId": self.ref.child_id("computes", compute), **props}
        if code_id:
            body["codeId"] = code_id
        with self.store.transaction() as repo:
            jobs.put(repo, self.ref, name, {"properties": body}, now())

    def job(self, name: str) -> Job:
        with self.store.transaction() as repo:
            return jobs.get(repo, self.ref, name)

    def nodes(self, compute: str = "cpu") -> list[Node]:
        with self.store.transaction() as repo:
            return repo.nodes(self.ref.child_id("computes", compute))

    def wait(self, predicate, timeout: float = JOB_TIMEOUT, message: str = "condition"):
        def ticked():
            self.controller.tick(wait_seconds=0.2)
            return predicate()
        return wait_until(ticked, timeout=timeout, interval=0.01, message=message)

    def wait_status(self, name: str, *statuses: str, timeout: float = JOB_TIMEOUT) -> Job:
        return self.wait(lambda: (j := self.job(name)).status in statuses and j, timeout,
                         f"job {name} to be {'/'.join(statuses)}")

    def artifacts(self, name: str) -> Path:
        return self.settings.data_dir / artifacts.directory(self.ref, name)

    def output(self, job_name: str, output: str) -> Path:
        where = datastores.locate(self.ref, datastores.BLOB_STORE, f"azureml/{job_name}/{output}", "x")
        return self.settings.data_dir / artifacts.blob_dir(where)

    def job_containers(self) -> list:
        return self.runtime.list({"amlemu.stack": self.settings.stack, "amlemu.role": "job"})
