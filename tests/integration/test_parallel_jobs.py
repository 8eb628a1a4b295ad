"""The parallel runner on real containers: a command job made by parallel.command_body runs on two nodes of a
cluster (two workers on each) in the python stand-in image, scores every file once into predictions.csv and writes
Azure's logs; over its threshold it fails naming the mini-batches; preempted midway on a low-priority cluster, it
requeues as a whole and its next attempt scores only what had no result."""

import uuid
from dataclasses import replace

from emulator.domain.jobs import parallel
from emulator.domain.storage import datastores
from emulator.services import jobs, preemption
from tests.integration.lab import now

FILES = 16
SCORE = """
import os, time
from pathlib import Path

def init():
    print("init", os.getpid(), "model dir:", os.environ.get("AZUREML_MODEL_DIR"), flush=True)

def run(mini_batch):
    names = [os.path.basename(p) for p in mini_batch]
    fd = os.open("outputs/scored.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, "".join(n + "\\n" for n in names).encode())
    os.close(fd)
    if any(n.startswith("bad") for n in names):
        raise ValueError(f"cannot score {names}")
    time.sleep(float(os.environ.get("SECONDS_PER_BATCH", "0")))
    return [f"{n} {Path(p).read_text().strip()}" for n, p in zip(names, mini_batch)]
"""
SETTINGS = parallel.ParallelSettings(
    entry_script="score.py", mini_batch_size=2, mini_batch_bytes=None, instance_count=2,
    max_concurrency_per_instance=2, max_retries=1, timeout_seconds=60, error_threshold=-1,
    mini_batch_error_threshold=-1, logging_level="INFO", output_action=parallel.APPEND_ROW,
    output_file_name="predictions.csv", program_arguments="")


def _input(lab, names: list[str]) -> dict:
    folder = f"parallel-in-{uuid.uuid4().hex[:6]}"
    where = datastores.resolve_uri(lab.ref, f"azureml://datastores/workspaceblobstore/paths/{folder}/", "input")
    host = lab.settings.data_dir / "blobs" / where.account / where.container / where.blob
    host.mkdir(parents=True)
    for n, name in enumerate(names):
        (host / name).write_text(f"{n}\n")
    return {"jobInputType": "uri_folder", "uri": f"azureml://datastores/workspaceblobstore/paths/{folder}/"}


def _submit(lab, name: str, names: list[str], compute: str = "cpu", settings=SETTINGS, **variables) -> None:
    body = parallel.command_body(
        settings, code_id=lab.code({"score.py": SCORE}), environment_id=lab.environment(),
        compute_id=lab.ref.child_id("computes", compute), input_name="data", input_entry=_input(lab, names),
        output_uri=None, model_id=None, environment_variables=variables, display_name=name, experiment_name="par")
    with lab.store.transaction() as repo:
        jobs.put(repo, lab.ref, name, body, now())


def _rows(lab, name: str) -> list[str]:
    return (lab.output(name, "score") / "predictions.csv").read_text().splitlines()


def _scored(lab, name: str) -> list[str]:
    return (lab.artifacts(name) / "outputs" / "scored.txt").read_text().split()


NAMES = [f"img{n:02d}.png" for n in range(FILES)]


def test_two_nodes_of_two_workers_score_every_file_once_with_azure_s_logs(lab):
    lab.cluster("cpu", max_nodes=2)
    _submit(lab, "par-ok", NAMES)
    job = lab.wait_status("par-ok", "Completed", "Failed")
    assert job.status == "Completed", job.error
    assert _rows(lab, "par-ok") == [f"{name} {n}" for n, name in enumerate(NAMES)]
    assert sorted(_scored(lab, "par-ok")) == NAMES
    logs = lab.artifacts("par-ok") / "logs"
    assert "Total mini batches: 8" in (logs / "job_progress_overview.txt").read_text()
    assert "Completed: 8 mini batches" in (logs / "sys" / "master_role.txt").read_text()
    nodes = {p.name for p in (logs / "user" / "stdout").iterdir()}
    assert len(nodes) == 2  # each node's address
    processes = sorted(p.name for p in (logs / "user" / "stdout").rglob("*.stdout.txt"))
    assert processes == [f"process00{n}.stdout.txt" for n in range(4)]


def test_failures_over_the_threshold_fail_the_job_naming_the_mini_batches(lab):
    lab.cluster("cpu", max_nodes=2)
    _submit(lab, "par-bad", ["a.png", "bad1.png", "c.png", "d.png"],
            settings=replace(SETTINGS, instance_count=1, error_threshold=1))
    job = lab.wait_status("par-bad", "Completed", "Failed")
    assert job.status == "Failed"
    assert "2 failed items exceed error_threshold 1" in job.error["message"]
    assert "mini-batch 0 (ValueError: cannot score ['a.png', 'bad1.png'])" in job.error["message"]
    assert _scored(lab, "par-bad").count("bad1.png") == 2  # tried, and tried once more


def test_a_preempted_job_requeues_and_every_item_is_scored_once(lab):
    lab.cluster("spot", max_nodes=2, priority="LowPriority")
    _submit(lab, "par-spot", NAMES, compute="spot", SECONDS_PER_BATCH="8")
    results = lab.artifacts("par-spot") / "logs" / "sys" / "mini_batches" / "results"
    lab.wait(lambda: results.is_dir() and len(list(results.glob("*.json"))) >= 2, 120, "two mini-batches scored")
    with lab.store.transaction() as repo:
        row = repo.compute(lab.ref.child_id("computes", "spot"))
        preemption.preempt(row, repo.nodes(row.key), None, str(uuid.uuid4()), now(), lab.settings)
    job = lab.wait_status("par-spot", "Completed", "Failed", timeout=240)
    assert job.status == "Completed", job.error
    assert max(entry["attempt"] for entry in job.history) >= 2  # it ran again after the preemption
    assert _rows(lab, "par-spot") == [f"{name} {n}" for n, name in enumerate(NAMES)]  # every item once
    scored = _scored(lab, "par-spot")
    assert set(scored) == set(NAMES) and len(scored) < 2 * FILES  # what had a result was not scored again
