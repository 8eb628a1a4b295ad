"""A data folder of an earlier version, where two workspaces named alike shared one storage account, moves
at start-up to one account per workspace: folders, property sidecars and stored blob URLs; twice is once."""

import hashlib
import json
from datetime import UTC, datetime

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access, datastores
from emulator.services import account_migration
from emulator.store.db import Store
from emulator.store.tables import AssetVersion, Job, Workspace

SUB = "00000000-0000-0000-0000-000000000000"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# Same first 14 letters: earlier versions gave both "projectalphabestore".
ONE, TWO = WorkspaceRef(SUB, "rg", "projectalphabeta-one"), WorkspaceRef(SUB, "rg2", "projectalphabeta-two")
ALONE = WorkspaceRef(SUB, "amlemu", "amlemu")
OLD = "projectalphabestore"


def _sidecar(data, account, container, name):
    digest = hashlib.sha256(name.encode()).hexdigest()
    path = data / "blobs.meta" / account / container / digest[:2] / f"{digest}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"name": name}))
    return path.relative_to(data / "blobs.meta" / account)


def _file(data, rel, text="x"):
    path = data / "blobs" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _old_layout(tmp_path, database_url):
    """The database and blob folders as an earlier version left them."""
    data = tmp_path / "data"
    store = Store(database_url)
    with store.transaction() as repo:
        for ref in (ONE, TWO, ALONE):
            repo.add(Workspace(key=ref.key, subscription=ref.subscription, resource_group=ref.resource_group,
                               name=ref.name, location="local", body={}, created_at=NOW, modified_at=NOW))
        for ref, job, code, container in ((ONE, "job-one", "c1", "11111111-aaaa"), (TWO, "job-two", "c2", "22222222-bbbb"),
                                          (ALONE, "job-alone", "c3", "33333333-cccc")):
            account = blob_access.legacy_account(ref.name)
            repo.add(Job(key=ref.child_id("jobs", job).lower(), workspace_key=ref.key, name=job, compute_key="c",
                         body={}, status="Completed", created_at=NOW, modified_at=NOW, status_changed_at=NOW))
            repo.add(AssetVersion(key=ref.child_id("codes", code).lower() + "/versions/1", workspace_key=ref.key,
                                  kind="codes", name=code, version="1", created_at=NOW, modified_at=NOW,
                                  body={"codeUri": f"https://localhost:8443/blob/{account}/{container}/src"}))
            _file(data, f"{account}/{container}/src/train.py", ref.name)
            _file(data, f"{account}/azureml/ExperimentRun/dcid.{job}/outputs/model.pkl", ref.name)
            _sidecar(data, account, "azureml", f"ExperimentRun/dcid.{job}/outputs/model.pkl")
            _file(data, f"{account}/azureml-blobstore-{datastores.workspace_guid(ref.key)}/LocalUpload/d.csv", ref.name)
        repo.add(AssetVersion(key=TWO.child_id("environments", "e").lower() + "/versions/1", workspace_key=TWO.key,
                              kind="environments", name="e", version="1", created_at=NOW, modified_at=NOW,
                              body={"build": {"contextUri": f"https://{OLD}.blob.localhost:8443/22222222-bbbb/ctx",
                                              "dockerfilePath": "Dockerfile"}}))
    return data, store


def _migrate(store, data):
    with store.transaction() as repo:
        account_migration.migrate(repo, data)


def test_an_old_shared_account_moves_to_one_account_per_workspace(tmp_path, database_url):
    data, store = _old_layout(tmp_path, database_url)
    _migrate(store, data)
    _migrate(store, data)  # idempotent: the second run finds nothing to move
    for ref, job, code, container in ((ONE, "job-one", "c1", "11111111-aaaa"), (TWO, "job-two", "c2", "22222222-bbbb"),
                                      (ALONE, "job-alone", "c3", "33333333-cccc")):
        new = blob_access.workspace_account(ref)
        blobs = data / "blobs" / new
        assert (blobs / container / "src/train.py").read_text() == ref.name
        assert (blobs / "azureml/ExperimentRun" / f"dcid.{job}" / "outputs/model.pkl").read_text() == ref.name
        assert sorted(p.name for p in (blobs / "azureml/ExperimentRun").iterdir()) == [f"dcid.{job}"]
        assert (blobs / f"azureml-blobstore-{datastores.workspace_guid(ref.key)}/LocalUpload/d.csv").read_text() \
            == ref.name
        digest = hashlib.sha256(f"ExperimentRun/dcid.{job}/outputs/model.pkl".encode()).hexdigest()
        assert (data / "blobs.meta" / new / "azureml" / digest[:2] / f"{digest}.json").is_file()
        with store.transaction() as repo:
            row = repo.asset_version(ref.child_id("codes", code) + "/versions/1")
            assert row.body["codeUri"] == f"https://localhost:8443/blob/{new}/{container}/src"
            assert datastores.resolve_asset_uri(ref, row.body["codeUri"], "codeUri").account == new
    with store.transaction() as repo:
        env = repo.asset_version(TWO.child_id("environments", "e") + "/versions/1")
        assert env.body["build"] == {"contextUri": f"https://{blob_access.workspace_account(TWO)}.blob.localhost:8443"
                                                   "/22222222-bbbb/ctx", "dockerfilePath": "Dockerfile"}
    for account in (OLD, "amlemustore"):  # nothing left of the old accounts
        assert not (data / "blobs" / account).exists() and not (data / "blobs.meta" / account).exists()


def test_a_container_no_one_workspace_owns_stays_where_it_is(tmp_path, database_url):
    data, store = _old_layout(tmp_path, database_url)
    _file(data, f"{OLD}/44444444-dddd/orphan.txt")  # named by no version of either workspace
    _migrate(store, data)
    assert (data / "blobs" / OLD / "44444444-dddd/orphan.txt").is_file()
    assert not (data / "blobs" / OLD / "azureml").exists()


def test_a_fresh_data_folder_has_nothing_to_migrate(tmp_path, database_url):
    store = Store(database_url)
    _migrate(store, tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_the_api_migrates_an_old_data_folder_when_it_starts(tmp_path, monkeypatch, database_url):
    from emulator.api.app import create_app
    from tests.service.conftest import _settings

    settings = _settings(tmp_path, monkeypatch).model_copy(update={"database_url": database_url})
    create_app(settings).state.context.store.close()  # an earlier run made the default workspace
    _file(tmp_path, "amlemustore/azureml/ExperimentRun/dcid.old-job/outputs/model.pkl", "weights")
    _file(tmp_path, "amlemustore/0f0f0f0f-code/src/train.py", "print(1)")
    store = Store(settings.db_url)
    with store.transaction() as repo:
        repo.add(AssetVersion(key=ALONE.child_id("codes", "old").lower() + "/versions/1", workspace_key=ALONE.key,
                              kind="codes", name="old", version="1", created_at=NOW, modified_at=NOW,
                              body={"codeUri": "https://localhost:8443/blob/amlemustore/0f0f0f0f-code/src"}))
    store.close()
    app = create_app(settings)
    new = blob_access.workspace_account(ALONE)
    assert (tmp_path / "blobs" / new / "azureml/ExperimentRun/dcid.old-job/outputs/model.pkl").read_text() == "weights"
    assert not (tmp_path / "blobs" / "amlemustore").exists()
    with app.state.context.store.transaction() as repo:
        code = repo.asset_version(ALONE.child_id("codes", "old") + "/versions/1")
        assert code.body["codeUri"] == f"https://localhost:8443/blob/{new}/0f0f0f0f-code/src"
    app.state.context.store.close()
