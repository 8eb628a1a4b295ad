"""Jobs through the real controller loop, real node containers (Celery workers), real job containers.

The controller runs here one `tick()` at a time; every wait ticks it until a condition holds.
"""

from pathlib import Path

from emulator.dispatch import protocol
from emulator.dispatch.celery_app import cluster_queue, make_celery
from emulator.services import computes, jobs
from tests import gate
from tests.integration.lab import now
from tests.waiting import wait_until

JOB_TIMEOUT = 120.0
IMAGE = "python:3.11-slim"  # resolves to the python stand-in
ORDER = ["NotStarted", "Starting", "Preparing", "Queued", "Running", "Finalizing", "Completed"]


MAIN = """
import os, sys
print("x is", sys.argv[1])
print("env A =", os.environ["A"])
os.makedirs("outputs", exist_ok=True)
open("outputs/result.txt", "w").write("artifact")
open(os.path.join(sys.argv[2], "model.txt"), "w").write("model " + sys.argv[1])
print("cwd", os.getcwd(), "uid", os.getuid())
print("docker socket visible:", os.path.exists("/var/run/docker.sock"))
print("no_new_privs:", [l.split()[1] for l in open("/proc/self/status") if l.startswith("NoNewPrivs")][0])
"""


def test_a_job_scales_a_cluster_from_zero_runs_and_scales_back(lab):
    lab.cluster(idle="PT1S")
    code = lab.code({"main.py": MAIN})
    lab.submit("job-ok", "python main.py ${{inputs.x}} ${{outputs.model}}", code,
               inputs={"x": {"jobInputType": "literal", "value": "42"}},
               outputs={"model": {"jobOutputType": "uri_folder"}}, environmentVariables={"A": "b"})
    running = lab.wait_status("job-ok", "Running", "Finalizing", "Completed")
    assert running.attempt == 1
    job = lab.wait_status("job-ok", "Completed")
    statuses = [h["status"] for h in job.history]
    assert statuses == ORDER, statuses
    log = (lab.artifacts("job-ok") / "user_logs" / "std_log.txt").read_text()
    assert "x is 42" in log and "env A = b" in log and "uid 1000" in log, log
    assert "docker socket visible: False" in log and "no_new_privs: 1" in log, log  # user code is unprivileged
    assert "python:3.11-slim is not available offline" in log  # the stand-in says so
    assert (lab.artifacts("job-ok") / "outputs" / "result.txt").read_text() == "artifact"
    assert (lab.output("job-ok", "model") / "model.txt").read_text() == "model 42"
    # Back to zero nodes after the idle time, and no job container left.
    lab.wait(lambda: not lab.nodes(), 60, "the cluster to scale back to zero")
    assert not lab.job_containers()


def test_a_failing_command_fails_with_its_exit_code_and_log_tail(lab):
    lab.cluster()
    lab.submit("job-bad", "echo before; echo boom >&2; exit 7")
    job = lab.wait_status("job-bad", "Failed")
    assert "exited with status code 7" in job.error["message"] and "boom" in job.error["message"]
    assert job.error["innerError"] == {"code": "ExitCode", "exitCode": 7}


def test_running_out_of_memory_fails_the_job_and_not_the_node(lab):
    lab.cluster(vm_size="Standard_D1_v2")  # 3.5 GiB × 0.25
    lab.submit("job-oom", "python -c \"b = bytearray(3 * 1024 ** 3); print('survived')\"")
    job = lab.wait_status("job-oom", "Failed")
    assert job.error["innerError"] == {"code": "OutOfMemory"}, job.error
    assert "Out of memory" in job.error["message"]
    # The node lives on and takes the next job.
    lab.submit("job-after", "echo fine")
    lab.wait_status("job-after", "Completed")


def test_an_unknown_image_fails_the_job_saying_how_to_provide_it(lab):
    lab.cluster()
    env = lab.environment("nope", image="example.com/team/private:1")
    lab.submit("job-image", "echo hi", env_id=env)
    job = lab.wait_status("job-image", "Failed", timeout=30)
    assert "docker load" in job.error["message"]


def test_cancelling_a_running_job_stops_its_container(lab):
    lab.cluster()
    lab.submit("job-long", f"echo started; {gate.WAIT}")  # never released: runs until cancelled
    lab.wait_status("job-long", "Running")
    lab.wait(lambda: lab.job_containers(), 30, "the job container")
    with lab.store.transaction() as repo:
        assert jobs.cancel(repo, lab.ref, "job-long", now()).status == "CancelRequested"
    job = lab.wait_status("job-long", "Canceled", timeout=60)
    assert [h["status"] for h in job.history][-2:] == ["CancelRequested", "Canceled"]
    lab.wait(lambda: not lab.job_containers(), 30, "the job container to go")
    # The node is free again.
    lab.submit("job-next", "echo next")
    lab.wait_status("job-next", "Completed")


def test_a_killed_node_sends_its_job_back_to_the_queue_at_once(lab, docker_client):
    lab.cluster(max_nodes=1)
    lab.submit("job-survivor", f"echo attempt $AZUREML_RUN_ID; {gate.WAIT}; echo done")
    lab.wait_status("job-survivor", "Running")
    node = next(n for n in lab.nodes() if n.run_id == "job-survivor")
    docker_client.containers.get(node.container_id).kill()
    requeued = lab.wait(lambda: (j := lab.job("job-survivor")).attempt == 2 and j, 90, "a second attempt")
    lab.wait_status("job-survivor", "Running")
    gate.release(lab.artifacts("job-survivor") / "outputs")
    job = lab.wait_status("job-survivor", "Completed", timeout=120)
    assert job.attempt == 2 and requeued.attempt == 2
    # The requeue counts the next attempt at once: its Queued entry is attempt 2, and says why.
    assert any(h["status"] == "Queued" and "was lost" in h.get("message", "") for h in job.history if h["attempt"] == 2)


def test_work_that_finished_as_its_node_was_killed_stands_and_does_not_run_again(lab, docker_client):
    """A VM's processes die with it, but a job container outlives its node container for the moment the controller
    takes to notice: a command that ended well in that moment is not run a second time."""
    lab.cluster(max_nodes=1)
    lab.submit("job-finisher", f"echo started; {gate.WAIT}; echo finished")
    lab.wait_status("job-finisher", "Running")
    node = next(n for n in lab.nodes() if n.run_id == "job-finisher")
    docker_client.containers.get(node.container_id).kill()  # no controller pass runs meanwhile
    gate.release(lab.artifacts("job-finisher") / "outputs")  # the orphaned job container finishes
    wait_until(lambda: "finished" in (lab.artifacts("job-finisher") / "user_logs" / "std_log.txt").read_text(),
               timeout=30, message="the job's command to end with its node gone")
    job = lab.wait_status("job-finisher", "Completed", "Failed", timeout=120)
    assert job.status == "Completed" and job.attempt == 2  # attempt 2 was called off: attempt 1's work stands
    log = (lab.artifacts("job-finisher") / "user_logs" / "std_log.txt").read_text()
    assert log.count("started") == 1 and log.count("finished") == 1, log
    assert any("its result stands" in (h.get("message") or "") for h in job.history)
    lab.wait(lambda: not lab.job_containers(), 30, "no job container left")


def test_a_stale_delivery_does_nothing(lab):
    lab.cluster(max_nodes=1, idle="PT10M")  # the node stays to take the replayed message
    lab.submit("job-once", "echo ran-once")
    job = lab.wait_status("job-once", "Completed")
    # Replay the first attempt's message: the node acks it and runs nothing.
    message = {"job_key": job.key, "job_name": job.name, "attempt": 1, "rank": 0, "world_size": 1,
               "image": job.image, "command": "echo ran-twice", "env": {}, "labels": {}, "container_name": "x",
               "cpus": None, "memory_bytes": None, "gpus": 0, "network": None, "user": None,
               "workdir": "jobs/stale/wd", "code_dir": None, "log_file": "stale.txt"}
    make_celery(lab.redis_host_url).send_task(protocol.RUN_TASK, args=[message], queue=cluster_queue(job.compute_key))
    node = lab.nodes()[0]
    lab.wait(lambda: "ignoring job-once attempt 1 rank 0" in lab.runtime.logs(node.container_id, tail=50), 30,
             "the node to ignore the replayed message")
    assert not (lab.settings.data_dir / "stale.txt").exists() and not lab.job_containers()
    assert lab.job("job-once").attempt == 1


ALLREDUCE = Path(__file__).resolve().parents[2] / "sample_jobs" / "multi-node" / "src" / "allreduce.py"


def test_a_multi_node_job_starts_all_ranks_with_rendezvous_variables(lab):
    lab.cluster(max_nodes=3)
    code = lab.code({"allreduce.py": ALLREDUCE.read_text()})  # the sample: a real collective over TCP
    lab.submit("job-gang", "python allreduce.py", code, resources={"instanceCount": 3},
               distribution={"distributionType": "PyTorch", "processCountPerInstance": 1})
    job = lab.wait_status("job-gang", "Completed", "Failed", timeout=180)
    assert job.status == "Completed", job.error
    result = (lab.artifacts("job-gang") / "outputs" / "result.json").read_text()
    assert '"world_size": 3' in result and '"correct": true' in result, result
    assert "rank 0/3" in (lab.artifacts("job-gang") / "user_logs" / "std_log_process_0.txt").read_text()
    assert sorted(job.ranks) == ["0", "1", "2"]


def test_deleting_the_cluster_fails_the_jobs_queued_on_it(lab):
    lab.cluster()
    lab.submit("job-orphan", gate.WAIT)
    lab.wait_status("job-orphan", "Queued", "Running")
    with lab.store.transaction() as repo:
        computes.delete(repo, lab.ref, "cpu", now())
    job = lab.wait_status("job-orphan", "Failed", timeout=60)
    assert "was deleted" in job.error["message"]
    lab.wait(lambda: not lab.job_containers(), 30, "no job container left")


FORKS = """
import threading, time
started = 0
try:
    while started < 10000:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        started += 1
except RuntimeError:
    pass
print("threads", started)
print([line.split()[1] for line in open("/proc/self/status") if line.startswith("CapBnd")][0])
"""


def test_a_job_runs_without_capabilities_and_its_processes_stop_at_its_own_limit(lab):
    lab.cluster()
    lab.submit("job-forks", "python main.py", lab.code({"main.py": FORKS}))
    lab.wait_status("job-forks", "Completed")
    log = (lab.artifacts("job-forks") / "user_logs" / "std_log.txt").read_text()
    threads = int(log.split("threads ")[1].split()[0])
    assert threads < lab.settings.job_pids_limit  # the limit stopped it, not the loop's own bound
    assert "0000000000000000" in log  # no capability left in its bounding set
