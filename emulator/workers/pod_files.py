"""A job's files in its pod on a real Kubernetes cluster (controller/specs/pods.py makes the pod): the pod's own
containers of the emulator's image do for it what a detached node does (workers/file_sync.py), over HTTPS to the
api with the pod's own token, which its job container never sees.

- `pod-fetch`, the init container: fetches what the rank reads (its code snapshot, inputs, the CA bundle) into the
  pod's emptyDir and lays it out as a node does; the job container then mounts each part where Azure puts it.
- `pod-follow`, beside the job: sends the log's new bytes as they come (`ml_client.jobs.stream` shows them live)
  and what the job wrote every few seconds, and the rest once the job's shell has written its exit status; then it
  ends, and with it the pod.
- `pod-fetch-serving`, a model server's init container: fetches its code and model, which its server mounts
  read-only (controller/specs/serving_pods.py).
"""

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from emulator.dispatch import job_container, rank_files
from emulator.dispatch.protocol import Attempt
from emulator.errors import EmulatorError
from emulator.workers import file_sync

log = logging.getLogger("amlemu.pod")
EXIT_POLL_SECONDS = 0.25
FINAL_SEND_SECONDS = 40.0  # within the controller's grace for a pod whose job ended (reconcilers/pods.py)
RETRY_SECONDS = 1.0


def fetch(attempt: Attempt, files: file_sync.FileSync, data_dir: Path) -> None:
    """As a detached node before a rank: the workspace's files, then its folders laid out (made writable for the
    job's unprivileged user, its code copied to its working directory)."""
    files.fetch(attempt)
    job_container.lay_out(attempt, data_dir)


def follow(attempt: Attempt, files: file_sync.FileSync, data_dir: Path, stopping: threading.Event | None = None,
           clock: Callable[[], float] = time.monotonic) -> None:
    """Send the rank's log and outputs while it runs, the rest once its exit status is written: tried again for a
    while if the api does not answer (restarting, say), within the controller's grace for the pod."""
    exit_file = data_dir / attempt.workdir / job_container.EXIT
    uploads = file_sync.Uploads(files, attempt)
    stopping = stopping or threading.Event()
    while job_container.recorded(exit_file) is None and not stopping.wait(EXIT_POLL_SECONDS):
        pass
    deadline = clock() + FINAL_SEND_SECONDS
    while True:
        try:
            uploads.stop()
            return
        except file_sync.Stale:
            raise
        except (httpx.HTTPError, EmulatorError) as exc:
            if clock() >= deadline:
                raise
            log.warning("could not send the job's last files yet (%s): trying again", exc)
            stopping.wait(RETRY_SECONDS)


def main(step: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    attempt = Attempt.from_message(json.loads(os.environ[rank_files.POD_ATTEMPT]))
    data_dir = Path(rank_files.POD_ROOT) / rank_files.POD_DATA
    data_dir.mkdir(parents=True, exist_ok=True)
    files = file_sync.from_env(os.environ[rank_files.POD_NAME], data_dir)
    if files is None:
        sys.exit(f"amlemu: the pod's environment lacks {file_sync.TOKEN}")
    try:
        if step == "pod-fetch":
            fetch(attempt, files, data_dir)
        elif step == "pod-fetch-serving":
            files.fetch(attempt)
        else:
            follow(attempt, files, data_dir)
    except file_sync.Stale as exc:
        sys.exit(f"amlemu: {exc}")
