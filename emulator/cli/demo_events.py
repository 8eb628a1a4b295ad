"""The demo's event lines come from the platform's own event timeline, followed as the Studio's timeline page
follows it: each line is an event the platform recorded once (its kind and id are on the line), not something the
demo inferred from two polls. `EventFollower` reads the workspace's stream (`/_emulator/events/stream`, resumed with
Last-Event-ID when the connection drops) on a thread of its own; `describe` (pure) words an event as a line."""

import contextlib
import json
import queue
import threading
from collections.abc import Iterator

import httpx
from rich.text import Text

from emulator.domain import events as kinds

RECONNECT_SECONDS = 0.5
STREAM_TIMEOUT = httpx.Timeout(10.0, read=60.0)  # the api sends a keep-alive line every 15 s of quiet


class EventFollower:
    """The workspace's events after id `after`, in order, queued for the demo's next tick. `rest`: a client of its
    own (an httpx.Client), which the thread alone uses and stop() closes."""

    def __init__(self, rest, workspace_path: str, after: int):
        self.rest, self.workspace_path, self.last = rest, workspace_path, after
        self.arrived: queue.SimpleQueue[dict] = queue.SimpleQueue()
        self.stopped = threading.Event()
        self._response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._follow, name="amlemu-demo-events", daemon=True)

    @classmethod
    def from_now(cls, rest, workspace_path: str) -> "EventFollower":
        """Following what happens from now on: after the workspace's newest event."""
        response = rest.get("/_emulator/events", params={"workspace": workspace_path, "limit": 1, "newest": True})
        response.raise_for_status()
        follower = cls(rest, workspace_path, response.json()["last"] or 0)
        follower._thread.start()
        return follower

    def drain(self) -> list[dict]:
        found = []
        with contextlib.suppress(queue.Empty):
            while True:
                found.append(self.arrived.get_nowait())
        return found

    def stop(self) -> None:
        self.stopped.set()
        with contextlib.suppress(Exception):  # closing them from here ends the thread's blocked read
            if self._response is not None:
                self._response.close()
            self.rest.close()

    def _follow(self) -> None:
        while not self.stopped.is_set():
            try:
                with self.rest.stream("GET", "/_emulator/events/stream", params={"workspace": self.workspace_path},
                                      headers={"Last-Event-ID": str(self.last)}, timeout=STREAM_TIMEOUT) as response:
                    self._response = response
                    if response.status_code == 200:
                        for event in frames(response.iter_lines()):
                            self.arrived.put(event)
                            self.last = event["id"]
            except Exception:  # noqa: BLE001 - dropped (an api restart, or stop()): resume after the last id
                pass
            self.stopped.wait(RECONNECT_SECONDS)


def frames(lines: Iterator[str]) -> Iterator[dict]:
    """The events of a server-sent-event stream: each frame's `data:` line holds the whole event as JSON."""
    for line in lines:
        if line.startswith("data:"):
            yield json.loads(line[5:].strip())


NODE_WORDS = {kinds.NODE_ADDED: "preparing", kinds.NODE_UP: "idle", kinds.NODE_LEAVING: "leaving",
              kinds.NODE_PREEMPTED: "preempted", kinds.NODE_UNUSABLE: "unusable", kinds.NODE_GONE: "gone"}


def describe(event: dict, node_label, job_label) -> str | None:
    """An event of the demo's cluster or jobs as a line; None for what is not the demo's. `node_label(node_id)` and
    `job_label(job_name)` give the short names the strips use (None: not the demo's)."""
    kind, data = event["kind"], event.get("data") or {}
    job = job_label(event["subject"].rsplit("/jobs/", 1)[-1]) if "/jobs/" in event["subject"] else None
    if kind in NODE_WORDS or kind == kinds.NODE_NOTICE:
        node = node_label(data["node"])
        ran = job_label(data["job"]) if data.get("job") else None
        if kind == kinds.NODE_NOTICE:
            return f"node {node} preemption notice" + (f" (running {ran})" if ran else "")
        return f"node {node} {NODE_WORDS[kind]}" + (f" ({ran})" if ran else "")
    if kind == kinds.CLUSTER_SCALED:
        return f"cluster target {data.get('previous')} -> {data.get('target')} node(s)"
    if job is None:
        return None
    attempt = int(data.get("attempt") or 0)
    if kind == kinds.JOB_STATUS:
        return f"job {job} {data.get('status')}" + (f", attempt {attempt}" if attempt > 1 else "")
    if kind == kinds.JOB_ATTEMPT:
        where = f"node {node_label(data['node'])}" if data.get("node") else "a node"
        return f"{where} running ({job}" + (f", attempt {attempt})" if attempt > 1 else ")")
    if kind == kinds.JOB_REQUEUED:
        why = " after a preemption" if data.get("preempted") else ""
        return f"job {job} back in the queue{why}, as attempt {attempt}"
    return f"job {job} {kind}"


def event_line(started: float, line: tuple[float, str, str]) -> Text:
    """`  12.3 s  node n1 preempted (#1)  [node.preempted #812]`: the platform event's kind and id, if it is one."""
    t, words, source = line
    text = Text(f"{t - started:6.1f} s  ", style="dim").append(words)
    return text.append(f"  [{source}]", style="dim") if source else text
