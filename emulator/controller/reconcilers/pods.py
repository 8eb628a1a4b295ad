"""Jobs on Kubernetes compute whose cluster a user's kubeconfig reaches: each runs as one pod in the compute's
namespace (controller/specs/pods.py), and its status follows the pod's (Pending: Queued, Running, Succeeded:
Completed, Failed). Its files travel as a detached node's do, by the pod's own containers of the emulator's image:
the controller records the rank's scope and claims the rank for the pod before it is made, so the api gives and
takes the rank's files to the pod's token alone, while the attempt is current.

Decide, act, commit: the jobs are read in one transaction, the API server is called outside any (it may be slow or
gone), and what it said is written in a second one. Every pass is level-based: a pod made but not recorded (a crash
between the two) is found again by its name, which the job's key and attempt fix."""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import redis

from emulator import confined, tokens
from emulator.controller.scheduling.scheduler import code_dir
from emulator.controller.specs import job_ranks, pods
from emulator.dispatch import job_container, protocol, rank_files
from emulator.dispatch.protocol import Attempt
from emulator.domain.compute.cluster import ClusterSpec, parse_scale
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
FOLLOW_GRACE_SECONDS = 60.0  # a job container that ended without its shell's exit status (killed): its files' last send


@dataclass(frozen=True)
class PodWork:
    job_key: str
    attempt: int
    kubeconfig: Path
    namespace: str
    name: str
    manifest: dict | None  # to create (a queued job's first pass)
    rank: Attempt | None  # the rank the pod runs, recorded and claimed for it before it is made
    cancel: bool
    overdue: bool = False  # its job container ended a while ago and the pod still runs: it is deleted


@dataclass(frozen=True)
class PodSeen:
    work: PodWork
    state: kube.PodState | None  # None: the API server could not be asked
    problem: str | None = None
    logs: dict[str, str] | None = None  # the logs of the pod's own containers that failed, by name


def _holds_pod(job: Job) -> bool:
    return any(r.get("pod") and r.get("state") in ("claimed", "running") for r in job.ranks.values())


class PodReconciler:
    def __init__(self, settings: Settings, store: Store, clock: Callable[[], datetime], broker: redis.Redis,
                 secret: bytes, run_token: Callable[[Job], str] = lambda job: "",
                 connect: Callable[[Path], kube.Cluster] = kube.Cluster):
        """`run_token`: the job's own token for its MLflow tracking (the scheduler's)."""
        self.settings, self.store, self.clock, self.broker, self.secret = settings, store, clock, broker, secret
        self.run_token, self.connect = run_token, connect

    def tick(self) -> None:
        with self.store.transaction() as repo:
            work = self._decide(repo, self.clock())
        seen = [self._ask(item) for item in work]
        if seen:
            with self.store.transaction() as repo:
                for item in seen:
                    self._apply(repo, item, self.clock())

    def _decide(self, repo: Repository, now: datetime) -> list[PodWork]:
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
                attempt, name = max(job.attempt, 1), pods.pod_name(job.key, max(job.attempt, 1))
                rank = manifest = None
                if job.status == S.QUEUED and job.dispatched_at is None:
                    chosen = spec.resolve((job.body.get("resources") or {}).get("instanceType"), "instanceType")
                    rank = self._rank(repo, job, attempt, ClusterSpec(chosen.size(), "Dedicated", parse_scale(None)))
                    manifest = pods.manifest(rank, spec.namespace, chosen, self._files(name),
                                             command_job.spec_of(job.body).timeout_seconds)
                ended_at = (job.ranks.get("0") or {}).get("job_ended_at")
                overdue = ended_at is not None and \
                    (now - datetime.fromisoformat(ended_at)).total_seconds() >= FOLLOW_GRACE_SECONDS
                work.append(PodWork(job.key, attempt, config, spec.namespace, name, manifest, rank,
                                    job.status in (S.CANCEL_REQUESTED, S.CANCELED) or overdue, overdue))
        return work

    def _rank(self, repo: Repository, job: Job, attempt: int, cluster: ClusterSpec) -> Attempt:
        """The job's one rank, as a node on another machine runs it (the api reached at its nodes' address); the
        cluster's own GPUs are the instance type's to give, and its image the environment's own (what the
        emulator noted of the image it would run here does not apply)."""
        ref = WorkspaceRef.of(repo.workspace(job.workspace_key))
        (rank,) = job_ranks.ranks(job.key, job.name, attempt, job.body, ref, cluster, self.settings,
                                  self._image(repo, job), [], code_dir(repo, ref, job), True,
                                  run_token=self.run_token(job), remote=True)
        return rank

    def _files(self, pod: str) -> pods.PodFiles:
        return pods.PodFiles(self.settings.node_image, self.settings.node_api_url,
                             tokens.node_token(self.secret, pod), (self.settings.ca_dir / "ca.crt").read_text())

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
                state = cluster.pod_state(work.namespace, work.name) if work.overdue else kube.PodState("Gone")
                cluster.delete_pod(work.namespace, work.name)
                return PodSeen(work, state)
            if work.rank is not None:
                self._claim(work.rank, work.name)
                cluster.create_pod(work.namespace, work.manifest)
            state = cluster.pod_state(work.namespace, work.name)
            failed = {name: cluster.pod_log(work.namespace, work.name, name) for name, ended in state.ended.items()
                      if name != pods.JOB and ended.exit_code != 0}
            return PodSeen(work, state, logs=failed)
        except (kube.Unreachable, redis.RedisError) as exc:
            log.warning("pod %s/%s: %s", work.namespace, work.name, exc)
            return PodSeen(work, None, problem=str(exc))

    def _claim(self, rank: Attempt, pod: str) -> None:
        """The rank made current, its files' scope recorded and the rank claimed for the pod: what the api checks
        before it gives or takes the pod's files. Claimed already by this pod: an earlier pass that did not commit."""
        protocol.set_current(self.broker, rank.job_key, rank.attempt)
        rank_files.record(self.broker, rank)
        if not rank_files.claim_for_pod(self.broker, rank, pod):
            raise kube.Unreachable(f"rank 0 of attempt {rank.attempt} is claimed by another: the pod is not made")

    def _apply(self, repo: Repository, seen: PodSeen, now: datetime) -> None:
        job, work = repo.job(seen.work.job_key), seen.work
        if job is None or max(job.attempt, 1) != work.attempt or seen.state is None:
            return  # gone, or the cluster did not answer: the next pass asks again
        if work.cancel and (not work.overdue or job.status != S.RUNNING):  # deleted: cancelled, or over already
            job.ranks = {"0": {"state": "ended", "pod": work.name}}  # the job reconciler cancels it now
            return
        if job.status not in LIVE:
            return  # moved on meanwhile
        if work.manifest is not None:
            job.attempt, job.dispatched_at = work.attempt, now
            job.ranks = {"0": {"state": "claimed", "pod": work.name}}
            self._log(job, [f"amlemu: pod {work.namespace}/{work.name} on the cluster of its kubeconfig"])
        state, ranks = seen.state, dict(job.ranks.get("0") or {"pod": work.name})
        if fresh := [line for line in state.held if line not in ranks.get("held", [])]:  # said once each
            self._log(job, [f"amlemu: pod {work.namespace}/{work.name} {line}" for line in fresh])
            ranks["held"] = [*ranks.get("held", []), *fresh]
        if state.phase in ("Running", "Succeeded", "Failed") and job.status == S.QUEUED:
            transition(job, S.RUNNING, now)
            ranks["state"] = "running"
        ran = state.ended.get(pods.JOB)
        if ran is not None and "job_ended_at" not in ranks:
            ranks["job_ended_at"] = now.isoformat()
        job.ranks = {"0": ranks}
        if state.phase in ("Succeeded", "Failed", "Gone") or work.overdue:
            self._end(job, work, state, ran, seen.logs or {}, now)

    def _end(self, job: Job, work: PodWork, state: kube.PodState, ran: kube.Ended | None, logs: dict[str, str],
             now: datetime) -> None:
        if state.phase == "Gone" and job.dispatched_at is None:
            return
        code = ran.exit_code if ran is not None else None
        job.ranks = {"0": {"state": "ended", "pod": work.name, "exit_code": code}}
        why = _failure(work, state, ran, logs)
        if why is None:
            transition(job, S.FINALIZING, now)
            return
        self._log(job, [text for text in logs.values()])
        tail = job_container.tail(self.settings.data_dir / self._log_rel(job)) if code else ""
        job.error = {"code": "UserError" if code else "SystemError",
                     "innerError": {"code": "ExitCode", "exitCode": code},
                     "message": f"Pod {work.namespace}/{work.name} {why}. {tail}".rstrip()}
        transition(job, S.FAILED, now, job.error["message"])

    @staticmethod
    def _log_rel(job: Job) -> str:
        return f"{artifacts.directory(WorkspaceRef.from_key(job.workspace_key), job.name)}/{artifacts.log_name(0, 1)}"

    def _log(self, job: Job, lines: list[str]) -> None:
        """The job's std_log, where jobs.stream reads it."""
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines if line)
        if text:
            with confined.appending(self.settings.data_dir, self._log_rel(job), mode=0o644) as out:
                out.write(text)


def _failure(work: PodWork, state: kube.PodState, ran: kube.Ended | None, logs: dict[str, str]) -> str | None:
    """Why the job failed, or None when it succeeded: the pod's own reason (DeadlineExceeded, Evicted), else its
    command's exit, else the first of the pod's own containers that failed (the files could not be fetched or sent
    back)."""
    if state.phase == "Gone":
        return "was deleted"
    if state.reason:
        return f"failed ({state.reason})"
    if ran is not None and ran.exit_code != 0:
        return f"failed ({ran.reason or 'Error'}, exit code {ran.exit_code})"
    for name in logs:
        what = "fetch the job's files" if name == pods.FETCH else "send the job's log and outputs back"
        return f"could not {what} ({name} exit code {state.ended[name].exit_code})"
    if ran is None:
        return "failed (its job container did not run)"
    return "failed" if state.phase == "Failed" else None  # an overdue pod whose job ended well: its files are in
