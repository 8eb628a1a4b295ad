"""The job's Web View link (services.Studio.endpoint) opens a page on the emulator, not a 404: status, attempts,
outputs and log, behind a signature the api put in the link (a browser sends no token)."""

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from tests.service.test_api import SUB
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (`ready`: a fixture)

pytestmark = pytest.mark.usefixtures("ready")


def _page_path(body: dict) -> str:
    link = urlsplit(body["properties"]["services"]["Studio"]["endpoint"])
    return f"{link.path}?{link.query}"


def test_the_studio_link_opens_the_jobs_page_with_its_log_and_outputs(app, client, auth, settings):
    body = put_job(client, auth, "page-job", job_body(displayName="my <b>run</b>"))
    ref = WorkspaceRef(SUB, "amlemu", "amlemu")
    log = Path(settings.data_dir) / artifacts.directory(ref, "page-job") / "user_logs" / "std_log.txt"
    log.parent.mkdir(parents=True)
    log.write_text("epoch 1 loss 0.5\n<script>alert(1)</script>\n")

    page = client.get(_page_path(body))  # no Authorization header: as a browser opens it
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "NotStarted" in html and "page-job" in html and "python main.py" in html
    assert "epoch 1 loss 0.5" in html and "azureml/page-job/model/" in html  # the log's end, the output's place
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html  # the job's text is escaped
    assert "my <b>run</b>" not in html


def test_a_page_link_without_its_signature_or_for_another_job_is_refused(client, auth):
    first = put_job(client, auth, "first", job_body())
    put_job(client, auth, "second", job_body())
    path = _page_path(first)
    unsigned = client.get(path.split("?")[0])  # no signature, no session: the page says how to get one
    assert unsigned.status_code == 401 and "amlemu studio" in unsigned.text
    assert client.get(path.replace("/jobs/first", "/jobs/second")).status_code == 401
    assert client.get(path + "0").status_code == 401
    assert client.get(path).status_code == 200
