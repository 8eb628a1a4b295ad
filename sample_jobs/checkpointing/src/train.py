"""A toy training that survives preemption: it checkpoints to ./outputs, resumes from there, and on a
preemption notice (Azure Scheduled Events) or SIGTERM saves a checkpoint, tells the platform it may evict
the node now, and exits 143. The next attempt of the job resumes from the checkpoint and ends with exactly
the result an undisturbed run gives.

It fits y = a*x + b by full-batch gradient descent with momentum on a fixed synthetic data set. Standard
library only, so it runs on any image with Python 3.9+, here and in Azure:

- Scheduled Events come from IMDS at http://169.254.169.254 in Azure; amlemu sets AZUREML_EMU_IMDS_ENDPOINT
  to its own. Without either (a laptop), the job just runs.
- ./outputs is kept with the job and is there again for the next attempt.

Exit status: 0 when the training is done (or was done by an earlier attempt), 143 when it stopped early
after checkpointing (preemption notice or SIGTERM).
"""

import argparse
import http.client
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
import urllib.request

OUTPUTS = "outputs"
CHECKPOINT = os.path.join(OUTPUTS, "checkpoint.json")
RESULT = os.path.join(OUTPUTS, "result.json")
EVENTS_PATH = "/metadata/scheduledevents?api-version=2020-07-01"
STOPPED = 143  # 128 + SIGTERM, what a process stopped by SIGTERM reports

LEARNING_RATE, MOMENTUM = 0.01, 0.8
TRUE_A, TRUE_B = 2.5, -1.0


def log(message: str) -> None:
    # One write per line: print() writes the text and its newline separately, so the notice watcher's thread
    # could start its line in the middle of a step's.
    sys.stdout.write(f"{message}\n")
    sys.stdout.flush()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="training steps in all (default 60)")
    parser.add_argument("--step-seconds", type=float, default=0.5, help="simulated work per step (default 0.5)")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="checkpoint every K steps (default 5)")
    return parser.parse_args(argv)


# ---------------------------------------------------------------- the model


def make_data(n: int = 200, seed: int = 1234) -> list:
    rng = random.Random(seed)
    xs = [rng.uniform(-2.0, 2.0) for _ in range(n)]
    return [(x, TRUE_A * x + TRUE_B + rng.gauss(0.0, 0.3)) for x in xs]


def initial_state() -> dict:
    """Everything a step depends on: the parameters and the optimizer's velocities (plain floats)."""
    return {"step": 0, "a": 0.0, "b": 0.0, "velocity_a": 0.0, "velocity_b": 0.0, "loss": None}


def train_step(state: dict, data: list) -> dict:
    """One step of gradient descent with momentum on the mean squared error; returns the new state."""
    a, b, n = state["a"], state["b"], len(data)
    grad_a = sum(2.0 * (a * x + b - y) * x for x, y in data) / n
    grad_b = sum(2.0 * (a * x + b - y) for x, y in data) / n
    velocity_a = MOMENTUM * state["velocity_a"] - LEARNING_RATE * grad_a
    velocity_b = MOMENTUM * state["velocity_b"] - LEARNING_RATE * grad_b
    a, b = a + velocity_a, b + velocity_b
    loss = sum((a * x + b - y) ** 2 for x, y in data) / n
    return {"step": state["step"] + 1, "a": a, "b": b, "velocity_a": velocity_a, "velocity_b": velocity_b,
            "loss": loss}


# ---------------------------------------------------------------- checkpoints and the result


def save_checkpoint(state: dict) -> None:
    """Write the checkpoint atomically: a temp file in the same folder, then a rename over the old one, so a
    kill at any moment leaves either the old checkpoint or the new one, never half of one."""
    os.makedirs(OUTPUTS, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=OUTPUTS, prefix=".checkpoint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(state, f)  # json writes floats as repr(): they read back bit for bit
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, 0o644)  # mkstemp makes it 0600; let whoever collects outputs read it
        os.replace(temp, CHECKPOINT)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise
    log(f"checkpoint saved at step {state['step']}")


def load_checkpoint() -> dict:
    if not os.path.exists(CHECKPOINT):
        log("no checkpoint: starting from step 0")
        return initial_state()
    with open(CHECKPOINT) as f:
        state = json.load(f)
    log(f"resuming from step {state['step']} ({CHECKPOINT})")
    return state


def write_result(state: dict) -> None:
    """Write the result exactly once: exclusive create, so a later attempt never rewrites it."""
    result = {"a": state["a"], "b": state["b"], "loss": state["loss"], "steps": state["step"]}
    try:
        with open(RESULT, "x") as f:
            f.write(json.dumps(result))
    except FileExistsError:
        log(f"{RESULT} is already there (an earlier attempt wrote it); not writing it again")
        return
    log(f"done: a={state['a']:.6f} b={state['b']:.6f} loss={state['loss']:.6f}; result written to {RESULT}")


# ---------------------------------------------------------------- preemption notice


class Preemption:
    """Watches Scheduled Events in a background thread and records SIGTERM; the training loop asks
    `requested` at each step boundary."""

    def __init__(self, base: str, interval: float = 0.25):
        self.url = base.rstrip("/") + EVENTS_PATH
        self.interval = interval
        self.event = None  # the Preempt event seen, if any
        self.sigterm = False  # set by the signal handler: nothing else happens in a handler
        self.wake = threading.Event()  # cuts the simulated work short when the notice comes
        self._warned = False
        # IMDS must be reached directly, never through a proxy the environment may configure.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def requested(self) -> bool:
        return self.sigterm or self.event is not None

    def start(self) -> None:
        signal.signal(signal.SIGTERM, self._on_sigterm)
        threading.Thread(target=self._watch, name="scheduled-events", daemon=True).start()

    def _on_sigterm(self, signum, frame) -> None:
        self.sigterm = True

    def _watch(self) -> None:
        while self.event is None:
            try:
                self._poll()
            except (OSError, ValueError, http.client.HTTPException) as exc:
                if not self._warned:
                    self._warned = True
                    log(f"scheduled events not available at {self.url} ({exc}); carrying on without them")
            self.wake.wait(self.interval)

    def _poll(self) -> None:
        request = urllib.request.Request(self.url, headers={"Metadata": "true"})
        with self._opener.open(request, timeout=1) as response:
            document = json.load(response)
        for event in document.get("Events", []):
            if event.get("EventType") == "Preempt":
                log(f"preemption notice: event {event.get('EventId')}, not before {event.get('NotBefore')}")
                self.event = event
                self.wake.set()
                return

    def simulate_work(self, seconds: float) -> None:
        """Wait `seconds`, or less if a notice or SIGTERM comes. The wait is sliced because a signal handler
        may not safely wake a threading.Event, and a blocked wait does not return on a signal."""
        deadline = time.monotonic() + seconds
        while not self.requested:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.wake.wait(min(left, 0.05))

    def acknowledge(self) -> None:
        """Tell the platform it may evict now (StartRequests) rather than at NotBefore."""
        if self.event is None:  # SIGTERM may come before the watcher's next poll sees the notice: look once more
            try:
                self._poll()
            except (OSError, ValueError, http.client.HTTPException):
                pass
        if self.event is None:
            log("no Preempt event seen: nothing to acknowledge")
            return
        event_id = self.event.get("EventId")
        body = json.dumps({"StartRequests": [{"EventId": event_id}]}).encode()
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Metadata": "true", "Content-Type": "application/json"})
        try:
            with self._opener.open(request, timeout=2) as response:
                response.read()
        except (OSError, http.client.HTTPException) as exc:
            log(f"could not acknowledge event {event_id} ({exc}); the platform evicts at NotBefore")
            return
        log(f"acknowledged event {event_id}: the node may be evicted now")


# ---------------------------------------------------------------- main


def train(args: argparse.Namespace, preemption: Preemption) -> int:
    data = make_data()
    state = load_checkpoint()
    while state["step"] < args.steps:
        state = train_step(state, data)
        log(f"step {state['step']}/{args.steps}: loss {state['loss']:.10f}")
        preemption.simulate_work(args.step_seconds)
        if state["step"] >= args.steps:
            break  # done: the result follows, a preemption notice no longer matters
        if preemption.requested or state["step"] % args.checkpoint_every == 0:
            save_checkpoint(state)
        if preemption.requested:
            log("SIGTERM received" if preemption.sigterm else "stopping for the preemption notice")
            preemption.acknowledge()
            log(f"stopped at step {state['step']}; the next attempt resumes from {CHECKPOINT}")
            return STOPPED
    # The work is done: a stop signal from here on must not turn it into a failure. Python puts SIGTERM's
    # default action (death, 143) back while the interpreter exits, so a late SIGTERM would fail the attempt
    # after its result is written, and the job would run again for nothing. Ignoring it survives the exit.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    write_result(state)
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if os.path.exists(RESULT):
        log(f"{RESULT} is already there (an earlier attempt finished); nothing to do")
        return 0
    preemption = Preemption(os.environ.get("AZUREML_EMU_IMDS_ENDPOINT") or "http://169.254.169.254")
    preemption.start()
    return train(args, preemption)


if __name__ == "__main__":
    sys.exit(main())
