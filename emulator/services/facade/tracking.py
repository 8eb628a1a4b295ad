"""MLflow tracking behind the workspace's tracking URI: the caller's token checked, the workspace mapped to its
MLflow workspace, a job's name made its MLflow run (created the first time it is named), and the answer told as
Azure tells it (domain/jobs/tracking.py)."""

import json
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError

from emulator import tokens
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import tracking
from emulator.domain.jobs.command_job import DEFAULT_EXPERIMENT
from emulator.errors import BadRequest, NotFound, RuntimeUnavailable
from emulator.services import tracking_models, workspaces
from emulator.services.facade.base import Service
from emulator.store.tables import Job, TrackedExperiment, TrackedRun, Workspace
from emulator.tracking.mlflow_server import API, Answer, MlflowServer

PREVIEW = "/api/2.0/preview/mlflow/runs/"  # Azure's two routes beside MLflow's own


def _ms(moment: datetime | None) -> int | None:
    return int(moment.timestamp() * 1000) if moment else None


class Tracking(Service):
    def __init__(self, settings, store, secret, clock, server: MlflowServer):
        super().__init__(settings, store, secret, clock)
        self.server = server

    def ready(self) -> None:
        """Tracking can be served: a stack's jobs log to MLflow from their first line, as in Azure."""
        if not self.server.answers():
            raise RuntimeUnavailable(f"The MLflow tracking server ({self.server.http.base_url}) does not answer yet: "
                                     "a fresh stack's takes a while to start. If it goes on, see "
                                     "`docker compose logs mlflow`.")

    def authorize(self, ref: WorkspaceRef, authorization: str | None) -> dict | None:
        """A job's run token opens its own workspace's tracking (its claims); anything else needs a management
        token (None: the caller checks its role)."""
        return tokens.workspace_caller(self.secret, authorization, ref.key, tokens.management_audiences(self.settings.own_urls))

    def call(self, ref: WorkspaceRef, method: str, path: str, params: list[tuple[str, str]], body: bytes,
             host: str) -> Answer:
        """`path`: what follows the workspace in the URL (`/api/2.0/mlflow/runs/get`); `host`: the host the caller
        reached (artifact URIs name it, so a job and the user's machine each get one they can reach)."""
        if not tracking.forwarded(path):
            raise NotFound(f"No MLflow tracking route {path[:200]!r}: the workspace's tracking URI serves "
                           "/api/2.0/mlflow/... and Azure ML's preview routes.")
        with self.store.reading() as repo:  # every metric logged comes here: no writer lock to read
            workspace = workspaces.get(repo, ref)
        space = tracking.mlflow_workspace(workspace.key)
        message = self._json(body)
        if path.startswith(PREVIEW):
            return self._preview(space, workspace, path, message)
        if route := tracking.registry_route(path):
            with self.in_workspace(ref) as (repo, _):
                return tracking_models.serve(repo, ref, route, dict(params), message if isinstance(message, dict)
                                             else None, self.clock(), self.settings.data_dir)
        asked = tracking.experiment_ids(message) | {v for k, v in params if k in tracking.EXPERIMENT_ID_KEYS}
        experiments = self._experiments_of(workspace, space, asked)
        if path.endswith("/runs/search"):
            self._every_job_run(workspace, space, experiments)
        names = tracking.run_ids(message) | {v for k, v in params if k in tracking.RUN_ID_KEYS}
        to_mlflow = self._runs_of(workspace, space, names)
        answer = self.server.call(space, method, path, tracking.renamed_params(params, to_mlflow, experiments),
                                  None if message is None else tracking.renamed(message, to_mlflow, experiments))
        return self._told(workspace, space, answer, host)

    @staticmethod
    def _json(body: bytes) -> Any:
        if not body:
            return None
        try:
            return json.loads(body)
        except ValueError as exc:
            raise BadRequest(f"The request body is not JSON: {exc}", code="INVALID_PARAMETER_VALUE") from exc

    def _preview(self, space: str, workspace: Workspace, path: str, message: Any) -> Answer:
        """log-batch-async logs at once (nothing is left to wait for: the status route says so)."""
        if path.endswith("/log-batch-async") and isinstance(message, dict):
            to_mlflow = self._runs_of(workspace, space, tracking.run_ids(message))
            logged = self.server.call(space, "POST", f"{API}/runs/log-batch",
                                      body=tracking.renamed(message, to_mlflow))
            if logged.status != 200:
                return logged
            return Answer(200, b'{"batch_tracking_id": ""}', "application/json")
        if path.endswith("/get-run-data-status"):
            return Answer(200, b'{"is_complete": true}', "application/json")
        return Answer(404, b'{"error_code": "ENDPOINT_NOT_FOUND", "message": "No such preview route."}',
                      "application/json")

    def _experiments_of(self, workspace: Workspace, space: str, guids: set[str]) -> dict[str, str]:
        """{experiment GUID: MLflow's id} for the GUIDs that are experiments of the workspace, made in MLflow if
        new. An id that is no GUID of ours is MLflow's own, passed on as it is."""
        with self.store.reading() as repo:
            rows = {guid: row for guid in guids if (row := repo.tracked_experiment(workspace.key, guid))}
        return {guid: row.mlflow_id or self._made_experiment(workspace, space, row.name) for guid, row in rows.items()}

    def _mlflow_experiment(self, workspace: Workspace, space: str, name: str) -> str:
        with self.store.reading() as repo:
            row = repo.tracked_experiment(workspace.key, tracking.experiment_guid(workspace.key, name))
        return row.mlflow_id if row is not None and row.mlflow_id else self._made_experiment(workspace, space, name)

    def _made_experiment(self, workspace: Workspace, space: str, name: str) -> str:
        """MLflow's id of the workspace's experiment `name` (made there if new), recorded beside its GUID."""
        mlflow_id = self.server.experiment_id(space, name)
        self._record(workspace, name, mlflow_id, live=True)
        return mlflow_id

    def _record(self, workspace: Workspace, name: str, mlflow_id: str, live: bool) -> bool:
        """Whether `mlflow_id` is now the GUID's; `live`: MLflow's experiment of that name now, which replaces a
        deleted one of the same name (a deleted one found later keeps MLflow's id)."""
        key = TrackedExperiment.key_of(workspace.key, tracking.experiment_guid(workspace.key, name))
        try:
            with self.store.transaction() as repo:
                row = repo.session.get(TrackedExperiment, key)
                if row is None:
                    repo.add(TrackedExperiment(key=key, workspace_key=workspace.key, name=name, mlflow_id=mlflow_id))
                elif live or row.mlflow_id is None:
                    row.mlflow_id = mlflow_id
                return row is None or row.mlflow_id == mlflow_id
        except IntegrityError:  # another request recorded it meanwhile
            return False

    def _every_job_run(self, workspace: Workspace, space: str, experiments: dict[str, str]) -> None:
        """A search lists every job of the experiments searched, as Azure does: a job that never logged gets its
        run now."""
        with self.store.reading() as repo:
            names = {row.name for guid in experiments if (row := repo.tracked_experiment(workspace.key, guid))}
            jobs = {job.name for job in repo.jobs(workspace.key)
                    if (job.body.get("experimentName") or DEFAULT_EXPERIMENT) in names
                    and repo.tracked_run(job.key) is None}
        self._runs_of(workspace, space, jobs)

    def _runs_of(self, workspace: Workspace, space: str, names: set[str]) -> dict[str, str]:
        """{job name: its MLflow run id} for the names that are jobs of the workspace, each run made if new."""
        found = {}
        for name in names:
            key = f"{workspace.key}/jobs/{name}".lower()
            with self.store.reading() as repo:
                job, run = repo.job(key), repo.tracked_run(key)
                if job is None:
                    continue
                if run is not None:
                    found[name] = run.run_id
                    continue
                experiment = job.body.get("experimentName") or DEFAULT_EXPERIMENT
                title, created = job.body.get("displayName") or job.name, _ms(job.created_at)
            found[name] = self._new_run(workspace, space, key, experiment, title, created)
        return found

    def _new_run(self, workspace: Workspace, space: str, key: str, experiment: str, title: str, created: int) -> str:
        """The MLflow calls go outside the transaction; a run another request made meanwhile wins."""
        experiment_id = self._mlflow_experiment(workspace, space, experiment)
        run_id = self.server.create_run(space, experiment_id, title, created, {"mlflow.runName": title})
        try:
            with self.store.transaction() as repo:
                repo.add(TrackedRun(key=key, workspace_key=workspace.key, run_id=run_id,
                                    experiment_id=experiment_id, created_at=self.clock()))
            return run_id
        except IntegrityError:
            self.server.delete_run(space, run_id)
            with self.store.transaction() as repo:
                return repo.tracked_run(key).run_id

    def _told(self, workspace: Workspace, space: str, answer: Answer, host: str) -> Answer:
        if not answer.media_type.startswith("application/json") or not answer.body:
            return answer
        message = answer.json()
        experiments = self._guids_of(workspace, space, tracking.experiment_ids(message))
        ids = tracking.run_ids(message)
        names, jobs = {}, {}
        with self.store.reading() as repo:
            for run in repo.tracked_runs_by_mlflow_id(workspace.key, ids) if ids else []:
                job = repo.job(run.key)
                if job is not None:
                    names[run.run_id], jobs[job.name] = job.name, self._job_truth(job)
        message = tracking.renamed(message, names, experiments)
        arm_id = WorkspaceRef.of(workspace).arm_id
        for info in tracking.run_infos(message):
            tracking.told(info, lambda e, r: tracking.artifact_uri(host, arm_id, e, r), jobs.get(info["run_id"]))
        return Answer(answer.status, json.dumps(message).encode(), "application/json")

    def _guids_of(self, workspace: Workspace, space: str, mlflow_ids: set[str]) -> dict[str, str]:
        """{MLflow's experiment id: its GUID}; an experiment made through MLflow directly is recorded now."""
        with self.store.reading() as repo:
            rows = repo.tracked_experiments_by_mlflow_id(workspace.key, mlflow_ids) if mlflow_ids else []
            known = {row.mlflow_id: tracking.experiment_guid(workspace.key, row.name) for row in rows}
        for mlflow_id in mlflow_ids - known.keys():
            found = self.server.call(space, "GET", f"{API}/experiments/get", [("experiment_id", mlflow_id)])
            name = found.json()["experiment"]["name"] if found.status == 200 else None
            if name is not None and self._record(workspace, name, mlflow_id, live=False):
                known[mlflow_id] = tracking.experiment_guid(workspace.key, name)
        return known

    @staticmethod
    def _job_truth(job: Job) -> dict:
        return {"status": job.status, "start_time": _ms(job.started_at or job.created_at),
                "end_time": _ms(job.ended_at)}
