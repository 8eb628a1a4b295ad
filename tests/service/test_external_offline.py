"""Job inputs outside the workspace with fetching off (offline): the mirror or a 400 naming the URL and the mirror
command, with nothing created; keys and links that try to leave the mirror are refused."""

import os

import pytest

from emulator.domain.jobs import command_job
from emulator.store.tables import Job
from tests.service.test_api import API, assert_arm_error
from tests.service.test_external_data import ROWS, TARGET, _job, _mirror, _stored
from tests.service.test_jobs import JOBS, job_names, put_job, ready  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("ready")


def _refused(client, auth, settings, body: dict) -> str:
    response = client.put(f"{JOBS}/bad-job", params=API, headers=auth, json=body)
    message = assert_arm_error(response, 400, target=TARGET)["message"]
    assert job_names(client, auth, listViewType="All") == []
    assert not list(settings.data_dir.glob("blobs/*/*/.amlemu-external/*"))
    return message


def test_offline_with_no_mirror_the_job_is_refused_naming_the_url_and_the_mirror_command(client, auth, settings):
    message = _refused(client, auth, settings, _job("https://example.com/data/rows.csv"))
    assert "https://example.com/data/rows.csv is not in the mirror" in message
    assert "amlemu data mirror 'https://example.com/data/rows.csv' <file or folder>" in message
    assert "mirror/example.com/data/rows.csv" in message and "AMLEMU_EXTERNAL_FETCH=false" in message
    folder = _refused(client, auth, settings, _job("https://example.com/data/", "uri_folder"))
    assert "others come from the mirror" in folder


@pytest.mark.parametrize("uri", [
    "https://example.com/data/../../../../etc/passwd",
    "https://example.com/data/%2e%2e/%2e%2e/secret.csv",
    "https://example.com/data%2F..%2F..%2Fsecret.csv",
    "https://example.com/data/..%5C..%5Csecret.csv",
    "https://example.com/a%00b.csv",
    "https://user:pw@example.com/rows.csv",
    "wasbs://public@acct.blob.core.windows.net/../../../secret.csv",
    "wasbs://../x@acct.blob.core.windows.net/rows.csv",
    "https://../rows.csv",
    "https://example.com/",
    "file:///etc/passwd",
])
def test_urls_whose_key_would_leave_the_mirror_are_refused(client, auth, settings, uri):
    _refused(client, auth, settings, _job(uri))


def test_links_in_the_mirror_are_not_followed(client, auth, settings, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("root:x:0:0\n")
    os.symlink(secret, _mirror(settings, "example.com/linked.csv"))
    assert "link" in _refused(client, auth, settings, _job("https://example.com/linked.csv"))
    os.symlink(tmp_path, _mirror(settings, "example.com/dir-link"))
    assert "link" in _refused(client, auth, settings, _job("https://example.com/dir-link/secret.csv"))
    folder = _mirror(settings, "example.com/folder")
    folder.mkdir()
    (folder / "ok.csv").write_bytes(ROWS)
    os.symlink(secret, folder / "leak.csv")
    assert "leak.csv (a link)" in _refused(client, auth, settings, _job("https://example.com/folder", "uri_folder"))


def test_a_mirrored_folder_is_not_a_file(client, auth, settings):
    _mirror(settings, "example.com/rows.csv").mkdir()
    assert "needs a file" in _refused(client, auth, settings, _job("https://example.com/rows.csv"))


def test_a_direct_input_hands_the_job_its_url_and_reads_nothing(app, client, auth):
    put_job(client, auth, "job-1", _job("https://example.com/data/rows.csv", mode="Direct"))
    assert command_job.RESOLVED_INPUTS not in _stored(app, "job-1")


def test_stored_rows_stay_untouched_by_refusals(app, client, auth, settings):
    _refused(client, auth, settings, _job("https://example.com/x.csv"))
    with app.state.context.store.transaction() as repo:
        assert repo.session.query(Job).count() == 0
