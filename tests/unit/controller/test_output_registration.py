"""A job's named outputs become assets of its workspace as it completes: data for uri_* and mltable outputs, a
model for model outputs; what cannot be registered is a warning, and the job completes all the same."""

from emulator.controller.effects import Effects
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.domain.jobs import artifacts
from emulator.domain.storage import datastores
from emulator.services import assets, workspaces
from emulator.settings import Settings
from emulator.store.tables import Job
from tests.unit.controller.conftest import NOON


def _finalizing(repo, ref, name: str, outputs: dict) -> None:
    repo.add(Job(key=ref.child_id("jobs", name).lower(), workspace_key=ref.key, name=name,
                 compute_key=ref.child_id("computes", "c").lower(), body={"outputs": outputs}, status="Finalizing",
                 created_at=NOON, modified_at=NOON, status_changed_at=NOON))


def _written(data_dir, ref, job: str, output: str, entry: dict) -> None:
    """What the job wrote to the output, where it is mounted from."""
    folder = data_dir / artifacts.blob_dir(datastores.resolve_uri(ref, artifacts.output_uri(job, output, entry), "u"))
    folder.mkdir(parents=True)
    (folder / "part-0.csv").write_text("a,b\n")


def test_named_outputs_register_as_data_and_models_and_a_taken_version_is_a_warning(store, tmp_path):
    settings = Settings(data_dir=tmp_path)
    ref = workspaces.default_ref(settings)
    outputs = {"rows": {"jobOutputType": "uri_folder", "assetName": "clean-rows", "assetVersion": "3"},
               "model": {"jobOutputType": "custom_model", "assetName": "classifier"},
               "plain": {"jobOutputType": "uri_folder"}}
    with store.transaction() as repo:
        workspaces.ensure_default(repo, settings, NOON)
        for name, entry in outputs.items():
            _written(tmp_path, ref, "train", name, entry)
        _finalizing(repo, ref, "train", outputs)
    reconciler = JobReconciler(settings, lambda *_: None, lambda _env: None)
    with store.transaction() as repo:
        reconciler.tick(repo, NOON, Effects())
    with store.transaction() as repo:  # a later job with the same name and version: taken by then
        _finalizing(repo, ref, "again", {"rows": outputs["rows"]})
        _written(tmp_path, ref, "again", "rows", outputs["rows"])
    with store.transaction() as repo:
        reconciler.tick(repo, NOON, Effects())

    with store.transaction() as repo:
        data = assets.get(repo, ref, assets.DATA, "clean-rows", "3")
        model = assets.get(repo, ref, assets.MODELS, "classifier", "1")
        jobs = {j.name: j for j in repo.jobs(ref.key)}
        assert data.body["dataUri"] == artifacts.output_uri("train", "rows", outputs["rows"])
        assert data.body["dataType"] == "uri_folder"
        assert (model.body["modelType"], model.body["jobName"]) == ("custom_model", "train")
        assert [v.version for v in assets.versions(repo, ref, assets.DATA, "clean-rows")] == ["3"]
        assert {j.status for j in jobs.values()} == {"Completed"}
        assert "warning" not in jobs["train"].history[-1]
        assert "clean-rows:3" in jobs["again"].history[-1]["warning"]
