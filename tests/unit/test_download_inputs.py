"""An input in download mode: the node copies it beside the rank's working directory before the job starts, and
the job's changes stay in that copy; links in the workspace's storage are not followed into it."""

from emulator.dispatch import job_container
from emulator.dispatch.protocol import Attempt, Mount

WORKDIR = "jobs/t/1/0/wd"


def _attempt(**fields) -> Attempt:
    return Attempt(job_key="k", job_name="j", attempt=1, rank=0, world_size=1, image="i", command="true", env={},
                   labels={}, container_name="c", cpus=None, memory_bytes=None, gpus=0, network=None, user=None,
                   workdir=WORKDIR, code_dir=None, log_file="blobs/a/c/dcid.j/user_logs/std_log.txt", **fields)


def test_a_folder_and_a_file_are_copied_fresh_for_each_run_without_following_links(tmp_path):
    source = tmp_path / "blobs/a/c/in"
    (source / "sub").mkdir(parents=True)
    (source / "rows.csv").write_text("a,b\n")
    (source / "sub" / "more.csv").write_text("c,d\n")
    (tmp_path / "secret").write_text("not for jobs")
    (source / "leak").symlink_to(tmp_path / "secret")
    copies = job_container.downloads_dir(WORKDIR)
    attempt = _attempt(downloads=[("blobs/a/c/in", f"{copies}/d"), ("blobs/a/c/in/rows.csv", f"{copies}/f")],
                       mounts=[Mount(f"{copies}/d", "/mnt/azureml/inputs/d"),
                               Mount(f"{copies}/f/rows.csv", "/mnt/azureml/inputs/f/rows.csv")])
    job_container.lay_out(attempt, tmp_path)

    copy = tmp_path / copies / "d"
    assert (copy / "rows.csv").read_text() == "a,b\n" and (copy / "sub" / "more.csv").read_text() == "c,d\n"
    assert not (copy / "leak").exists() and (tmp_path / copies / "f" / "rows.csv").read_text() == "a,b\n"
    (copy / "rows.csv").write_text("changed by the job")
    assert (source / "rows.csv").read_text() == "a,b\n"  # the datastore's files are untouched

    job_container.lay_out(attempt, tmp_path)  # a rerun of the attempt starts from the datastore again
    assert (copy / "rows.csv").read_text() == "a,b\n"
    assert job_container.rank_dir(WORKDIR) == "jobs/t/1/0"
