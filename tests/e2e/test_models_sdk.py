"""Models through the unmodified azure-ai-ml SDK: a local file or folder (uploaded by the SDK through the
emulator's blob endpoint), explicit and server-numbered versions, get/list/latest, byte-identical downloads,
archive/restore, and models registered from a real job's outputs."""

import hashlib
import uuid
from pathlib import Path

import pytest
from azure.ai.ml import Output, command
from azure.ai.ml.entities import AmlCompute, Environment, Model
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError

from tests.e2e.sdk_releases import NEWEST, run_probe
from tests.e2e.test_assets_sdk import _files
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
CLUSTER = "models-e2e"


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture()
def weights(tmp_path) -> Path:
    path = tmp_path / "model.pkl"
    path.write_bytes(uuid.uuid4().bytes * 4096 + bytes(range(256)))  # unique: a fresh upload every run
    return path


@pytest.fixture()
def model_dir(tmp_path) -> Path:
    root = tmp_path / "model_dir"
    (root / "sub").mkdir(parents=True)
    (root / "config.json").write_text('{"layers": 3}\n')
    (root / "sub" / "weights.bin").write_bytes(uuid.uuid4().bytes * 3000)
    (root / "sub" / "empty.txt").write_bytes(b"")
    return root


def test_a_local_file_registers_downloads_byte_identical_and_cannot_change(ml_client, weights, tmp_path):
    name = _name("file-model")
    model = ml_client.models.create_or_update(Model(name=name, version="3", path=str(weights),
                                                    description="from a file", tags={"team": "ml"}))
    assert (model.name, model.version, model.type, model.stage) == (name, "3", "custom_model", "Development")
    assert model.path.startswith("azureml://subscriptions/") and "/datastores/workspaceblobstore/paths/" in model.path
    assert model.path.endswith("/model.pkl") and not model.flavors and model.job_name is None
    got = ml_client.models.get(name, version="3")
    assert (got.path, got.description, got.tags) == (model.path, "from a file", {"team": "ml"})
    ml_client.models.download(name, "3", download_path=str(tmp_path / "down"))
    assert (tmp_path / "down" / name / "model.pkl").read_bytes() == weights.read_bytes()
    # Version 3 is that file for good: other content under the same version is refused, and nothing changes.
    other = tmp_path / "other.pkl"
    other.write_bytes(b"different weights")
    with pytest.raises(ResourceExistsError) as refused:
        ml_client.models.create_or_update(Model(name=name, version="3", path=str(other)))
    assert "modelUri" in str(refused.value)
    assert ml_client.models.get(name, version="3").path == model.path


def test_a_local_folder_registers_and_downloads_byte_identical(ml_client, model_dir, tmp_path):
    name = _name("folder-model")
    model = ml_client.models.create_or_update(Model(name=name, version="1", path=str(model_dir),
                                                    type="triton_model"))
    assert model.type == "triton_model" and model.path.rstrip("/").endswith("/model_dir")
    ml_client.models.download(name, "1", download_path=str(tmp_path / "down"))
    assert _files(tmp_path / "down" / name / "model_dir") == _files(model_dir)


def test_versions_numbered_by_the_server_latest_and_lists(ml_client, weights, model_dir):
    name = _name("auto-model")
    first = ml_client.models.create_or_update(Model(name=name, path=str(weights)))
    second = ml_client.models.create_or_update(Model(name=name, path=str(model_dir), type="mlflow_model",
                                                     flavors={"python_function": {"loader_module": "m"}}))
    assert (first.version, second.version) == ("1", "2")
    latest = ml_client.models.get(name, label="latest")
    assert (latest.version, latest.type, latest.flavors) == ("2", "mlflow_model",
                                                              {"python_function": {"loader_module": "m"}})
    assert sorted(m.version for m in ml_client.models.list(name=name)) == ["1", "2"]
    listed = {m.name: m for m in ml_client.models.list()}
    assert listed[name].latest_version == "2"
    with pytest.raises(ResourceNotFoundError):
        ml_client.models.get(name, version="9")


def test_archive_and_restore(ml_client, weights):
    name = _name("arch-model")
    for version in ("1", "2"):
        ml_client.models.create_or_update(Model(name=name, version=version, path=str(weights), stage="Production"))
    ml_client.models.archive(name, version="1")
    assert [m.version for m in ml_client.models.list(name=name)] == ["2"]
    assert ml_client.models.get(name, version="1").stage == "Production"  # still there, stage kept
    ml_client.models.restore(name, version="1")
    ml_client.models.archive(name)  # every version
    assert name not in {m.name for m in ml_client.models.list()}
    ml_client.models.restore(name)
    assert sorted(m.version for m in ml_client.models.list(name=name)) == ["1", "2"]


def test_bad_model_uris_are_refused_naming_the_field(ml_client):
    for path in ("azureml://jobs/no-such-job-here/outputs/artifacts/paths/outputs/model.pkl",
                 "azureml://datastores/nostore/paths/model.pkl"):
        with pytest.raises(HttpResponseError) as refused:
            ml_client.models.create_or_update(Model(name=_name("bad-model"), version="1", path=path))
        assert refused.value.status_code == 400 and "properties.modelUri" in str(refused.value)


@pytest.fixture(scope="module")
def trained_job(ml_client) -> tuple[str, bytes, bytes]:
    """A tiny command job that writes model.pkl into ./outputs and weights.bin into its named output."""
    ml_client.compute.begin_create_or_update(
        AmlCompute(name=CLUSTER, size="Standard_DS2_v2", min_instances=0, max_instances=1,
                   idle_time_before_scale_down=5)).result()
    script = ("import os, sys; os.makedirs('outputs', exist_ok=True); "
              "open('outputs/model.pkl', 'wb').write(b'pickled by the job' * 100); "
              "open(os.path.join(sys.argv[1], 'weights.bin'), 'wb').write(bytes(range(256)) * 40)")
    job = ml_client.jobs.create_or_update(command(
        command=f'python -c "{script}" ${{{{outputs.model}}}}', environment=Environment(image="python:3.11-slim"),
        outputs={"model": Output(type="uri_folder")}, compute=CLUSTER, display_name="models-e2e-train"))
    status = wait_until(lambda: (s := ml_client.jobs.get(job.name).status) in ("Completed", "Failed", "Canceled")
                        and s, timeout=300, interval=1, message=f"job {job.name} to end")
    assert status == "Completed"
    return job.name, b"pickled by the job" * 100, bytes(range(256)) * 40


def test_a_model_from_a_jobs_artifacts(ml_client, trained_job, tmp_path):
    job_name, pickled, _ = trained_job
    name = _name("job-model")
    model = ml_client.models.create_or_update(Model(
        name=name, version="1", path=f"azureml://jobs/{job_name}/outputs/artifacts/paths/outputs/model.pkl"))
    assert model.job_name == job_name
    assert "/datastores/workspaceartifactstore/paths/ExperimentRun/dcid." in model.path
    assert ml_client.models.get(name, version="1").job_name == job_name
    ml_client.models.download(name, "1", download_path=str(tmp_path))
    assert (tmp_path / name / "model.pkl").read_bytes() == pickled


def test_a_model_from_a_jobs_named_output(ml_client, trained_job, tmp_path):
    job_name, _, weights = trained_job
    name = _name("output-model")
    model = ml_client.models.create_or_update(Model(name=name, path=f"azureml://jobs/{job_name}/outputs/model",
                                                    type="custom_model"))
    assert (model.version, model.job_name) == ("1", job_name)
    assert model.path.endswith(f"/datastores/workspaceblobstore/paths/azureml/{job_name}/model/")
    ml_client.models.download(name, "1", download_path=str(tmp_path))
    assert _files(tmp_path / name / "model") == {"weights.bin": weights}
    with pytest.raises(HttpResponseError) as refused:
        ml_client.models.create_or_update(Model(name=name, path=f"azureml://jobs/{job_name}/outputs/nosuch"))
    assert refused.value.status_code == 400 and "nosuch" in str(refused.value)
    assert [m.version for m in ml_client.models.list(name=name)] == ["1"]


@pytest.mark.parametrize("release", NEWEST)
def test_model_flow_on_each_sdk_release(stack, weights, tmp_path, release):
    name = "e2e-model-v" + release.replace(".", "")
    seen, _ = run_probe(release, Path(__file__).with_name("model_probe.py"), weights, name, tmp_path / "down")
    assert seen == {"versions": ["1", "2"], "latest": "2", "listed": ["1", "2"],
                    "downloaded": hashlib.sha256(weights.read_bytes()).hexdigest()}
