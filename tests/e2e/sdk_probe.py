"""Runs inside a venv holding one azure-ai-ml release: a cluster's life, a command job on it streamed to its end, and
a model (model_probe's flow); prints what the SDK saw as JSON, or the failing SDK call (sdk_calls.py).

Usage: python sdk_probe.py NAME WORK_DIR  (connection from the `amlemu env` variables)
"""

import json
import os
import sys
from pathlib import Path

from azure.ai.ml import command
from azure.ai.ml.entities import AmlCompute, Environment

from tests.e2e.model_probe import model_flow
from tests.e2e.sdk_calls import ml_client, run
from tests.waiting import wait_until  # stdlib only: importable from any venv with the repo on the path


def field(obj, snake: str, camel: str):
    """1.33/1.34 fill snake_case attributes, 1.35 the wire (camelCase) ones."""
    value = getattr(obj, snake, None)
    return value if value is not None else obj.__dict__.get(camel)


def main(name: str, work: str) -> None:
    ml = ml_client()
    out = {"workspace": ml.workspaces.get(os.environ["AMLEMU_WORKSPACE"]).name}
    cluster = ml.compute.begin_create_or_update(AmlCompute(
        name=name, size="Standard_DS2_v2", tier="low_priority", min_instances=1, max_instances=2,
        idle_time_before_scale_down=60)).result()
    out["created"] = [type(cluster).__name__, cluster.provisioning_state, cluster.size, cluster.tier,
                      cluster.min_instances, cluster.max_instances, cluster.idle_time_before_scale_down]
    out["listed"] = name in [c.name for c in ml.compute.list()]

    def idle_nodes():
        states = [field(n, "node_state", "nodeState") for n in ml.compute.list_nodes(name)]
        return states if states and set(states) == {"idle"} else None

    out["nodes"] = wait_until(idle_nodes, timeout=60, message="idle nodes")
    sizes = {s.name: s for s in ml.compute.list_sizes(compute_type="AmlCompute")}
    out["ds2"] = [field(sizes["Standard_DS2_v2"], "v_cp_us", "vCPUs"), sizes["Standard_DS2_v2"].gpus]
    out["usages"] = len(list(ml.compute.list_usage()))
    out["job"] = _job(ml, name, Path(work))
    cluster.max_instances = 3
    out["updated_max"] = ml.compute.begin_update(cluster).result().max_instances
    ml.compute.begin_delete(name).result()
    out["deleted"] = name not in [c.name for c in ml.compute.list()]
    model = Path(work) / "weights.bin"
    model.write_bytes(bytes(range(256)))
    out["model"] = model_flow(ml, str(model), f"{name}-model", str(Path(work) / "down"))
    print("\n" + json.dumps(out))  # jobs.stream and the pollers print without a final newline


def _job(ml, cluster: str, work: Path) -> list:
    """A command job on the cluster's idle node, streamed to its end (a job already ended by then streams no log):
    its status, and what its log said, downloaded."""
    job = ml.jobs.create_or_update(command(
        command="python -c \"print('probe says', 6 * 7)\"", environment=Environment(image="python:3.11-slim"),
        compute=cluster, display_name="sdk-probe"))
    ml.jobs.stream(job.name)
    ml.jobs.download(job.name, download_path=str(work / "job"), all=True)
    logs = [p.read_text() for p in (work / "job").rglob("*.txt")]
    return [ml.jobs.get(job.name).status, any("probe says 42" in log for log in logs)]


if __name__ == "__main__":
    run(main, sys.argv[1], sys.argv[2])
