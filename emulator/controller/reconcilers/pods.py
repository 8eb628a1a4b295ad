"""Jobs on Kubernetes compute whose cluster a user's kubeconfig reaches: each runs as one pod in the compute's
namespace, and its status follows the pod's phase (Pending: Queued, Running, Succeeded: Completed, Failed).

Decide, act, commit: the jobs are read in one transaction, the API server is called outside any (it may be slow or
gone), and what it said is written in a second one. Every pass is level-based: a pod made but not recorded (a crash
between the two) is found again by its name, which the job's key and attempt fix."""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from emulator import confined
from emulator.controller.specs import pods
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, command_job
from emulator.domain.jobs.status import JobStatus
from emulator.runtime import kube
from emulator.services import kubernetes
from emulator.services.jobs import transition
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.repositories import Repository
from emulator.store.tables import Job

log = logging.getLogger("amlemu.controller")
S = JobStatus
LIVE = (S.QUEUED.value, S.RUNNING.value, S.CANCEL_REQUESTED.value)
TAIL_CHARS = 2000


@dataclass(frozen=True)
class PodWork:
    job_key: str
    attempt: int
    kubeconfig: Path
    namespace: str
    name: str
    manifest: dict | None  # to create (a queued job's first pass)
    cancel: bool


@dataclass(frozen=True)
class PodSeen:
    work: PodWork
    state: kube.PodState | None  # None: the API server could not be asked
    log: str = ""
    problem: str | None = None


def _holds_pod(job: Job) -> bool:
    return any(r.get("pod") and r.get("state") in ("claimed", "running") for r in job.ranks.values())


class PodReconciler:
    def __init__(self, settings: Settings, store: Store, clock: Callable[[], datetime],
                 connect: Callable[[Path], kube.Cluster] = kube.Cluster):
        self.settings, self.store, self.clock, self.connect = settings, store, clock, connect

    def tick(self) -> None:
        with self.store.transaction() as repo:
            work = self._decide(repo)
        seen = [self._ask(item) for item in work]
        if seen:
            with self.store.transaction() as repo:
                for item in seen:
                    self._apply(repo, item, self.clock())

    def _decide(self, repo: Repository) -> list[PodWork]:
        work = []
        for compute in repo.computes():
            if compute.compute_type != "Kubernetes":
                continue
            config = kubernetes.kubeconfig_for(self.settings.data_dir, compute.body["properties"]["resourceId"])
            # a job cancelled while its pod waited went to Canceled at once: its pod is deleted still
            jobs = [j for j in repo.jobs_in((*LIVE, S.CANCELED.value), compute.key)
                    if j.status != S.CANCELED or _holds_pod(j)]
            if config is None or not jobs:
                continue
            spec = kubernetes.spec_of(compute)
            for job in jobs:
                attempt = max(job.attempt, 1)
                manifest = None
                if job.status == S.QUEUED and job.dispatched_at is None:
                    chosen = spec.resolve((job.body.get("resources") or {}).get("instanceType"), "instanceType")
                    manifest = pods.manifest(job.key, job.name, attempt, job.body, spec.namespace, chosen,
                                             self._image(repo, job))
                work.append(PodWork(job.key, attempt, config, spec.namespace, pods.pod_name(job.key, attempt),
                                    manifest, job.status in (S.CANCEL_REQUESTED, S.CANCELED)))
        return work

    @staticmethod
    def _image(repo: Repository, job: Job) -> str:
        """The environment's own image, which the cluster pulls (an image built here is on this machine only)."""
        environment = repo.asset_version(command_job.environment_key(job.body))
        declared = environment.body.get("properties", {}).get("image") if environment else None
        return declared or job.image

    def _ask(self, work: PodWork) -> PodSeen:
        try:
            cluster = self.connect(work.kubeconfig)
            if work.cancel:
                cluster.delete_pod(work.namespace, work.name)
                return PodSeen(work, kube.PodState("Gone"))
            if work.manifest is not None:
                cluster.create_pod(work.namespace, work.manifest)
            state = cluster.pod_state(work.namespace, work.name)
            ended = state.phase in ("Succeeded", "Failed")
            return PodSeen(work, state, cluster.pod_log(work.namespace, work.name) if ended else "")
        except kube.Unreachable as exc:
            log.warning("pod %s/%s: %s", work.namespace, work.name, exc)
            return PodSeen(work, None, problem=str(exc))

    def _apply(self, repo: Repository, seen: PodSeen, now: datetime) -> None:
        job, work = repo.job(seen.work.job_key), seen.work
        if job is None or max(job.attempt, 1) != work.attempt or seen.state is None:
            return  # gone, or the cluster did not answer: the next pass asks again
        if work.cancel:
            job.ranks = {"0": {"state": "ended", "pod": work.name}}  # the job reconciler cancels it now
            return
        if job.status not in LIVE:
            return  # moved on meanwhile
        if work.manifest is not None:
            job.attempt, job.dispatched_at = work.attempt, now
            job.ranks = {"0": {"state": "claimed", "pod": work.name}}
            self._log(job, [f"amlemu: pod {work.namespace}/{work.name} on the cluster of its kubeconfig"])
        phase = seen.state.phase
        if phase in ("Running", "Succeeded", "Failed") and job.status == S.QUEUED:
            transition(job, S.RUNNING, now)
            job.ranks = {"0": {"state": "running", "pod": work.name}}
        if phase == "Succeeded":
            self._log(job, [seen.log])
            job.ranks = {"0": {"state": "ended", "pod": work.name, "exit_code": 0}}
            transition(job, S.FINALIZING, now)
        elif phase in ("Failed", "Gone") and job.dispatched_at is not None:
            self._log(job, [seen.log])
            code = seen.state.exit_code
            why = "was deleted" if phase == "Gone" else f"failed ({seen.state.reason or 'Error'}, exit code {code})"
            job.error = {"code": "UserError", "innerError": {"code": "ExitCode", "exitCode": code},
                         "message": f"Pod {work.namespace}/{work.name} {why}. {seen.log[-TAIL_CHARS:]}".rstrip()}
            job.ranks = {"0": {"state": "ended", "pod": work.name, "exit_code": code}}
            transition(job, S.FAILED, now, job.error["message"])

    def _log(self, job: Job, lines: list[str]) -> None:
        """The job's std_log, where jobs.stream reads it."""
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines if line)
        if not text:
            return
        rel = f"{artifacts.directory(WorkspaceRef.from_key(job.workspace_key), job.name)}/{artifacts.log_name(0, 1)}"
        with confined.appending(self.settings.data_dir, rel, mode=0o644) as out:
            out.write(text)
