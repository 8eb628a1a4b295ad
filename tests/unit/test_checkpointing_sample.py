"""sample_jobs/checkpointing/src/train.py as its own processes, no Docker: it checkpoints, resumes with
bit-identical results, reacts to a Preempt scheduled event (served by a fake IMDS here) and to SIGTERM by
checkpointing, acknowledging and exiting 143, and writes its result exactly once."""

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.waiting import wait_until

TRAIN = Path(__file__).resolve().parents[2] / "sample_jobs" / "checkpointing" / "src" / "train.py"
STEPS = 20
ARGS = ["--steps", str(STEPS), "--step-seconds", "0.05", "--checkpoint-every", "2"]
EVENTS_PATH = "/metadata/scheduledevents"
EVENT_ID = "C1BF8322-6F9F-4D2B-9B39-2C0A5A0B8C11"
PREEMPT = {"EventId": EVENT_ID, "EventType": "Preempt", "ResourceType": "VirtualMachine",
           "Resources": ["node-1"], "EventStatus": "Scheduled", "NotBefore": "Tue, 09 Aug 2022 17:07:32 GMT",
           "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}


class FakeScheduledEvents:
    """IMDS's Scheduled Events endpoint: 400 without `Metadata: true`, a document whose Events the test sets,
    and a record of what was POSTed (the StartRequests)."""

    def __init__(self):
        self.events: list = []
        self.gets = 0
        self.posts: list = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _checked(self) -> bool:
                if self.path.split("?")[0] != EVENTS_PATH or "api-version=" not in self.path:
                    self.send_error(404)
                    return False
                if self.headers.get("Metadata") != "true":
                    self.send_error(400, "Bad request: required metadata header not specified")
                    return False
                return True

            def do_GET(self):
                if not self._checked():
                    return
                with fake.lock:
                    fake.gets += 1
                    body = json.dumps({"DocumentIncarnation": 1 + len(fake.events), "Events": fake.events})
                self._reply(body.encode())

            def do_POST(self):
                if not self._checked():
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fake.lock:
                    fake.posts.append(json.loads(body))
                self._reply(b"")

            def _reply(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format, *args):  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def set_events(self, events: list) -> None:
        with self.lock:
            self.events = list(events)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Run:
    """train.py running in `workdir`, its output collected line by line as it comes."""

    def __init__(self, workdir: Path, imds_url: str, args=ARGS):
        env = {**os.environ, "AZUREML_EMU_IMDS_ENDPOINT": imds_url, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([sys.executable, str(TRAIN), *args], cwd=workdir, env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def last_step(self) -> int:
        steps = [int(line.split()[1].split("/")[0]) for line in list(self.lines) if line.startswith("step ")]
        return max(steps, default=0)

    def wait_for_step(self, step: int) -> None:
        wait_until(lambda: self.last_step() >= step or self.process.poll() is not None, timeout=10, interval=0.01,
                   message=f"step {step}")
        assert self.process.poll() is None, f"ended before step {step}:\n{self.output}"

    def finish(self, timeout: float = 10) -> int:
        try:
            code = self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=5)
        return code


def workdir(path: Path) -> Path:
    (path / "outputs").mkdir(parents=True)
    return path


def result(path: Path) -> dict:
    return json.loads((path / "outputs" / "result.json").read_text())


@pytest.fixture
def imds():
    fake = FakeScheduledEvents()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    """One run with nothing in its way: its workdir, Run, exit code, and the GETs and POSTs the fake IMDS saw."""
    fake = FakeScheduledEvents()
    try:
        wd = workdir(tmp_path_factory.mktemp("undisturbed"))
        run = Run(wd, fake.url)
        code = run.finish()
        return wd, run, code, fake.gets, fake.posts
    finally:
        fake.close()


def test_undisturbed_run_writes_its_result_once(undisturbed):
    wd, run, code, gets, posts = undisturbed
    assert code == 0, run.output
    assert "no checkpoint: starting from step 0" in run.output
    assert run.last_step() == STEPS
    assert run.output.count("result written to outputs/result.json") == 1
    assert result(wd)["steps"] == STEPS and set(result(wd)) == {"a", "b", "loss", "steps"}
    assert json.loads((wd / "outputs" / "checkpoint.json").read_text())["step"] == STEPS - 2  # every 2 steps, not at the end
    assert gets > 0 and posts == []  # it did ask for scheduled events (with the Metadata header), acknowledged none
    assert not [p for p in (wd / "outputs").iterdir() if p.name.startswith(".")]  # no temp file left behind


def test_preempt_event_checkpoints_acknowledges_and_the_next_attempt_resumes_identically(tmp_path, imds,
                                                                                         undisturbed):
    wd = workdir(tmp_path)
    first = Run(wd, imds.url)
    first.wait_for_step(4)
    imds.set_events([PREEMPT])
    assert first.finish() == 143, first.output
    assert f"preemption notice: event {EVENT_ID}, not before {PREEMPT['NotBefore']}" in first.output
    assert imds.posts == [{"StartRequests": [{"EventId": EVENT_ID}]}]
    assert f"acknowledged event {EVENT_ID}" in first.output
    stopped_at = json.loads((wd / "outputs" / "checkpoint.json").read_text())["step"]
    assert 4 <= stopped_at < STEPS and f"checkpoint saved at step {stopped_at}" in first.output
    assert first.last_step() == stopped_at  # checkpointed at the step boundary right after the notice
    assert not (wd / "outputs" / "result.json").exists()

    imds.set_events([])  # the next attempt, on a fresh node
    second = Run(wd, imds.url)
    assert second.finish() == 0, second.output
    assert f"resuming from step {stopped_at}" in second.output
    assert f"step {stopped_at + 1}/{STEPS}:" in second.output and f"step {stopped_at}/{STEPS}:" not in second.output
    assert result(wd) == result(undisturbed[0])
    assert len(imds.posts) == 1


def test_sigterm_checkpoints_and_the_rerun_resumes_identically(tmp_path, imds, undisturbed):
    wd = workdir(tmp_path)
    first = Run(wd, imds.url)
    first.wait_for_step(4)
    first.process.send_signal(signal.SIGTERM)
    assert first.finish() == 143, first.output
    assert "SIGTERM received" in first.output and "nothing to acknowledge" in first.output
    assert imds.posts == []  # no Preempt event was seen, so none is acknowledged
    stopped_at = json.loads((wd / "outputs" / "checkpoint.json").read_text())["step"]
    assert 4 <= stopped_at < STEPS and first.last_step() == stopped_at

    second = Run(wd, imds.url)
    assert second.finish() == 0, second.output
    assert f"resuming from step {stopped_at}" in second.output
    assert result(wd) == result(undisturbed[0])


def test_an_existing_result_is_not_rewritten(tmp_path, imds, undisturbed):
    wd = workdir(tmp_path)
    (wd / "outputs" / "result.json").write_text((undisturbed[0] / "outputs" / "result.json").read_text())
    path = wd / "outputs" / "result.json"
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = (path.read_bytes(), path.stat().st_mtime_ns)

    rerun = Run(wd, imds.url)
    assert rerun.finish() == 0, rerun.output
    assert "already there" in rerun.output and rerun.last_step() == 0
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_a_result_that_appears_while_running_is_not_overwritten(tmp_path, imds):
    """An earlier attempt wrote the result but was killed before it exited: the exclusive create keeps it."""
    wd = workdir(tmp_path)
    path = wd / "outputs" / "result.json"
    run = Run(wd, imds.url)
    run.wait_for_step(4)
    path.write_text('{"written": "by an earlier attempt"}')
    assert run.finish() == 0, run.output
    assert run.last_step() == STEPS and "already there" in run.output
    assert path.read_text() == '{"written": "by an earlier attempt"}'


def test_runs_without_scheduled_events(tmp_path, undisturbed):
    """On a laptop there is no IMDS: one warning, then the job runs as if undisturbed."""
    wd = workdir(tmp_path)
    closed = FakeScheduledEvents()
    closed.close()  # a port nothing listens on any more
    run = Run(wd, closed.url)
    assert run.finish() == 0, run.output
    assert run.output.count("scheduled events not available") == 1
    assert result(wd) == result(undisturbed[0])


def test_a_sigterm_once_the_result_is_written_does_not_fail_the_run(tmp_path, imds):
    """Python puts SIGTERM's default action back while it exits: a notice landing then would turn a finished
    attempt into a failed one (143) that runs again. Signalled without pause from the result to its end, it
    still ends 0."""
    wd = workdir(tmp_path)
    run = Run(wd, imds.url)
    wait_until(lambda: (wd / "outputs" / "result.json").exists() or run.process.poll() is not None, timeout=10,
               interval=0.001, message="the result")
    while run.process.poll() is None:
        run.process.send_signal(signal.SIGTERM)
    assert run.finish() == 0, run.output
    assert run.output.count("result written to outputs/result.json") == 1
