"""A job plants symlink chains and hard links in the folders it may write (its ./outputs, a named output, the
artifact folder of a job yet to run), pointing at the data folder's CA and database; later jobs use those
folders as code, input, output and log. Real nodes (the node image) and real job containers: the node
copies, chmods, appends to and mounts nothing outside the jobs' own folders, and the CA stays as it was."""

import os
import stat

from emulator.services import assets
from tests.integration.lab import now

UP_FROM_OUTPUTS = "../" * 6  # blobs/<account>/azureml/ExperimentRun/dcid.<job>/outputs -> the data folder
PLANT = f"""
import os
up = "{UP_FROM_OUTPUTS}"
os.makedirs("outputs", exist_ok=True)
os.symlink(up + "ca", "outputs/ca")
os.symlink(up + "ca/ca.key", "outputs/key.pem")
os.symlink(up + "amlemu.db", "outputs/db.sqlite")
os.symlink("chain2", "outputs/chain1")
os.symlink("ca", "outputs/chain2")
open("outputs/train.py", "w").write("print('snapshot ran')")
try:
    os.link("outputs/secret.bin", "outputs/hard.bin")
    print("hard link: made")
except OSError as exc:
    print("hard link: refused", exc.errno)
shared = os.environ["AZURE_ML_OUTPUT_shared"]
os.symlink("../../../../ca", os.path.join(shared, "victim"))
later = os.environ["AZURE_ML_OUTPUT_later"]
os.makedirs(os.path.join(later, "user_logs"), exist_ok=True)
os.symlink("../../../../../ca/ca.key", os.path.join(later, "user_logs", "std_log.txt"))
print("planted")
"""
LIST = "import os; print('wd:', sorted(os.listdir('.'))); exec(open('train.py').read())"


def _modes(data) -> dict[str, tuple[int, int]]:
    return {p: (stat.S_IMODE(os.lstat(data / p).st_mode), os.lstat(data / p).st_uid)
            for p in ("ca", "ca/ca.key", "amlemu.db")}


def test_links_a_job_planted_lead_the_node_nowhere(lab):
    data = lab.settings.data_dir
    (data / "ca").mkdir(mode=0o700)
    (data / "ca" / "ca.key").write_text("PRIVATE KEY")
    (data / "ca" / "ca.key").chmod(0o600)
    (data / "ca").chmod(0o700)
    before, key_before = _modes(data), (data / "ca" / "ca.key").read_bytes()
    planter_outputs = lab.artifacts("planter") / "outputs"
    planter_outputs.mkdir(parents=True)
    (planter_outputs / "secret.bin").write_text("root only")  # in the job's mount, not readable by it
    (planter_outputs / "secret.bin").chmod(0o600)
    lab.cluster(max_nodes=1, idle="PT30S")

    lab.submit("planter", "python main.py", lab.code({"main.py": PLANT}), outputs={
        "shared": {"jobOutputType": "uri_folder", "uri": "azureml://datastores/workspaceblobstore/paths/shared/"},
        "later": {"jobOutputType": "uri_folder",
                  "uri": "azureml://datastores/workspaceartifactstore/paths/ExperimentRun/dcid.victim-log/"}})
    planted = lab.wait_status("planter", "Completed", "Failed")
    log = (lab.artifacts("planter") / "user_logs" / "std_log.txt").read_text()
    assert planted.status == "Completed" and "planted" in log, log

    # its outputs as a code snapshot: copied without a link, without what its user could not read
    uri = f"https://localhost:8443/blob/{lab.account}/azureml/ExperimentRun/dcid.planter/outputs"
    with lab.store.transaction() as repo:
        assets.put(repo, lab.ref, assets.CODES, "from-outputs", "1", {"properties": {"codeUri": uri}}, now())
    lab.submit("copier", f'python -c "{LIST}"', lab.ref.child_id("codes", "from-outputs") + "/versions/1")
    copier = lab.wait_status("copier", "Completed", "Failed")
    log = (lab.artifacts("copier") / "user_logs" / "std_log.txt").read_text()
    assert copier.status == "Completed" and "wd: ['logs', 'outputs', 'train.py']" in log and "snapshot ran" in log, log
    for name in ("ca (a link)", "key.pem (a link)", "db.sqlite (a link)", "chain1 (a link)",
                 "secret.bin (not readable by the job's user)"):
        assert f"left out of the code snapshot: {name}" in log, log

    # an input through a link, an output below one, a log planted as one: each job fails, nothing followed
    inputs = {"data": {"jobInputType": "uri_folder",
                       "uri": "azureml://datastores/workspaceartifactstore/paths/ExperimentRun/dcid.planter/outputs/chain1"}}
    lab.submit("reader", "ls ${{inputs.data}}", inputs=inputs)
    outputs = {"out": {"jobOutputType": "uri_folder",
                       "uri": "azureml://datastores/workspaceblobstore/paths/shared/victim/inner/"}}
    lab.submit("writer", "touch ${{outputs.out}}/x", outputs=outputs)
    lab.submit("victim-log", "echo hello")
    for name in ("reader", "writer", "victim-log"):
        job = lab.wait_status(name, "Completed", "Failed")
        assert job.status == "Failed" and "link" in job.error["message"], (name, job.error)

    assert _modes(data) == before and (data / "ca" / "ca.key").read_bytes() == key_before
    assert sorted(os.listdir(data / "ca")) == ["ca.key"]
    assert not (planter_outputs / "hard.bin").exists() or \
        stat.S_IMODE((planter_outputs / "hard.bin").stat().st_mode) == 0o600
