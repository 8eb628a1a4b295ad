"""A job stops at its gate unless each of its mounts is the very folder or file laid out for it: a folder swapped
for a link (by another job writing where this one's input lives) between the layout and the container's start
would otherwise be followed by the engine, on the host."""

import subprocess

from emulator.dispatch import job_container
from emulator.dispatch.protocol import Attempt, Mount


def _attempt() -> Attempt:
    return Attempt(job_key="k", job_name="j", attempt=1, rank=0, world_size=1, image="i", command="true", env={},
                   labels={}, container_name="c", cpus=None, memory_bytes=None, gpus=0, network=None, user=None,
                   workdir="jobs/t/1/0/wd", code_dir=None, log_file="blobs/a/c/dcid.j/user_logs/std_log.txt",
                   mounts=[Mount("blobs/a/c/shared/in", "/mnt/azureml/inputs/data", read_only=True)])


def _run(checks: str, data_dir, attempt: Attempt) -> subprocess.CompletedProcess:
    """The gate's lines with the container's paths put back to where they are on this machine."""
    where = {job_container.WORKDIR: attempt.workdir, job_container.LOG: attempt.log_file,
             **{m.target: m.source for m in attempt.mounts}}
    for target, source in sorted(where.items(), key=lambda item: -len(item[0])):
        checks = checks.replace(target, str(data_dir / source))
    return subprocess.run(["sh", "-c", checks], capture_output=True, text=True)


def test_mounts_laid_out_pass_and_a_folder_swapped_for_a_link_stops_the_job(tmp_path):
    attempt = _attempt()
    for folder in (attempt.workdir, "blobs/a/c/shared/in", "secret"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / attempt.log_file).parent.mkdir(parents=True)
    (tmp_path / attempt.log_file).touch()
    checks = job_container.mount_checks(attempt, tmp_path)
    assert _run(checks, tmp_path, attempt).returncode == 0

    swapped = tmp_path / "blobs/a/c/shared/in"
    swapped.rename(tmp_path / "blobs/a/c/shared/moved")
    swapped.symlink_to(tmp_path / "secret")  # what the engine would then have mounted
    stopped = _run(checks, tmp_path, attempt)
    assert stopped.returncode == job_container.MOUNT_MISMATCH
    assert "shared/in is not what was laid out for it" in stopped.stderr  # (the test put host paths back)


def test_an_exit_status_planted_as_a_link_is_not_read(tmp_path):
    """The controller reads a dead node's rank status from the job's own folder: a link there is not followed."""
    (tmp_path / "elsewhere").write_text("0")
    (tmp_path / job_container.EXIT).symlink_to(tmp_path / "elsewhere")
    assert job_container.recorded(tmp_path / job_container.EXIT) is None
    (tmp_path / job_container.EXIT).unlink()
    (tmp_path / job_container.EXIT).write_text("0\n")
    assert job_container.recorded(tmp_path / job_container.EXIT).code == 0


def test_the_exit_file_carries_the_forks_refused_at_the_limit(tmp_path):
    exit_file = tmp_path / job_container.EXIT
    exit_file.write_text("2\nrefused 318\n")
    assert job_container.recorded(exit_file) == job_container.Exit(code=2, oom_killed=False, refused_forks=318)
    exit_file.write_text("0\nrefused x\n")  # the job may write its own: a status still reads, no count
    assert job_container.recorded(exit_file).refused_forks == 0
