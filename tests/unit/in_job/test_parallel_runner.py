"""The parallel runner as a job's container runs it: installed in a folder (in_job.install) and started as a process per
rank (RANK, WORLD_SIZE, AMLEMU_JOB_ATTEMPT), over temporary folders standing for the input, the output and the job's
shared logs. Two ranks × two workers split the work through the logs folder alone; failures are retried, timeouts
kill and replace a worker, thresholds fail the run naming the mini-batches, and a rerun after a kill scores only what
has no result, so every item is in the output once."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from emulator import in_job
from tests.waiting import wait_until

RUN_TIMEOUT = 90

SCRIPT = """
import os, signal, sys, time
from pathlib import Path

MARKS = Path(sys.argv[sys.argv.index("--marks") + 1]) if "--marks" in sys.argv else None

def init():
    print("init", os.getpid(), flush=True)

def first_time(name):
    try:
        os.close(os.open(MARKS / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False

def run(mini_batch):
    rows = []
    for path in mini_batch:
        name = os.path.basename(path)
        with open(MARKS / "scored.txt", "a") as scored:
            scored.write(name + "\\n")
        BEHAVIOUR
        rows.append(f"{name} {Path(path).read_text().strip()}")
    return rows
"""


@pytest.fixture
def job(tmp_path):
    """A job's folders: the runner installed, 23 input files, a scoring script, marks the script keeps."""
    runner = in_job.install(tmp_path / "runner")
    data = tmp_path / "data"
    data.mkdir()
    for n in range(1, 24):
        (data / f"f{n:02d}.txt").write_text(f"{n}\n")
    for folder in ("code", "out", "logs", "marks"):
        (tmp_path / folder).mkdir()

    class Job:
        root = tmp_path

        def script(self, behaviour: str = "pass") -> None:
            code = SCRIPT.replace("BEHAVIOUR", textwrap.indent(textwrap.dedent(behaviour), " " * 8).strip())
            (tmp_path / "code" / "score.py").write_text(code)

        def start(self, rank: int, world: int, attempt: int = 1, *extra: str) -> subprocess.Popen:
            env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": str(world), "AMLEMU_JOB_ATTEMPT": str(attempt)}
            args = [sys.executable, str(runner / "amlemu_parallel_run.py"), "--input", str(data),
                    "--entry-script", "score.py", "--mini-batch-size", "3", "--concurrency", "2",
                    "--output", str(tmp_path / "out"), "--logs", str(tmp_path / "logs"), "--timeout", "20",
                    *extra, "--", "--marks", str(tmp_path / "marks")]
            return subprocess.Popen(args, cwd=tmp_path / "code", env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, start_new_session=True)

        def run(self, world: int = 2, attempt: int = 1, *extra: str) -> list[tuple[int, str]]:
            ranks = [self.start(rank, world, attempt, *extra) for rank in range(world)]
            return [(p.wait(timeout=RUN_TIMEOUT), p.stdout.read()) for p in ranks]

        def output(self) -> list[str]:
            return (tmp_path / "out" / "predictions.csv").read_text().splitlines()

        def logs(self, relative: str) -> str:
            return (tmp_path / "logs" / relative).read_text()

        def scored(self) -> list[str]:
            return (tmp_path / "marks" / "scored.txt").read_text().split()

    return Job()


EVERY_ROW = [f"f{n:02d}.txt {n}" for n in range(1, 24)]


def test_two_ranks_of_two_workers_score_every_file_once_in_order(job):
    job.script()
    ended = job.run(world=2)
    assert [code for code, _ in ended] == [0, 0], ended
    assert job.output() == EVERY_ROW and sorted(job.scored()) == sorted(f"f{n:02d}.txt" for n in range(1, 24))
    assert "Total mini batches: 8" in job.logs("job_progress_overview.txt")
    assert "The job completed" in job.logs("job_progress_overview.txt")
    assert "Completed: 8 mini batches" in job.logs("sys/master_role.txt")
    stdout = sorted((job.root / "logs" / "user" / "stdout").rglob("process*.stdout.txt"))
    assert [p.name for p in stdout] == [f"process00{n}.stdout.txt" for n in range(4)]  # 2 ranks × 2 workers
    assert all(p.read_text().count("init ") == 1 for p in stdout)  # init once per worker
    assert {p.parent.name for p in (job.root / "logs" / "sys" / "node").rglob("process*.txt")}


def test_a_failing_mini_batch_is_retried_and_its_errors_are_logged(job):
    job.script("""
        if name in ("f04.txt", "f20.txt") and first_time(name):
            raise ValueError(f"transient trouble with {name}")
    """)
    ended = job.run(1, 1, "--max-retries", "1")
    assert ended[0][0] == 0, ended
    assert job.output() == EVERY_ROW
    errors = job.logs("user/error.txt")
    assert "mini batch 1 (try 1 of 2) failed" in errors and "ValueError: transient trouble with f04.txt" in errors
    assert "Retried mini batches: 2" in job.logs("job_progress_overview.txt")
    tracebacks = "".join(p.read_text() for p in (job.root / "logs" / "user" / "error").rglob("*.txt"))
    assert "Traceback" in tracebacks and "transient trouble with f20.txt" in tracebacks


def test_a_mini_batch_over_its_timeout_kills_the_worker_and_a_fresh_one_inits(job):
    job.script("""
        if name == "f07.txt" and first_time(name):
            signal.pause()  # hangs until the runner kills it at the timeout
    """)
    ended = job.run(1, 1, "--timeout", "1.5")
    assert ended[0][0] == 0, ended
    assert job.output() == EVERY_ROW
    assert "TimeoutError: run() took longer than the timeout (1.5 s)" in job.logs("user/error.txt")
    inits = sum(p.read_text().count("init ") for p in (job.root / "logs" / "user" / "stdout").rglob("*.txt"))
    assert inits == 3  # two workers, and the one that replaced the killed one


def test_failures_over_the_threshold_fail_the_run_naming_the_mini_batches(job):
    job.script("""
        if name in ("f02.txt", "f11.txt"):
            raise RuntimeError(f"cannot score {name}")
    """)
    ended = job.run(2, 1, "--max-retries", "0", "--error-threshold", "5")
    assert [code for code, _ in ended] == [1, 0], ended
    said = ended[0][1]
    assert "6 failed items exceed error_threshold 5" in said
    assert "mini-batch 0 (RuntimeError: cannot score f02.txt)" in said and "mini-batch 3" in said
    assert not (job.root / "out" / "predictions.csv").exists()
    assert "The job failed" in job.logs("job_progress_overview.txt")


def test_failures_under_the_threshold_leave_their_items_out(job):
    job.script("""
        if name == "f11.txt":
            raise RuntimeError("cannot score it")
    """)
    ended = job.run(1, 1, "--max-retries", "0", "--mini-batch-error-threshold", "1")
    assert ended[0][0] == 0, ended
    assert job.output() == [row for row in EVERY_ROW if not row.startswith(("f10", "f11", "f12"))]


def test_azure_s_options_among_the_script_s_arguments_are_read_too(job):
    """Microsoft's examples pass --error_threshold and --allowed_failed_percent in program_arguments."""
    job.script("""
        if name == "f11.txt":
            raise RuntimeError("cannot score it")
    """)
    code, said = job.run(1, 1, "--max-retries", "0", "--", "--allowed_failed_percent", "10")[0]
    assert code == 1 and "3 failed items of 23 exceed allowed_failed_percent 10" in said
    code, said = job.run(1, 2, "--max-retries", "0", "--", "--error_threshold", "2")[0]
    assert code == 1 and "3 failed items exceed error_threshold 2" in said


def test_a_rerun_after_a_kill_scores_only_what_has_no_result(job):
    """Rank 1 dies mid-run (its node lost); the job's other rank goes with it; the next attempt finishes."""
    job.script("""
        if name == "f13.txt" and first_time("killed"):
            os.kill(os.getppid(), signal.SIGKILL)
            signal.pause()  # until the test kills what is left of the attempt
    """)
    ranks = [job.start(rank, 2, 1) for rank in range(2)]
    wait_until(lambda: any(p.poll() == -signal.SIGKILL for p in ranks), timeout=RUN_TIMEOUT,
               message="a rank killed mid-run")
    for each in ranks:  # the attempt ends as a whole: every process of both ranks goes
        os.killpg(each.pid, signal.SIGKILL)
        each.wait(timeout=RUN_TIMEOUT)
    results = job.root / "logs" / "sys" / "mini_batches" / "results"
    done_before = {p.name for p in results.glob("*.json")}
    assert "4.json" not in done_before  # f13's mini-batch has no result
    ended = job.run(world=2, attempt=2)
    assert [code for code, _ in ended] == [0, 0], ended
    assert job.output() == EVERY_ROW  # every item once
    scored = job.scored()
    for index in done_before:  # a mini-batch with a result was not scored again
        first = int(index.split(".")[0]) * 3 + 1
        assert scored.count(f"f{first:02d}.txt") == 1
    assert scored.count("f13.txt") == 2


def test_an_input_with_nothing_to_score_fails_saying_so(job, tmp_path):
    job.script()
    for path in (tmp_path / "data").iterdir():
        path.unlink()
    code, said = job.run(world=1)[0]
    assert code == 1 and "holds nothing to process" in said


def test_init_failing_fails_the_run(job):
    (job.root / "code" / "score.py").write_text("def init():\n    raise OSError('no model here')\n"
                                                "def run(mini_batch):\n    return mini_batch\n")
    code, said = job.run(world=1)[0]
    assert code == 1 and "init() of the entry script failed: OSError: no model here" in said
    assert "OSError: no model here" in job.logs("user/error.txt")


def test_scripts_written_for_azure_s_parallel_run_step_find_entry_script(job):
    (job.root / "code" / "score.py").write_text(
        "from azureml_user.parallel_run import EntryScript\n"
        "def init():\n"
        "    script = EntryScript()\n"
        "    script.logger.info('logged by init; output in %s', script.output_dir)\n"
        "    script.logger.debug('not at INFO')\n"
        "def run(mini_batch):\n"
        "    return mini_batch\n")
    code, said = job.run(1, 1, "--logging-level", "INFO")[0]
    assert code == 0, said
    logged = "".join(p.read_text() for p in (job.root / "logs" / "user" / "stdout").rglob("*.txt"))
    assert f"logged by init; output in {job.root / 'out'}" in logged and "not at INFO" not in logged


def test_init_finds_the_model_under_azureml_model_dir_by_its_folder_s_name(job):
    model = job.root / "models" / "v1" / "model"
    model.mkdir(parents=True)
    (model / "weights.txt").write_text("42")
    (job.root / "code" / "score.py").write_text(
        "import os\n"
        "def init():\n"
        "    global weight\n"
        "    weight = open(os.path.join(os.environ['AZUREML_MODEL_DIR'], 'model', 'weights.txt')).read()\n"
        "def run(mini_batch):\n"
        "    return [weight for _ in mini_batch]\n")
    code, said = job.run(1, 1, "--model", str(model))[0]
    assert code == 0, said
    assert job.output() == ["42"] * 23
