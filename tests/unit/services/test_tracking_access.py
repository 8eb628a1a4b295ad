"""Who may use a workspace's tracking and a run's artifacts: a job's run token opens its own workspace only and
writes its own run's files only; a blob SAS for one blob opens no other."""

from datetime import UTC, datetime

import pytest

from emulator import tokens
from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access
from emulator.errors import Forbidden, Unauthorized
from emulator.services.facade.run_artifacts import RunArtifacts
from emulator.settings import Settings

SECRET = b"s" * 32
NOW = datetime.now(UTC)  # tokens are checked against the real clock
HERE, THERE = WorkspaceRef("sub", "rg", "here"), WorkspaceRef("sub", "rg", "there")


def _bearer(token: str) -> str:
    return f"Bearer {token}"


@pytest.fixture
def access(tmp_path) -> RunArtifacts:
    return RunArtifacts(Settings(data_dir=tmp_path), None, SECRET, lambda: NOW)


def test_a_jobs_token_reads_its_workspace_and_writes_its_own_run_only(access):
    token = _bearer(tokens.issue_run_token(SECRET, HERE.key, "job-a", int(NOW.timestamp())))
    access.authorize(HERE, "job-a", token, writing=True)
    access.authorize(HERE, "job-b", token, writing=False)
    with pytest.raises(Forbidden):
        access.authorize(HERE, "job-b", token, writing=True)
    with pytest.raises(Unauthorized):  # another workspace: its token is no management token either
        access.authorize(THERE, "job-a", token, writing=False)


def test_a_management_token_opens_every_run_and_a_forged_run_token_none(access):
    management, _ = tokens.issue(SECRET, "https://management.azure.com")
    access.authorize(THERE, "any", _bearer(management), writing=True)
    forged = tokens.issue_run_token(b"x" * 32, HERE.key, "job-a", int(NOW.timestamp()))
    with pytest.raises(Unauthorized):
        access.authorize(HERE, "job-a", _bearer(forged), writing=True)


def test_a_blob_sas_opens_its_blob_and_no_other():
    query = dict(p.split("=", 1) for p in blob_access.mint(SECRET, "acct", "azureml", NOW, "cw", blob="a/b").split("&"))
    from urllib.parse import unquote
    query = {k: unquote(v) for k, v in query.items()}
    blob_access.verify(SECRET, "acct", "azureml", query, NOW, "w", "a/b")
    for blob in ("a/c", "a/b/../c", ""):
        with pytest.raises(Forbidden):
            blob_access.verify(SECRET, "acct", "azureml", query, NOW, "w", blob)
