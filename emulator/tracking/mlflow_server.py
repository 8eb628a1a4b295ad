"""The `mlflow` package's own server (the compose service `mlflow`), run with workspaces on: one MLflow workspace
per Azure ML workspace, named in the X-MLFLOW-WORKSPACE header of every call."""

import json
import threading
from dataclasses import dataclass
from typing import Any

import httpx

from emulator.errors import RuntimeUnavailable

WORKSPACE_HEADER = "X-MLFLOW-WORKSPACE"
API = "/api/2.0/mlflow"


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    media_type: str

    def json(self) -> Any:
        return json.loads(self.body) if self.body else {}


class MlflowServer:
    def __init__(self, base_url: str, timeout: float = 30.0):
        self.http = httpx.Client(base_url=base_url, timeout=timeout)
        self.known: set[str] = set()  # MLflow workspaces made (or found) since this process started
        self.lock = threading.Lock()

    def close(self) -> None:
        self.http.close()

    def answers(self, timeout: float = 2.0) -> bool:
        """Its /health answers: a fresh stack's server takes a while (its store's migrations) to start listening."""
        try:
            return self.http.get("/health", timeout=timeout).status_code == 200
        except httpx.HTTPError:
            return False

    def call(self, workspace: str, method: str, path: str, params: list[tuple[str, str]] | None = None,
             body: Any = None) -> Answer:
        """`path` under the server's root (`/api/2.0/mlflow/...`); `body` a JSON value or None."""
        self._ensure_workspace(workspace)
        return self._send(method, path, params, body, {WORKSPACE_HEADER: workspace})

    def _send(self, method: str, path: str, params, body, headers: dict[str, str]) -> Answer:
        if body is not None:
            headers = {**headers, "Content-Type": "application/json"}
        try:
            answer = self.http.request(method, path, params=params, headers=headers,
                                       content=None if body is None else json.dumps(body))
        except httpx.HTTPError as exc:
            raise RuntimeUnavailable(f"The MLflow tracking server ({self.http.base_url}) did not answer: {exc}. "
                                     "Is the stack's mlflow service running? (`docker compose ps`)") from exc
        return Answer(answer.status_code, answer.content, answer.headers.get("content-type", "application/json"))

    def _ensure_workspace(self, workspace: str) -> None:
        if workspace in self.known:
            return
        with self.lock:
            made = self._send("POST", "/api/3.0/mlflow/workspaces", None, {"name": workspace}, {})
            if made.status >= 400 and b"RESOURCE_ALREADY_EXISTS" not in made.body:
                raise RuntimeUnavailable(f"The MLflow tracking server refused workspace {workspace}: "
                                         f"{made.body[:300].decode(errors='replace')}")
            self.known.add(workspace)

    def experiment_id(self, workspace: str, name: str) -> str:
        """The experiment of that name, made if there is none."""
        found = self.call(workspace, "GET", f"{API}/experiments/get-by-name", [("experiment_name", name)])
        if found.status == 200:
            return found.json()["experiment"]["experiment_id"]
        made = self.call(workspace, "POST", f"{API}/experiments/create", body={"name": name})
        if made.status == 200:
            return made.json()["experiment_id"]
        again = self.call(workspace, "GET", f"{API}/experiments/get-by-name", [("experiment_name", name)])
        if again.status != 200:  # made meanwhile by another request, or refused
            raise RuntimeUnavailable(f"MLflow could not make experiment {name!r}: {made.body[:300]!r}")
        return again.json()["experiment"]["experiment_id"]

    def create_run(self, workspace: str, experiment_id: str, run_name: str, start_time_ms: int,
                   tags: dict[str, str]) -> str:
        made = self.call(workspace, "POST", f"{API}/runs/create",
                         body={"experiment_id": experiment_id, "run_name": run_name, "start_time": start_time_ms,
                               "tags": [{"key": k, "value": v} for k, v in tags.items()]})
        if made.status != 200:
            raise RuntimeUnavailable(f"MLflow could not make the run: {made.body[:300]!r}")
        return made.json()["run"]["info"]["run_id"]

    def delete_run(self, workspace: str, run_id: str) -> None:
        self.call(workspace, "POST", f"{API}/runs/delete", body={"run_id": run_id})

    def metric_history(self, workspace: str, run_id: str, key: str) -> list[float]:
        """The values logged for a run's metric, in the order they were logged (by step, then time)."""
        return [value for _, value in self.metric_points(workspace, run_id, key)]

    def metric_points(self, workspace: str, run_id: str, key: str) -> list[tuple[int, float]]:
        """(step, value) of each value logged for a run's metric, by step, then time."""
        found = self.call(workspace, "GET", f"{API}/metrics/get-history",
                          [("run_id", run_id), ("metric_key", key), ("max_results", "25000")])
        if found.status != 200:
            raise RuntimeUnavailable(f"MLflow could not read metric {key!r} of run {run_id}: {found.body[:300]!r}")
        points = sorted(found.json().get("metrics", []), key=lambda p: (int(p.get("step", 0)), int(p.get("timestamp", 0))))
        return [(int(p.get("step", 0)), float(p["value"])) for p in points]

    def run_data(self, workspace: str, run_id: str) -> dict:
        """A run's `data`: its latest metrics, params and tags (MLflow's runs/get)."""
        found = self.call(workspace, "GET", f"{API}/runs/get", [("run_id", run_id)])
        if found.status != 200:
            raise RuntimeUnavailable(f"MLflow could not read run {run_id}: {found.body[:300]!r}")
        return found.json().get("run", {}).get("data", {})
