"""A job's script that logs an MLflow metric by MLflow's REST API, for images without mlflow: where and as whom from
what Azure ML sets in a job (MLFLOW_TRACKING_URI, MLFLOW_RUN_ID, MLFLOW_TRACKING_TOKEN, SSL_CERT_FILE); and the
workspace's MLflow made ready for the test that reads the metric back."""

from tests.waiting import wait_until


def log_metric(key: str, value: float) -> str:
    """Python source that logs `key` = `value` on the job's run, prints "logged <key>", and exits non-zero with
    MLflow's answer if it is refused. A 503 (the stack's MLflow server still starting, on a fresh stack) is tried
    again with backoff for a minute, as mlflow's own client retries it (MLFLOW_HTTP_REQUEST_MAX_RETRIES)."""
    return f'''import json, os, ssl, time, urllib.error, urllib.request
uri = os.environ["MLFLOW_TRACKING_URI"].replace("azureml://", "https://", 1) + "/api/2.0/mlflow/runs/log-metric"
body = {{"run_id": os.environ["MLFLOW_RUN_ID"], "key": {key!r}, "value": {value!r}, "step": 0,
        "timestamp": int(time.time() * 1000)}}
request = urllib.request.Request(uri, data=json.dumps(body).encode(), method="POST", headers={{
    "Authorization": "Bearer " + os.environ["MLFLOW_TRACKING_TOKEN"], "Content-Type": "application/json"}})
context, deadline, pause = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"]), time.monotonic() + 60, 1
while True:
    try:
        urllib.request.urlopen(request, context=context).read()
        break
    except urllib.error.HTTPError as exc:
        if exc.code != 503 or time.monotonic() >= deadline:
            raise SystemExit(f"MLflow answered {{exc.code}}: {{exc.read()[:500]!r}}")
        pause = min(pause, max(deadline - time.monotonic(), 0.1))
        print(f"MLflow answered 503; trying again in {{pause:.0f}} s")
        time.sleep(pause)
        pause *= 2
print("logged {key}")
'''


def _answers() -> bool:
    """The stack's MLflow server is up (a fresh stack's may still be starting: the api answers 503 until then)."""
    import mlflow

    try:
        mlflow.search_experiments(max_results=1)
    except Exception as exc:  # noqa: BLE001 (whatever the client raises while the server starts)
        raise AssertionError(str(exc)) from exc
    return True


def track(ml_client) -> None:
    """mlflow pointed at the workspace (through the azureml-mlflow plugin), once its server answers."""
    import mlflow

    mlflow.set_tracking_uri(ml_client.workspaces.get(ml_client.workspace_name).mlflow_tracking_uri)
    wait_until(_answers, timeout=120, interval=1, message="the workspace's MLflow to answer")
