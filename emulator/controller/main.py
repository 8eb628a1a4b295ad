"""The controller process: one loop that applies node reports, moves jobs on and reconciles every cluster.

The loop waits on the event stream rather than a timer: a node's report or a submission wakes it at once,
and with nothing to hear it still runs every `reconcile_interval_seconds`.
"""

import functools
import logging
import random
import signal
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import redis

from emulator import in_job, pki, tokens
from emulator.controller.effects import Actuator, Effects
from emulator.controller.host_engines import HostEngines
from emulator.controller.host_nodes import HostNodes
from emulator.controller.host_pools import HostPools
from emulator.controller.hosts import AttachedHosts
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.controller.reconcilers.deleted_workspaces import Leftovers
from emulator.controller.reconcilers.endpoints import EndpointReconciler
from emulator.controller.reconcilers.instances import InstanceReconciler
from emulator.controller.reconcilers.job_containers import JobContainers
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.controller.reconcilers.meter import Meter
from emulator.controller.reconcilers.node_volumes import NodeVolumes
from emulator.controller.reconcilers.parents import ParentReconciler
from emulator.controller.reconcilers.pods import PodReconciler
from emulator.controller.reconcilers.sandboxes import Sandboxes
from emulator.controller.reconcilers.schedules import ScheduleReconciler
from emulator.controller.scheduling.preemption import Preemptions
from emulator.controller.scheduling.scheduler import JobScheduler
from emulator.controller.staging import Stager
from emulator.controller.steps import Steps
from emulator.controller.workspace_networks import WorkspaceNetworks
from emulator.dispatch import protocol
from emulator.dispatch.celery_app import make_celery
from emulator.runtime import labels
from emulator.runtime.base import ROLES, Observed, Runtime
from emulator.runtime.docker import DockerRuntime
from emulator.runtime.engines import Engines
from emulator.runtime.images import EnvironmentImages
from emulator.services.batch_driver import BatchDriver
from emulator.services.batch_invoke import KIND as BATCH
from emulator.services.environments import EnvironmentResolver
from emulator.services.pipeline_driver import PipelineDriver
from emulator.services.pipelines import KIND as PIPELINE
from emulator.services.serving import ServingImages
from emulator.services.sweep_driver import SweepDriver
from emulator.services.sweeps import KIND as SWEEP
from emulator.services.trial_metrics import TrialMetrics
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.tracking.mlflow_server import MlflowServer

log = logging.getLogger("amlemu.controller")


class Controller:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime, broker: redis.Redis,
                 clock: Callable[[], datetime], resolver: EnvironmentResolver, redis_url: str | None = None,
                 entropy: random.Random | None = None):
        """`redis_url`: how this process reaches Redis, when not as the nodes do (settings.redis_url);
        `entropy`: where unseeded randomness comes from (preemption timelines, event ids)."""
        entropy = entropy or random.Random()
        in_job.install(settings.data_dir / in_job.INSTALLED)  # the parallel runner, before any job mounts it
        self.settings, self.store, self.runtime, self.broker, self.clock = settings, store, runtime, broker, clock
        self.celery = make_celery(redis_url or settings.redis_url)
        self.jobs = JobReconciler(settings, resolver.prepare, resolver.cached)
        secret, bundle = tokens.load_secret(settings.data_dir / "token.key"), settings.data_dir / pki.JOBS_BUNDLE

        def run_token(job) -> str:
            """Tracking for a job once the api laid out the CA bundle it mounts (a stack without an api has none)."""
            if not bundle.is_file():
                return ""
            return tokens.issue_run_token(secret, job.workspace_key, job.name, int(clock().timestamp()))
        scheduler = JobScheduler(settings, functools.cache(runtime.has_gpus), run_token)
        self.preemptions = Preemptions(settings, scheduler, entropy, lambda: str(uuid.UUID(int=entropy.getrandbits(128))))
        self.stager = Stager(runtime, broker, settings.data_dir, settings.host_dir)
        # Nodes and their jobs run on the emulator's engine or on attached hosts' (a pooled cluster's, issue 23)
        host_engines = HostEngines(clock)
        self.engines = engines = Engines(runtime, host_engines.connected, host_engines.lost)
        self.act = Actuator(engines, broker, settings.stack, send=self._send, stage=self.stager.submit)
        self.networks = WorkspaceNetworks(settings, store, runtime)
        self.sandboxes = Sandboxes(settings, store, runtime, broker, clock, self.networks)
        self.clusters = ClusterReconciler(settings, store, engines, broker, clock, scheduler, self.act,
                                          self.preemptions, self.networks, entropy,
                                          HostPools(settings, store, host_engines, getattr(runtime, "client", None)))
        self.instances = InstanceReconciler(settings, store, runtime, broker, clock, scheduler, self.act,
                                            self.networks)
        self.endpoints = EndpointReconciler(settings, store, runtime, clock,
                                            ServingImages(resolver).prepare, self.act, networks=self.networks,
                                            broker=broker)
        self.steps = Steps()
        self.leftovers = Leftovers(settings, store)
        self.node_volumes = NodeVolumes(settings, store, engines, clock)  # detached nodes' data folders
        self.job_containers = JobContainers(settings, store, engines, broker, self.jobs.active_attempts)
        self.schedules = ScheduleReconciler(settings, store, clock)
        self.pods = PodReconciler(settings, store, clock, broker, secret, run_token)
        self.meter = Meter(settings, store, clock, secret)
        self.hosts = AttachedHosts(settings, store, clock, secret)
        self.host_nodes = HostNodes(settings, store, broker, clock, secret, scheduler, getattr(runtime, "client", None),
                                    send=self._send, active_attempts=self.jobs.active_attempts, engines=host_engines)
        self.mlflow = MlflowServer(settings.mlflow_url, timeout=5.0)
        self.parents = ParentReconciler(settings, store, clock, TrialMetrics(store, self.mlflow).series,
                                        {SWEEP: SweepDriver(), PIPELINE: PipelineDriver(), BATCH: BatchDriver()})

    def close(self) -> None:
        """Let containers being started or removed in worker threads get there (none is left half-done)."""
        self.stager.pool.shutdown(wait=True)
        self.sandboxes.workers.shutdown(wait=True)
        self.endpoints.close()
        self.mlflow.close()

    def _send(self, queue: str, message: dict) -> None:
        self.celery.send_task(protocol.RUN_TASK, args=[message], queue=queue)

    def _apply_event(self, event: dict) -> None:
        effects = Effects()
        with self.store.transaction() as repo:
            if event.get("kind") == "preempt_ack":
                self.preemptions.apply_event(repo, event)
            else:
                self.jobs.apply_event(repo, event, self.clock(), effects)
        self.act(effects)

    def tick(self, wait_seconds: float = 0.0) -> None:
        """One pass: node reports, jobs, then each kind of container against the store. Each step on its own."""
        steps = self.steps
        if not steps.run("events", protocol.consume, self.broker, "controller", self._apply_event,
                         int(wait_seconds * 1000)):
            threading.Event().wait(wait_seconds)  # the stream's wait did not happen: the loop must not spin
        steps.run("schedules", self.schedules.tick)  # first: the jobs it makes move on in this same pass
        steps.run("parent jobs", self.parents.tick)  # likewise the children they make
        steps.run("jobs", self._jobs_tick)
        steps.run("kubernetes pods", self.pods.tick)
        # and again once children have ended in this pass, so a pipeline's next step starts without a pass's wait
        steps.run("parent jobs", self.parents.tick)
        steps.run("deleted workspaces", self.leftovers.tick)
        steps.run("attached hosts", self.hosts.tick)
        steps.run("attached host nodes", self.host_nodes.tick)
        by_role: dict[str, list[Observed]] = {role: [] for role in ROLES}
        if not steps.run("containers", self._list_containers, by_role):
            return  # without the engine's view nothing below can be decided
        steps.run("clusters", self.clusters.tick, by_role["node"])
        steps.run("node volumes", self.node_volumes.tick)
        steps.run("instances", self.instances.tick, by_role["instance"] + by_role["agent"])
        steps.run("job containers", self.job_containers.tick, by_role["job"])
        steps.run("sandboxes", self.sandboxes.tick, by_role["sandbox"], by_role["job"])
        steps.run("endpoints", self.endpoints.tick, by_role["model-server"])
        steps.run("workspace networks", self.networks.tick, self.clock())
        steps.run("meter", self.meter.tick)

    def _jobs_tick(self) -> None:
        effects = Effects()
        with self.store.transaction() as repo:
            self.jobs.tick(repo, self.clock(), effects)
        self.act(effects)

    def _list_containers(self, by_role: dict[str, list[Observed]]) -> None:
        for container in self.engines.list({labels.STACK: self.settings.stack}):  # one call per engine per pass
            by_role.get(container.labels.get(labels.ROLE, ""), []).append(container)


def _with_host_data_dir(settings: Settings, runtime: DockerRuntime) -> Settings:
    """Containers the controller starts bind-mount parts of the data folder by their path on the Docker host:
    read off this container's own mount of it, so a plain `docker compose up` needs no variable set."""
    if settings.host_data_dir is not None:
        return settings
    found = runtime.host_path(settings.data_dir)
    if found is None:
        log.info("data folder %s is not a bind mount of this container: containers mount it as is",
                 settings.data_dir)
        return settings
    log.info("data folder %s is %s on the Docker host", settings.data_dir, found)
    return settings.model_copy(update={"host_data_dir": found})


def _with_docker_root(settings: Settings, runtime: DockerRuntime) -> Settings:
    """Nodes mount the engine's data root to measure their jobs' writable layers: asked of the engine unless set
    (a root that is not there would stop every node from starting)."""
    if settings.docker_root is not None:
        return settings
    found = runtime.data_root()
    log.info("the engine keeps its data in %s on its host%s", found, "" if found else ": job layers go unmeasured")
    return settings.model_copy(update={"docker_root": found})


def run(settings: Settings) -> None:
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    runtime = DockerRuntime()
    settings = _with_docker_root(_with_host_data_dir(settings, runtime), runtime)
    controller = Controller(settings, Store(settings.db_url), runtime, protocol.resilient(settings.redis_url),
                            lambda: datetime.now(UTC), EnvironmentResolver(EnvironmentImages()))
    log.info("controller started (stack %s, interval %.2fs, time scale %g)", settings.stack,
             settings.reconcile_interval_seconds, settings.time_scale)
    alive = settings.controller_alive
    alive.unlink(missing_ok=True)
    while not stopping.is_set():
        try:
            controller.tick(wait_seconds=settings.reconcile_interval_seconds)
            alive.touch()  # the compose healthcheck reads its age
        except Exception:  # a failed pass is retried on the next one; the loop itself never dies
            log.exception("reconcile pass failed")
            stopping.wait(settings.reconcile_interval_seconds)
    controller.close()
    log.info("controller stopped")
