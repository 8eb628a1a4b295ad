"""`python -m emulator api|controller|node|scoring`: the emulator's own long-running processes; `pod-fetch` and
`pod-follow`: a job's files in its pod on a Kubernetes cluster, `pod-fetch-serving` a model server's
(workers/pod_files.py)."""

import logging
import os
import sys
import threading
import time
from pathlib import Path

from emulator.ownership import run_as_data_owner
from emulator.settings import Settings

log = logging.getLogger("amlemu")
POD_STEPS = ("pod-fetch", "pod-follow", "pod-fetch-serving")
USAGE = "usage: python -m emulator api|controller|node|scoring|pod-fetch|pod-follow|pod-fetch-serving"
SERVICES = ("api", "controller", "scoring")  # the compose services; nodes run as the controller starts them


def _api(settings: Settings) -> None:
    import uvicorn

    from emulator import pki
    from emulator.api.app import create_app

    cert, key = pki.issue_server_cert(settings.ca_dir, [*settings.served_hosts, "*.blob.localhost"])
    pki.write_jobs_bundle(settings.data_dir)
    _await_reconcile_pass(settings)
    uvicorn.run(create_app(settings, wake=_waker(settings)), host=settings.listen_host, port=settings.listen_port,
                ssl_certfile=str(cert), ssl_keyfile=str(key), log_level="info", access_log=False,
                timeout_graceful_shutdown=3)  # a Studio page's open event stream must not hold a restart


def _await_reconcile_pass(settings: Settings) -> None:
    """Serve only once the controller has reconciled since this start, so no client sees node or job states
    nobody has checked (after a restart of the whole stack, say). A controller that does not come within
    `controller_wait_seconds` is said in the log, and the api serves all the same."""
    started, alive, limit = time.time(), settings.controller_alive, settings.controller_wait_seconds
    if not limit:
        return
    deadline = time.monotonic() + limit
    log.info("waiting for the controller's first reconcile pass")
    while not (alive.exists() and alive.stat().st_mtime >= started):
        if time.monotonic() >= deadline:
            log.warning("the controller has not reconciled within %g s; serving without it", limit)
            return
        threading.Event().wait(0.05)


def _waker(settings: Settings):
    import redis

    from emulator.dispatch import protocol

    broker = redis.Redis.from_url(settings.redis_url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def wake() -> None:
        try:
            protocol.nudge(broker)
        except redis.RedisError:  # the controller's next pass finds the work all the same
            pass
    return wake


def _controller(settings: Settings) -> None:
    from emulator.controller.main import run

    run(settings)


def _scoring(settings: Settings) -> None:
    """The scoring router of online endpoints: plain HTTP on its own port, as Azure's scoring URLs are HTTPS
    of their own (no management token involved)."""
    import uvicorn

    from emulator.scoring.app import create_router

    uvicorn.run(create_router(settings), host=settings.listen_host, port=settings.scoring_listen_port,
                log_level="warning", access_log=False, loop="uvloop", http="httptools")


def _node(settings: Settings) -> None:
    from emulator.workers.node import run

    run(os.environ["AMLEMU_NODE_ID"], os.environ["AMLEMU_QUEUE"], settings, int(os.environ.get("AMLEMU_SLOTS", "1")))


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in POD_STEPS:  # a pod's own container on a Kubernetes cluster: no settings, no data folder
        from emulator.workers import pod_files

        pod_files.main(argv[0])
        return
    commands = {"api": _api, "controller": _controller, "node": _node, "scoring": _scoring}
    if len(argv) != 1 or argv[0] not in commands:
        sys.exit(USAGE)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if argv[0] in SERVICES:
        run_as_data_owner(settings.data_dir, Path(settings.docker_socket))
    commands[argv[0]](settings)
