"""Reconciles online deployments: brings each one's model-server containers to what its record says.

A deployment of generation g with capacity n runs n containers of its serving image (environment + inference
server, built in a worker thread), each with the instance type's limits, the model read-only under
AZUREML_MODEL_DIR and the code read-only under /var/azureml-app, on the scoring network (the router reaches
them there; it has no route to redis or the api), unprivileged and without the Docker socket. The controller
probes them (readiness and liveness, as the deployment's probe settings say), publishes the ready ones in the
deployment's `instances` for the router, and decides starts, drains and removals with domain.rollout.
Level-based like the clusters: a restarted controller adopts containers by label and removes those of
deployments that are gone. A deployment on Kubernetes compute whose cluster a kubeconfig reaches runs pods there
instead (controller/serving_pods.py): the same decisions, carried out through the API server.
"""

import logging
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import httpx
import redis

from emulator import confined, tokens
from emulator.controller import serving_pods
from emulator.controller.adoption import reconcile_owned
from emulator.controller.effects import Actuator, Effects
from emulator.controller.reconcilers.model_server_probes import ModelServerProbes
from emulator.controller.serving_pods import PodServers
from emulator.controller.specs.model_servers import logs_dir, model_server_spec
from emulator.controller.specs.serving_pods import ServingPod, serving_pod
from emulator.controller.start_failures import StartFailures
from emulator.controller.steps import Steps
from emulator.controller.workspace_networks import WorkspaceNetworks
from emulator.dispatch import job_container
from emulator.domain import events as kinds
from emulator.domain.ids import WorkspaceRef
from emulator.domain.serving import deployments, rollout
from emulator.domain.serving.probing import Probed
from emulator.errors import EmulatorError
from emulator.runtime import kube, labels
from emulator.runtime.base import ContainerSpec, Observed, Runtime
from emulator.services import endpoints, events, operations
from emulator.services.environments import Prepared
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.repositories import Repository
from emulator.store.tables import OnlineDeployment, OnlineEndpoint

log = logging.getLogger("amlemu.controller")
LOG_TAIL = 40  # log lines a failed deployment's error carries
BUSY = ("Creating", "Updating", "Scaling")


class EndpointReconciler:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime, clock: Callable[[], datetime],
                 prepare: Callable[[dict, Callable[[str], None]], Prepared], act: Actuator,
                 http: httpx.Client | None = None, networks: WorkspaceNetworks | None = None,
                 broker: redis.Redis | None = None, connect: Callable[[Path], kube.Cluster] = kube.Cluster):
        """`http`: how the probes reach model servers; `broker`, `connect`: for those on Kubernetes (PodServers)."""
        self.settings, self.store, self.runtime, self.clock, self.prepare = settings, store, runtime, clock, prepare
        self.act = act
        self.builds: dict[tuple[str, int], Future] = {}
        self.workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="serving-image")
        self.networks = networks or WorkspaceNetworks(settings, store, runtime)
        self.failures = StartFailures()
        self.secret = tokens.load_secret(settings.data_dir / "token.key")  # model servers' keys derive from it
        self.servers = PodServers(settings, broker, self.secret, runtime, connect)
        self.probes = ModelServerProbes(store, self.servers, clock, self.secret, http, self.servers)
        self.steps = Steps()  # each record's reconcile on its own

    def close(self) -> None:
        self.workers.shutdown(wait=False, cancel_futures=True)
        self.probes.close()

    def tick(self, containers: list[Observed]) -> None:
        """`containers`: the stack's model-server containers."""
        with self.store.transaction() as repo:
            deployed = repo.online_deployments()
            keys = [d.key for d in deployed]
            self._finish_endpoints(repo, {d.endpoint_key for d in deployed})
            targets, everywhere = serving_pods.targets(self.settings, repo, deployed)
        found, missed = self.servers.observe(everywhere)
        unknown = {key for key, target in targets.items() if target in missed}  # their API server did not answer
        containers = [c for c in containers + found if c.labels.get(labels.DEPLOYMENT_ID) not in unknown]
        reconcile_owned([k for k in keys if k not in unknown], containers, labels.DEPLOYMENT_ID, self.reconcile,
                        self.servers, "model server", self.steps)
        seen = {c.name for c in containers}
        self.probes.forget_all_but(seen)

    def reconcile(self, key: str, containers: list[Observed]) -> None:
        """Probe what runs, then decide on what the probes saw (in one short transaction), then act."""
        self.servers.read_logs(containers)
        dead = self.probes.run(key, [c for c in containers if c.running])
        now = self.clock()
        effects = Effects()
        with self.store.transaction() as repo:
            row = repo.online_deployment(key)
            if row is not None:
                try:
                    self._decide(repo, row, [c for c in containers if c.id not in dead], now, effects)
                except EmulatorError as exc:  # its model, code or environment cannot be had any more
                    self._fail(repo, row, now, "DeploymentFailed", exc.message)
        self._carry_out(effects)

    # ---------------------------------------------------------------- deciding

    def _decide(self, repo: Repository, row: OnlineDeployment, containers: list[Observed], now: datetime,
                effects: Effects) -> None:
        parent = repo.online_endpoint(row.endpoint_key)
        if row.provisioning_state == "Deleting":
            self._delete(repo, row, parent.name, containers, now, effects)
            return
        self._adopt(row, containers, now)
        if row.provisioning_state == "Failed":  # nothing more starts (nor builds) until an update; what serves stays
            effects.remove += [c.id for c in containers if not c.running]
            self._publish(row, containers, now, [c.name for c in containers if not c.running])
            return
        if row.image is None and not self._image(repo, row, parent.name, now):
            return
        if self._init_failed(repo, row, parent.name, containers, now, effects):
            return
        instances = self._instances(row, containers)
        step = rollout.plan(instances, row.generation, row.body["sku"]["capacity"], now)
        by_name = {c.name: c for c in containers}
        effects.remove += [by_name[name].id for name in step.remove]
        if self.failures.due(row.key, now):  # else its last start failed (the deployment says why): backoff
            effects.start += [self._server(repo, row, parent) for _ in range(step.start)]
        self._publish(row, containers, now, step.remove, step.drain)
        if step.settled and row.provisioning_state in BUSY:
            events.record_beside(row, events.workspace_of(row), kinds.DEPLOYMENT_ROLLED, row.key, now,
                                 generation=row.generation, capacity=row.body["sku"]["capacity"])
            row.provisioning_state, row.modified_at = "Succeeded", now
            operations.finish(repo, row.key, now)
            log.info("deployment %s/%s: %d instance(s) ready", parent.name, row.name, row.body["sku"]["capacity"])

    def _server(self, repo: Repository, row: OnlineDeployment, parent: OnlineEndpoint) -> ContainerSpec | ServingPod:
        """One more instance: a container here, or a pod on the cluster of the endpoint's Kubernetes compute."""
        ref, found = self._ref(row), endpoints.resolve(repo, self._ref(row), row.body)
        on = serving_pods.cluster_of(self.settings, repo, row, parent)
        if on is None:
            return model_server_spec(self.settings, self.secret, row, parent.name, ref, found)
        chosen = on.resolve(row.body["properties"]["instanceType"], "properties.instanceType")
        return serving_pod(self.settings, self.secret, row, parent.name, ref, found, on, chosen, self.servers.files)

    def _adopt(self, row: OnlineDeployment, containers: list[Observed], now: datetime) -> None:
        """Containers this process has not probed yet (it has just started) keep what the record says of them,
        so that a controller restart takes no ready instance out of the router's table."""
        published = {i["name"]: i for i in row.instances}
        for container in containers:
            if container.name not in self.probes.states and published.get(container.name, {}).get("ready"):
                self.probes.states[container.name] = Probed(since=now, last=now, ready=True, ever_ready=True)

    def _image(self, repo: Repository, row: OnlineDeployment, endpoint: str, now: datetime) -> bool:
        """The serving image of this generation: built in a worker thread; True once it is there."""
        job = (row.key, row.generation)
        future = self.builds.get(job)
        if future is None:
            env = endpoints.resolve(repo, self._ref(row), row.body).environment
            folder = logs_dir(self.settings, endpoint, row.name)
            self.builds[job] = self.workers.submit(self._build, dict(env.body), folder / "storage-initializer.log")
            return False
        if not future.done():
            return False
        del self.builds[job]
        try:
            row.image = future.result().image
            return True
        except Exception as exc:  # noqa: BLE001 (the deployment fails with the reason; an update retries)
            self._fail(repo, row, now, "ImageBuildFailure", f"The serving image could not be built: {exc}")
            return False

    def _build(self, env_body: dict, log_file: Path) -> Prepared:
        # the folder is the model server's to write in: a link it left there is not followed
        with confined.appending(self.settings.data_dir, log_file.relative_to(self.settings.data_dir)) as out:
            def progress(line: str) -> None:
                out.write(line + "\n")
                out.flush()
            prepared = self.prepare(env_body, progress)
            out.write("".join(note + "\n" for note in prepared.notes) + f"amlemu: serving image {prepared.image}\n")
        return prepared

    def _init_failed(self, repo: Repository, row: OnlineDeployment, endpoint: str, containers: list[Observed],
                     now: datetime, effects: Effects) -> bool:
        """A container of the current generation that exited before it was ever ready (init() failed, or the
        server could not start), or that failed its readiness probe failureThreshold times in a row without ever
        being ready: the deployment fails with the log's last lines."""
        if row.provisioning_state not in BUSY:
            return False
        threshold = deployments.probe(row.body["properties"]["readinessProbe"]).failure_threshold
        for container in containers:
            probed = self.probes.states.get(container.name)
            if container.labels.get(labels.GENERATION) != str(row.generation) or (probed and probed.ever_ready):
                continue
            if not container.running:
                why = f"exited with code {container.exit_code} before it was ready: the scoring script's init() " \
                      "failed or the server could not start"
            elif probed and probed.failures >= threshold:
                why = f"failed its readiness probe {probed.failures} times in a row without ever being ready"
            else:
                continue
            tail = self._tail(endpoint, row.name, container.name)
            self._fail(repo, row, now, "ResourceNotReady",
                       f"The model server of deployment '{row.name}' {why}. Last lines of its log "
                       f"(ml_client.online_deployments.get_logs):\n{tail}")
            effects.remove += [c.id for c in containers if c.labels.get(labels.GENERATION) == str(row.generation)]
            return True
        return False

    def _fail(self, repo: Repository, row: OnlineDeployment, now: datetime, code: str, message: str) -> None:
        error = {"code": code, "message": message}
        row.provisioning_state, row.error, row.modified_at = "Failed", error, now
        operations.finish(repo, row.key, now, status="Failed", error=error)
        log.info("deployment %s failed: %s", row.name, message.splitlines()[0])

    def _instances(self, row: OnlineDeployment, containers: list[Observed]) -> list[rollout.Instance]:
        draining = {i["name"]: i.get("drainingSince") for i in row.instances}
        result = []
        for container in containers:
            since = draining.get(container.name)
            probed = self.probes.states.get(container.name)
            result.append(rollout.Instance(container.name, int(container.labels.get(labels.GENERATION, 0)),
                                           container.running, bool(probed and probed.ready),
                                           datetime.fromisoformat(since) if since else None))
        return result

    def _publish(self, row: OnlineDeployment, containers: list[Observed], now: datetime, removed: list[str],
                 drain: list[str] = ()) -> None:
        """What the router reads: each instance's address and whether it takes requests."""
        before = {i["name"]: i for i in row.instances}
        published = []
        for container in containers:
            if container.name in removed or not container.ip:
                continue
            since = before.get(container.name, {}).get("drainingSince")
            if since is None and container.name in drain:
                since = now.isoformat()
            probed = self.probes.states.get(container.name)
            published.append({"name": container.name, **self.servers.address(container),
                              "generation": int(container.labels.get(labels.GENERATION, 0)),
                              "ready": bool(probed and probed.ready and container.running and since is None),
                              "drainingSince": since})
        if published != row.instances:
            events.of_deployment(row, row.instances, published, now)
            row.instances = published

    def _delete(self, repo: Repository, row: OnlineDeployment, endpoint: str, containers: list[Observed],
                now: datetime, effects: Effects) -> None:
        if containers:
            effects.remove += [c.id for c in containers]
            events.of_deployment(row, row.instances, [], now)
            row.instances = []
            return
        effects.drop_dirs.append(logs_dir(self.settings, endpoint, row.name, make=False))
        operations.finish(repo, row.key, now)
        repo.remove(row)
        log.info("deleted deployment %s/%s", endpoint, row.name)

    def _finish_endpoints(self, repo: Repository, with_deployments: set[str]) -> None:
        for row in repo.online_endpoints():
            if row.provisioning_state == "Deleting" and row.key not in with_deployments:
                operations.finish(repo, row.key, self.clock())
                repo.remove(row)
                shutil.rmtree(self.settings.data_dir / endpoints.LOGS_DIR / row.name.lower(), ignore_errors=True)
                log.info("deleted online endpoint %s", row.name)

    # ---------------------------------------------------------------- containers

    @staticmethod
    def _ref(row: OnlineDeployment) -> WorkspaceRef:
        return WorkspaceRef.from_key(row.endpoint_key)

    def _tail(self, endpoint: str, deployment: str, container: str) -> str:
        return job_container.tail(logs_dir(self.settings, endpoint, deployment, make=False) / f"{container}.log", LOG_TAIL)

    def _carry_out(self, effects: Effects) -> None:
        self.servers.remove_pods(effects)
        self.act(effects)
        for spec in effects.start:
            key, deployment = spec.labels[labels.DEPLOYMENT_ID], spec.labels[labels.DEPLOYMENT]
            what = f"a model server of deployment {deployment}"
            try:
                if isinstance(spec, ServingPod):
                    self.servers.start(spec)
                else:
                    self.networks.scoring(WorkspaceRef.from_key(key).key)
                    self.runtime.run(spec)
                if self.failures.started(key, what):
                    self._start_failed(key, None)
                log.info("started model server %s", spec.name)
            except Exception as exc:  # noqa: BLE001 (the deployment says why; tried again with backoff)
                reason = getattr(exc, "message", str(exc)).replace(spec.name, "<container>")
                self.failures.failed(key, what, reason, self.clock())
                self._start_failed(key, f"The model server of deployment '{deployment}' "
                                        f"could not start: {reason}")
                return

    def _start_failed(self, key: str, message: str | None) -> None:
        """A deployment being made or updated fails with the reason; one that serves keeps serving from the
        instances it has and shows the reason until a start succeeds (`message` None)."""
        with self.store.transaction() as repo:
            row = repo.online_deployment(key)
            if row is None or row.provisioning_state == "Failed":
                return
            if message and row.provisioning_state in BUSY:
                self._fail(repo, row, self.clock(), "ResourceNotReady", message)
            else:
                row.error = message and {"code": "ResourceNotReady", "message": message}

