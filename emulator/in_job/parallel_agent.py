"""One rank's share of the parallel run: `concurrency` worker processes (parallel_worker.py), fed mini-batches this
rank claims in the shared folder, each tried again after an exception or a timeout as the rules say; a timed-out
worker is killed and a fresh one (init again) takes its place. Every outcome is recorded in the shared folder as it
comes, so a rank lost midway loses only the mini-batches it was running.

Logs, under Azure's names in the job's logs/: sys/node/<node>/<process>.txt (each mini-batch picked up and ended),
user/error.txt (one line per failed try), user/error/<node>/<process>.txt (their tracebacks).
"""

from __future__ import annotations  # the user's Python may be older than 3.10

import multiprocessing
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from multiprocessing.connection import wait

import amlemu_parallel_files as files
import amlemu_parallel_rules as rules
import amlemu_parallel_worker as worker


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


class Worker:
    """A worker process and its channel, as the agent sees them."""

    def __init__(self, context, number: str, config: dict):
        self.number, self.ready, self.task = number, False, None  # task: (batch, tries before, deadline, start)
        self.conn, child = context.Pipe()
        self.process = context.Process(target=worker.serve, args=(child, config), daemon=True)
        self.process.start()
        child.close()

    def give(self, batch: rules.MiniBatch, tries: int, timeout: float) -> None:
        started = time.monotonic()
        self.task = (batch, tries, started + timeout, started)
        self.conn.send(("run", batch.to_json()))

    def end(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(("stop",))
            except OSError:
                pass
        self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


class Agent:
    def __init__(self, folder: files.SharedFolder, plan: list[rules.MiniBatch], settings, node: str, config: dict,
                 judge: Callable[[list[rules.Outcome]], rules.Verdict], progressed: Callable[[], None]):
        """`settings`: the runner's arguments; `config`: what every worker is started with; `judge`: whether the
        outcomes so far pass a threshold; `progressed`: told after each outcome recorded."""
        self.folder, self.plan, self.settings, self.node, self.config = folder, plan, settings, node, config
        self.judge, self.progressed = judge, progressed
        self.context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this one inherited
        self.retries: deque = deque()
        self.cursor = 0
        self.init_error: str | None = None

    def _process(self, slot: int) -> str:
        return f"process{self.folder.rank * self.settings.concurrency + slot:03d}"

    def _start(self, number: str) -> Worker:
        logs = self.folder.logs / "user"
        config = {**self.config, "stdout": str(logs / "stdout" / self.node / f"{number}.stdout.txt"),
                  "stderr": str(logs / "stderr" / self.node / f"{number}.stderr.txt")}
        return Worker(self.context, number, config)

    def _log(self, number: str, text: str) -> None:
        files.append(self.folder.logs / "sys" / "node" / self.node / f"{number}.txt", f"{_stamp()} {text}\n")

    def run(self) -> str | None:
        """Work until nothing is left to claim (or a threshold is passed); the error when init() failed."""
        workers = [self._start(self._process(slot)) for slot in range(self.settings.concurrency)]
        try:
            while not self.init_error:
                self._feed(workers)
                live = [w for w in workers if not w.ready or w.task]
                if not live:
                    break
                deadlines = [w.task[2] for w in live if w.task]
                timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
                for conn in wait([w.conn for w in live], timeout):
                    self._heard(workers, next(w for w in workers if w.conn is conn))
                for index, each in enumerate(workers):
                    if each.task and time.monotonic() > each.task[2]:
                        workers[index] = self._timed_out(each)
        finally:
            for each in workers:
                each.end(kill=bool(each.task) or bool(self.init_error))
        return self.init_error

    def _stopping(self) -> bool:
        return self.judge(list(self.folder.outcomes().values())).stop

    def _next(self) -> tuple[rules.MiniBatch, int] | None:
        if self.retries:
            return self.retries.popleft()
        if self._stopping():
            return None
        while self.cursor < len(self.plan):
            batch = self.plan[self.cursor]
            self.cursor += 1
            if self.folder.claim(batch.index):
                return batch, 0
        return None

    def _feed(self, workers: list[Worker]) -> None:
        for each in workers:
            if each.ready and each.task is None:
                job = self._next()
                if job is None:
                    return
                self._log(each.number, f"mini batch {job[0].index}: picked up ({job[0].items} items, try {job[1] + 1})")
                each.give(job[0], job[1], self.settings.timeout)

    def _heard(self, workers: list[Worker], each: Worker) -> None:
        try:
            message = each.conn.recv()
        except (EOFError, OSError):  # the process died (os._exit, a signal, out of memory)
            each.process.join(timeout=5)
            died = f"The worker process ended (exit code {each.process.exitcode})"
            if each.task is None:  # before it was ready, or idle: nothing to retry, and nothing would work
                self._init_failed(each, f"{died} before it was ready.")
                return
            self._failed(each, f"{died} while running it.")
            workers[workers.index(each)] = self._replace(each)
            return
        if message[0] == "ready":
            each.ready = True
        elif message[0] == "init_failed":
            self._init_failed(each, message[1])
        elif message[0] == "done":
            batch, tries, _, started = each.task
            outcome = rules.Outcome(batch.index, batch.items, min(message[2], batch.items), tries + 1)
            self.folder.record(outcome, message[3])
            self.progressed()
            self._log(each.number, f"mini batch {batch.index}: completed, {outcome.succeeded} of {batch.items} "
                                   f"items succeeded in {time.monotonic() - started:.3f} s")
            each.task = None
        else:
            self._failed(each, message[2])

    def _init_failed(self, each: Worker, error: str) -> None:
        self.init_error = error
        files.append(self.folder.logs / "user" / "error.txt",
                     f"{_stamp()} {self.node}/{each.number}: init() failed: {_last_line(error)}\n")
        files.append(self.folder.logs / "user" / "error" / self.node / f"{each.number}.txt", error + "\n")

    def _timed_out(self, each: Worker) -> Worker:
        each.end(kill=True)
        self._failed(each, f"TimeoutError: run() took longer than the timeout ({self.settings.timeout:g} s); the "
                           "worker was killed and a new one started.")
        return self._replace(each)

    def _replace(self, each: Worker) -> Worker:
        if each.process.is_alive():
            each.end(kill=True)
        return self._start(each.number)

    def _failed(self, each: Worker, error: str) -> None:
        """A failed try: another if the rules allow, else the mini-batch's outcome is a failure."""
        batch, tries, _, _ = each.task
        tries += 1
        allowed = rules.tries_allowed(self.settings.max_retries)
        files.append(self.folder.logs / "user" / "error.txt", f"{_stamp()} mini batch {batch.index} (try {tries} of "
                     f"{allowed}) failed on {self.node}/{each.number}: {_last_line(error)}\n")
        files.append(self.folder.logs / "user" / "error" / self.node / f"{each.number}.txt",
                     f"{_stamp()} mini batch {batch.index}, try {tries}:\n{error}\n")
        self._log(each.number, f"mini batch {batch.index}: try {tries} failed")
        each.task = None
        if rules.try_again(tries, self.settings.max_retries):
            self.retries.append((batch, tries))
        else:
            self.folder.record(rules.Outcome(batch.index, batch.items, 0, tries, _last_line(error)), "")
            self.progressed()


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "failed"
