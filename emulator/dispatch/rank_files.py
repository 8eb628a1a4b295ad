"""Which files of the data directory a rank reads and writes, for a node that does not share the emulator's
data directory (a detached node, workers/file_sync.py): it fetches what the rank reads before it runs, sends
the log's new bytes while it runs, and sends back what it wrote before it reports the end.

The controller records each rank's scope in Redis when it sends the rank; the api answers a node from that
record (services/node_files.py), never from paths the node names, so a node can reach no file of another job.
"""

import json
from dataclasses import dataclass
from pathlib import PurePosixPath

import redis

from emulator import confined
from emulator.dispatch import job_container, protocol
from emulator.dispatch.protocol import Attempt

DEFAULT_MAX_BYTES = 32 << 30
# A detached node's environment: the controller writes it (controller/specs/nodes.py), the node reads it.
API_URL, TOKEN, CA, VOLUME = "AMLEMU_NODE_API_URL", "AMLEMU_NODE_TOKEN", "AMLEMU_NODE_API_CA", "AMLEMU_NODE_VOLUME"
# A job's pod on a Kubernetes cluster (controller/specs/pods.py makes it, workers/pod_files.py runs in it): its
# emptyDir as the pod's own containers see it, the rank's files under it at their paths in the data folder, and the
# environment that names the rank and the pod.
POD_ROOT, POD_DATA, POD_ATTEMPT, POD_NAME = "/amlemu", "data", "AMLEMU_POD_ATTEMPT", "AMLEMU_POD_NAME"


@dataclass(frozen=True)
class Scope:
    """Paths relative to the data directory: what the node may fetch, what it may send back, and its log."""
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    log_file: str
    max_bytes: int = DEFAULT_MAX_BYTES  # what it may send back: its disk limit (Settings.job_disk_limit_gb)

    def to_json(self) -> str:
        return json.dumps({"reads": self.reads, "writes": self.writes, "log_file": self.log_file,
                           "max_bytes": self.max_bytes})

    @classmethod
    def from_json(cls, raw: bytes | str) -> "Scope":
        data = json.loads(raw)
        return cls(tuple(data["reads"]), tuple(data["writes"]), data["log_file"], int(data["max_bytes"]))

    def may_write(self, rel: str) -> bool:
        """True if `rel` is one of the writable folders or lies inside one (the log is sent on its own)."""
        return inside(rel, self.writes)


def inside(rel: str, roots: tuple[str, ...]) -> bool:
    """True if `rel` is one of `roots` or lies inside one (refused if absolute or with '..')."""
    path = PurePosixPath(*confined.parts(rel))  # refuses '..' and absolute paths
    return any(path.is_relative_to(PurePosixPath(*confined.parts(root))) for root in roots)


def _own(attempt: Attempt, rel: str) -> bool:
    """Made on the node for the rank alone (its working directory, its copies of downloaded inputs)."""
    return PurePosixPath(rel).is_relative_to(job_container.rank_dir(attempt.workdir))


def scope(attempt: Attempt) -> Scope:
    """What the rank reads: its code snapshot, its mounts' sources (inputs, and the writable outputs an earlier
    attempt left: a rerun resumes from them) and its downloads' sources. What it writes: its writable mounts
    (outputs, logs, named outputs). Its own folder stays on the node; its log goes on its own."""
    reads = [*([attempt.code_dir] if attempt.code_dir else []),
             *(m.source for m in attempt.mounts if not _own(attempt, m.source)),
             *(source for source, _copy in attempt.downloads)]
    writes = [m.source for m in attempt.mounts if not m.read_only and not _own(attempt, m.source)]
    return Scope(tuple(dict.fromkeys(reads)), tuple(dict.fromkeys(writes)), attempt.log_file,
                 attempt.disk_limit_bytes or DEFAULT_MAX_BYTES)


def scope_key(job_key: str, attempt: int, rank: int) -> str:
    return f"amlemu:job:{protocol.job_tag(job_key)}:{attempt}:{rank}:files"


def log_sent_key(job_key: str, attempt: int, rank: int) -> str:
    """How many bytes of the rank's log (as the node has it) the api has appended."""
    return f"amlemu:job:{protocol.job_tag(job_key)}:{attempt}:{rank}:logsent"


def record(broker: redis.Redis, attempt: Attempt) -> None:
    broker.set(scope_key(attempt.job_key, attempt.attempt, attempt.rank), scope(attempt).to_json(),
               ex=protocol.CLAIM_TTL)


def recorded(broker: redis.Redis, job_key: str, attempt: int, rank: int) -> Scope | None:
    raw = broker.get(scope_key(job_key, attempt, rank))
    return Scope.from_json(raw) if raw else None


def claimed_by(broker: redis.Redis, job_key: str, attempt: int, rank: int) -> str | None:
    raw = broker.get(protocol.claim_key(job_key, attempt, rank))
    return raw.decode() if raw else None


def claim_for_pod(broker: redis.Redis, attempt: Attempt, pod: str) -> bool:
    """The controller's claim of a rank for a pod it makes (no node takes it from a queue: nothing races it); True
    when the rank is the pod's, now or from an earlier pass."""
    key = protocol.claim_key(attempt.job_key, attempt.attempt, attempt.rank)
    broker.set(key, pod, nx=True, ex=protocol.CLAIM_TTL)
    return broker.get(key) == pod.encode()
