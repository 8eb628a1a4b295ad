"""What the controller and the nodes say to each other through Redis, besides Celery's messages.

Dispatch is exactly-once in effect (semantics §11): every message carries (job, attempt, rank); the
controller marks which attempt is current, and a node runs a message only if it is the current attempt's
and nobody claimed that rank yet. Nodes report back on one stream that the controller reads through a
consumer group, so an event survives a controller restart until it is applied and acknowledged.
"""

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

RUN_TASK = "amlemu.run_attempt"
EVENTS = "amlemu:events"
GROUP = "controller"
DEAD_EVENTS = "amlemu:events:dead"  # events that failed MAX_DELIVERIES times: kept for a look, out of the way
MAX_DELIVERIES = 5
CLAIM_TTL = 30 * 24 * 3600
log = logging.getLogger("amlemu.protocol")

# Claim a rank of the current attempt: KEYS = current, claim, the node's notice; ARGV = attempt, node, ttl.
# -1: the node is under a preemption notice and takes no more work.
_CLAIM = """
if redis.call('EXISTS', KEYS[3]) == 1 then return -1 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', tonumber(ARGV[3])) and 1 or 0
"""
CLAIMED, STALE, DRAINING = 1, 0, -1


@dataclass(frozen=True)
class Mount:
    source: str  # relative to the data directory
    target: str  # path in the job container
    read_only: bool = False


@dataclass(frozen=True)
class Attempt:
    """One rank of one attempt of a job: everything a node needs to run it."""
    job_key: str
    job_name: str
    attempt: int
    rank: int
    world_size: int
    image: str
    command: str
    env: dict[str, str]
    labels: dict[str, str]
    container_name: str
    cpus: float | None
    memory_bytes: int | None
    gpus: int
    network: str | None
    user: str | None
    workdir: str  # relative to the data directory: the code snapshot is copied here
    code_dir: str | None  # relative to the data directory
    log_file: str  # relative to the data directory
    notes: list[str] = field(default_factory=list)
    mounts: list[Mount] = field(default_factory=list)
    make_dirs: list[str] = field(default_factory=list)  # relative to the data directory
    # Inputs in download mode: (what, where) relative to the data directory; the node copies each file or folder
    # there (a copy of the job's own, mounted writable) before the job starts.
    downloads: list[tuple[str, str]] = field(default_factory=list)
    sandbox_pool: str | None = None  # the cluster's pool of network namespaces, for a one-node job
    # Bounds the node watches (Settings.job_*): the engine holds the processes at pids_limit; the node stops a job
    # that stays there pids_sustain_seconds, or whose files pass disk_limit_bytes (measured every so often).
    pids_limit: int | None = None
    pids_sustain_seconds: float = 5.0
    disk_limit_bytes: int | None = None
    disk_check_seconds: float = 5.0

    def to_message(self) -> dict:
        return asdict(self)

    @classmethod
    def from_message(cls, data: dict) -> "Attempt":
        return cls(**{**data, "mounts": [Mount(**m) for m in data.get("mounts", [])],
                      "downloads": [tuple(d) for d in data.get("downloads", [])]})


def job_tag(job_key: str) -> str:
    return hashlib.sha256(job_key.lower().encode()).hexdigest()[:16]


def current_key(job_key: str) -> str:
    return f"amlemu:job:{job_tag(job_key)}:current"


def claim_key(job_key: str, attempt: int, rank: int) -> str:
    return f"amlemu:job:{job_tag(job_key)}:{attempt}:{rank}:claim"


def set_current(broker: redis.Redis, job_key: str, attempt: int) -> None:
    broker.set(current_key(job_key), str(attempt))


def clear_current(broker: redis.Redis, job_key: str) -> None:
    """No attempt of the job may start any more (cancelled, requeued, ended)."""
    broker.delete(current_key(job_key))


def is_current(broker: redis.Redis, job_key: str, attempt: int) -> bool:
    return broker.get(current_key(job_key)) == str(attempt).encode()


def claim(broker: redis.Redis, attempt: Attempt, node_id: str) -> int:
    """CLAIMED, STALE (not the current attempt, or claimed already) or DRAINING (this node is being preempted)."""
    keys = [current_key(attempt.job_key), claim_key(attempt.job_key, attempt.attempt, attempt.rank),
            notice_key(node_id)]
    return int(broker.eval(_CLAIM, 3, *keys, str(attempt.attempt), node_id, CLAIM_TTL))


# A rank's container is started once, by whoever takes its stage key first: the controller, ahead of time, for a
# job sent while every node is busy, or the node that claims the rank. "staging" expires (a stager that died
# mid-way lets the node take over); "staged" lasts as long as a claim.
STAGING, STAGED = b"staging", b"staged"
STAGING_TTL = 120


def stage_key(attempt: Attempt) -> str:
    return f"amlemu:job:{job_tag(attempt.job_key)}:{attempt.attempt}:{attempt.rank}:stage"


def take_stage(broker: redis.Redis, attempt: Attempt) -> bool:
    """True if the caller is to lay out the rank and start its container."""
    return bool(broker.set(stage_key(attempt), STAGING, nx=True, ex=STAGING_TTL))


def mark_staged(broker: redis.Redis, attempt: Attempt) -> None:
    broker.set(stage_key(attempt), STAGED, ex=CLAIM_TTL)


def drop_stage(broker: redis.Redis, attempt: Attempt) -> None:
    broker.delete(stage_key(attempt))


def stage_state(broker: redis.Redis, attempt: Attempt) -> bytes | None:
    return broker.get(stage_key(attempt))


# Network sandboxes: containers that only hold a network namespace on the jobs network, pooled per cluster. A
# one-node job borrows a free one and shares its namespace (as a job shares its VM's network), which spares
# the engine making a namespace per job, its costliest step. The controller keeps each pool's size and puts back
# every sandbox no job container names once its lease (taken with it) has run out.
SANDBOX_LEASE_SECONDS = 60
SANDBOX_SETTLE_SECONDS = 5
_TAKE_SANDBOX = """
local name = redis.call('SPOP', KEYS[1])
if name then redis.call('SET', ARGV[1] .. name, '1', 'EX', tonumber(ARGV[2])) end
return name
"""
_PUT_BACK = """
if redis.call('EXISTS', ARGV[1] .. ARGV[2]) == 1 then return 0 end
return redis.call('SADD', KEYS[1], ARGV[2])
"""
_RELEASE = """
redis.call('DEL', ARGV[1] .. ARGV[2])
return redis.call('SADD', KEYS[1], ARGV[2])
"""
_LEASE = "amlemu:sandbox:lease:"


def sandbox_pool_key(pool: str) -> str:
    return f"amlemu:sandboxes:{pool}:free"


def take_sandbox(broker: redis.Redis, pool: str) -> str | None:
    name = broker.eval(_TAKE_SANDBOX, 1, sandbox_pool_key(pool), _LEASE, SANDBOX_LEASE_SECONDS)
    return name.decode() if name else None


def settle_sandbox_lease(broker: redis.Redis, name: str) -> None:
    """The job container that took it exists now and names it: the lease need only outlast a controller pass
    that listed containers just before."""
    broker.expire(_LEASE + name, SANDBOX_SETTLE_SECONDS)


def put_back_sandbox(broker: redis.Redis, pool: str, name: str) -> None:
    """Free again, unless it was taken a moment ago (its job container may not be listed yet)."""
    broker.eval(_PUT_BACK, 1, sandbox_pool_key(pool), _LEASE, name)


def release_sandbox(broker: redis.Redis, pool: str, name: str) -> None:
    """Its job container is removed: free at once, not after the lease runs out (that alone made the pool too
    small for one-second jobs, and the rest made namespaces of their own)."""
    broker.eval(_RELEASE, 1, sandbox_pool_key(pool), _LEASE, name)


def free_sandboxes(broker: redis.Redis, pool: str) -> set[str]:
    return {name.decode() for name in broker.smembers(sandbox_pool_key(pool))}


def withdraw_sandbox(broker: redis.Redis, pool: str, name: str) -> bool:
    """True if the sandbox was free and now nobody can take it."""
    return bool(broker.srem(sandbox_pool_key(pool), name))


IMDS_PORT = 80  # where a node serves its Scheduled Events (workers/imds.py) on the jobs network
IMDS_PATH = "/metadata/scheduledevents"


def imds_endpoint(node_container: str) -> str:
    """Where a node's jobs reach its Scheduled Events: the node, by name."""
    return f"http://{node_container}:{IMDS_PORT}"


def notice_key(node_id: str) -> str:
    """The node's Scheduled Events document while it has a notice (the controller writes it)."""
    return f"amlemu:node:{node_id}:scheduledevents"


def publish_notice(broker: redis.Redis, node_id: str, document: dict | None) -> None:
    if document is None:
        broker.delete(notice_key(node_id))
    else:
        broker.set(notice_key(node_id), json.dumps(document))


def read_notice(broker: redis.Redis, node_id: str) -> dict | None:
    raw = broker.get(notice_key(node_id))
    return json.loads(raw) if raw else None


def acknowledge(broker: redis.Redis, node_id: str, event_ids: list[str]) -> None:
    """A StartRequests POST on the node: the controller takes the node now instead of at NotBefore."""
    broker.xadd(EVENTS, {"event": json.dumps({"kind": "preempt_ack", "node": node_id, "events": event_ids})})


def resilient(url: str) -> redis.Redis:
    """A client that rides out a Redis restart instead of dropping what it was saying."""
    retry = Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=60)
    return redis.Redis.from_url(url, retry=retry, retry_on_error=[RedisConnectionError, RedisTimeoutError])


def report(broker: redis.Redis, kind: str, attempt: Attempt, node_id: str, **details) -> None:
    event = {"kind": kind, "job": attempt.job_key, "attempt": attempt.attempt, "rank": attempt.rank,
             "node": node_id, **details}
    broker.xadd(EVENTS, {"event": json.dumps(event)})


def report_for_lost_node(broker: redis.Redis, job_key: str, attempt: int, rank: int, exit_code: int) -> None:
    """What a rank's node would have reported had it lived: its command's exit status, read off the status file
    once its container is gone (so that work finished as the node died is not run again)."""
    event = {"kind": "ended", "job": job_key, "attempt": attempt, "rank": rank, "node": "", "exit_code": exit_code,
             "oom": False, "tail": "", "error": None}
    broker.xadd(EVENTS, {"event": json.dumps(event)})


def nudge(broker: redis.Redis) -> None:
    """Wake the controller: there is work it should not wait its interval for."""
    broker.xadd(EVENTS, {"event": json.dumps({"kind": "wake"})})


def ensure_group(broker: redis.Redis) -> None:
    try:
        broker.xgroup_create(EVENTS, GROUP, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def consume(broker: redis.Redis, consumer: str, apply: Callable[[dict], None], block_ms: int = 0) -> int:
    """Apply pending events first (left by a pass that stopped mid-way or failed to apply them), then new ones.
    An event is acknowledged only once applied: one that fails stays pending and is tried again at the next pass,
    and after MAX_DELIVERIES failures it moves to DEAD_EVENTS (logged) so that it cannot hold up the rest."""
    ensure_group(broker)
    applied = 0
    for start in ("0", ">"):
        batches = broker.xreadgroup(GROUP, consumer, {EVENTS: start}, count=500,
                                    block=block_ms if start == ">" and block_ms else None)
        failed: list[tuple[bytes, dict]] = []
        for _stream, entries in batches or []:
            for entry_id, fields in entries:
                if fields:  # a pending entry already deleted has no fields
                    try:
                        apply(json.loads(fields[b"event"]))
                    except Exception:  # noqa: BLE001 (left pending; the ones behind it still go)
                        log.exception("could not apply event %s: tried again at the next pass", fields)
                        failed.append((entry_id, fields))
                        continue
                broker.xack(EVENTS, GROUP, entry_id)
                broker.xdel(EVENTS, entry_id)
                applied += 1
        if start == "0" and failed:
            _bury(broker, consumer, failed)
    return applied


def _bury(broker: redis.Redis, consumer: str, failed: list[tuple[bytes, dict]]) -> None:
    """Events delivered MAX_DELIVERIES times without being applied go to DEAD_EVENTS, then are acknowledged."""
    ids = {entry_id for entry_id, _ in failed}
    pending = broker.xpending_range(EVENTS, GROUP, min="-", max="+", count=len(failed) + 500, consumername=consumer)
    worn = {p["message_id"] for p in pending if p["message_id"] in ids and p["times_delivered"] >= MAX_DELIVERIES}
    for entry_id, fields in failed:
        if entry_id in worn:
            log.error("event %s failed %d times: moved to %s", fields, MAX_DELIVERIES, DEAD_EVENTS)
            broker.xadd(DEAD_EVENTS, fields, maxlen=1000)
            broker.xack(EVENTS, GROUP, entry_id)
            broker.xdel(EVENTS, entry_id)
