"""What a node is told to run for each rank of a job: pure, no Docker."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from emulator import in_job
from emulator.controller.specs import job_ranks, nodes
from emulator.dispatch import job_container
from emulator.domain.compute import cluster, vm_sizes
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, command_job, parallel
from emulator.errors import ValidationFailed
from emulator.settings import Settings
from emulator.store.tables import Compute

REF = WorkspaceRef("00000000-0000-0000-0000-000000000000", "rg", "ws")
KEY = REF.child_id("jobs", "job-1").lower()


def props(**extra) -> dict:
    return {"jobType": "Command", "command": "python t.py --d ${{inputs.d}} --n ${{inputs.n}} --m ${{outputs.m}}",
            "environmentId": "e", "computeId": "c", "environmentVariables": {"A": "1"},
            "inputs": {"d": {"jobInputType": "uri_file", "uri": "azureml://datastores/workspaceblobstore/paths/up/x.csv"},
                       "n": {"jobInputType": "literal", "value": "7"}},
            "outputs": {"m": {"jobOutputType": "uri_folder"}}, **extra}


def ranks(size: str = "Standard_DS3_v2", settings: Settings | None = None, gpus: bool = False, **extra):
    spec = cluster.ClusterSpec(vm_sizes.find(size), "Dedicated", cluster.ScaleSettings(0, 4))
    return job_ranks.ranks(KEY, "job-1", 2, props(**extra), REF, spec, settings or Settings(stack="s"), "img", ["n1"],
                        "blobs/acct/c/src", gpus)


def test_one_rank_with_inputs_outputs_limits_and_its_log():
    (rank,) = ranks()
    assert rank.command == ("python t.py --d /mnt/azureml/inputs/d/x.csv --n 7 --m /mnt/azureml/outputs/m")
    mounts = {m.target: m for m in rank.mounts}
    assert mounts["/mnt/azureml/inputs/d/x.csv"].read_only
    assert mounts["/mnt/azureml/inputs/d/x.csv"].source.endswith("/up/x.csv")
    assert mounts["/mnt/azureml/outputs/m"].source.endswith("/azureml/job-1/m") and not mounts[
        "/mnt/azureml/outputs/m"].read_only
    assert mounts["/mnt/azureml/wd/outputs"].source == artifacts.directory(REF, "job-1") + "/outputs"
    assert rank.log_file.endswith("ExperimentRun/dcid.job-1/user_logs/std_log.txt")
    assert (rank.cpus, rank.memory_bytes) == (1.0, int(3.5 * 2 ** 30))  # DS3_v2 (4, 14 GiB) × 0.25
    assert rank.env["A"] == "1" and rank.env["AZURE_ML_INPUT_n"] == "7" and rank.env["AZUREML_RUN_ID"] == "job-1"
    assert "MASTER_ADDR" not in rank.env and rank.user == "1000:1000" and rank.network == Settings().jobs_network(REF.key)
    assert rank.labels["amlemu.attempt"] == "2" and rank.notes == ["n1"]


def test_a_rank_carries_its_process_and_disk_limits_and_what_it_may_write():
    (rank,) = ranks(settings=Settings(stack="s", job_pids_limit=64, job_pids_sustain_seconds=2,
                                      job_disk_limit_gb=0.5, job_disk_check_seconds=1))
    assert (rank.pids_limit, rank.pids_sustain_seconds) == (64, 2)
    assert (rank.disk_limit_bytes, rank.disk_check_seconds) == (2**29, 1)
    assert job_container.container_spec(rank, Path("/host")).pids_limit == 64
    job_dir = artifacts.directory(REF, "job-1")
    written = job_container.written(rank)
    assert written[:2] == (job_container.rank_dir(rank.workdir), rank.log_file)  # its folder (wd, downloads), log
    assert {f"{job_dir}/outputs", f"{job_dir}/logs"} <= set(written)
    assert not any(m.source in written for m in rank.mounts if m.read_only)  # inputs are not its writing
    assert ranks()[0].pids_limit == 4096  # Settings' default


def test_a_multi_node_job_gets_one_rank_per_node_with_rendezvous_variables():
    ranks_ = ranks(resources={"instanceCount": 3})
    assert [r.rank for r in ranks_] == [0, 1, 2]
    master = ranks_[0].container_name
    for r in ranks_:
        assert r.env["MASTER_ADDR"] == master and r.env["MASTER_PORT"] == job_ranks.MASTER_PORT
        assert (r.env["RANK"], r.env["WORLD_SIZE"]) == (str(r.rank), "3")
        assert r.log_file.endswith(f"user_logs/std_log_process_{r.rank}.txt")
    assert len({r.container_name for r in ranks_}) == 3 and len({r.workdir for r in ranks_}) == 3


def test_gpu_sizes_simulate_or_refuse_without_gpus():
    (rank,) = ranks("Standard_NC6s_v3")
    assert rank.gpus == 0 and "runs on CPU" in rank.notes[-1]
    with pytest.raises(ValidationFailed, match="AMLEMU_GPU_MODE=refuse"):
        ranks("Standard_NC6s_v3", Settings(stack="s", gpu_mode="refuse"))
    (given,) = ranks("Standard_NC6s_v3", gpus=True)
    assert given.gpus == 1


def test_output_asset_ids_read_back_whatever_the_underscores():
    asset = artifacts.output_asset_id("local", "guid", "my_job_1", "model_out")
    assert ("my_job_1", "model_out") in artifacts.output_of(asset)
    assert artifacts.output_of("azureml://locations/x/workspaces/y/data/other/versions/1") == []


def test_an_input_naming_a_data_asset_mounts_the_files_resolved_at_submit():
    """The input keeps the data asset's id as the user sent it; the mount is where the asset's files are."""
    asset_id = f"{REF.arm_id}/data/rows/versions/2"
    (rank,) = ranks(inputs={"d": {"jobInputType": "uri_file", "uri": asset_id},
                            "n": {"jobInputType": "literal", "value": "7"}},
                    **{command_job.RESOLVED_INPUTS: {"d": "azureml://datastores/workspaceblobstore/paths/LocalUpload/h/"
                                                          "rows.csv"}})
    mounts = {m.target: m for m in rank.mounts}
    assert mounts["/mnt/azureml/inputs/d/rows.csv"].source.endswith("/LocalUpload/h/rows.csv")
    assert rank.command.startswith("python t.py --d /mnt/azureml/inputs/d/rows.csv ")


DATA = "azureml://datastores/workspaceblobstore/paths/up/data"


def test_download_mode_gives_each_rank_a_writable_copy_of_its_own():
    first, second = ranks(resources={"instanceCount": 2}, inputs={
        "d": {"jobInputType": "uri_folder", "uri": DATA, "mode": "Download"},
        "n": {"jobInputType": "literal", "value": "7"}})
    for rank in (first, second):
        (source, copy), = rank.downloads
        assert source.endswith("/up/data") and copy == f"{rank.workdir.rsplit('/', 1)[0]}/downloads/d"
        mount = next(m for m in rank.mounts if m.target == "/mnt/azureml/inputs/d")
        assert mount.source == copy and not mount.read_only
    assert first.downloads[0][1] != second.downloads[0][1]
    assert first.command.startswith("python t.py --d /mnt/azureml/inputs/d --n 7")


def test_a_file_in_download_mode_is_copied_under_its_own_name():
    (rank,) = ranks(inputs={"d": {"jobInputType": "uri_file", "uri": DATA + "/x.csv", "mode": "EvalDownload"},
                            "n": {"jobInputType": "literal", "value": "7"}})
    (source, copy), = rank.downloads
    mount = next(m for m in rank.mounts if m.target == "/mnt/azureml/inputs/d/x.csv")
    assert mount.source == f"{copy}/x.csv" and source.endswith("/up/data/x.csv")


def test_direct_mode_hands_the_job_the_uri_and_mounts_nothing():
    (rank,) = ranks(inputs={"d": {"jobInputType": "uri_folder", "uri": DATA, "mode": "Direct"},
                            "n": {"jobInputType": "literal", "value": "7"}},
                    outputs={"m": {"jobOutputType": "uri_folder", "mode": "Direct"}})
    assert rank.command == f"python t.py --d {DATA} --n 7 --m azureml://datastores/workspaceblobstore/paths/" \
                           "azureml/job-1/m/"
    assert rank.env["AZURE_ML_INPUT_d"] == DATA and rank.downloads == []
    assert not any(m.target.startswith(("/mnt/azureml/inputs", "/mnt/azureml/outputs")) for m in rank.mounts)


@pytest.mark.parametrize(("kind", "mode"), [("inputs", "ReadWriteMount"), ("inputs", "Upload"),
                                            ("outputs", "ReadOnlyMount"), ("outputs", "Download"),
                                            ("inputs", "ro_mount")])
def test_a_mode_that_does_not_go_with_the_side_is_refused_naming_the_field(kind, mode):
    entry = ({"jobInputType": "uri_folder", "uri": DATA} if kind == "inputs" else {"jobOutputType": "uri_folder"})
    with pytest.raises(ValidationFailed) as err:
        command_job.parse({"properties": props(**{kind: {"x": {**entry, "mode": mode}}})})
    assert err.value.target == f"properties.{kind}.x.mode"


def test_a_job_that_runs_the_parallel_runner_gets_it_read_only_and_knows_its_attempt():
    plain = ranks()[0]
    assert parallel.RUNNER_DIR not in {m.target for m in plain.mounts} and plain.env["AMLEMU_JOB_ATTEMPT"] == "2"
    runner = ranks(command=f"python {parallel.RUNNER} --input ${{{{inputs.d}}}} --entry-script s.py",
                   resources={"instanceCount": 2})
    for rank in runner:
        mount = {m.target: m for m in rank.mounts}[parallel.RUNNER_DIR]
        assert mount.source == in_job.INSTALLED and mount.read_only
        assert (rank.env["RANK"], rank.env["WORLD_SIZE"], rank.env["AMLEMU_JOB_ATTEMPT"]) == (str(rank.rank), "2", "2")


def _node_spec(**settings):
    now = datetime(2026, 1, 1, tzinfo=UTC)
    compute = Compute(key="w/computes/c", workspace_key="w", name="c", compute_type="AmlCompute", location="l",
                      body={}, provisioning_state="Succeeded", created_at=now, modified_at=now)
    spec = cluster.ClusterSpec(vm_sizes.find("Standard_DS3_v2"), "Dedicated", cluster.ScaleSettings(0, 4))
    return nodes.node_spec(Settings(stack="s", **settings), compute, spec, "n1")


def test_a_node_sees_the_engines_storage_read_only_to_measure_its_jobs_layers_when_it_is_known():
    known = _node_spec(docker_root="/srv/docker")
    assert known.shallow_mounts == {"/srv/docker": job_container.ENGINE_ROOT}
    assert known.env["AMLEMU_DOCKER_ROOT"] == "/srv/docker"
    unknown = _node_spec()  # the controller's entry point asks the engine; unknown, nothing is mounted
    assert unknown.shallow_mounts == {} and "AMLEMU_DOCKER_ROOT" not in unknown.env
