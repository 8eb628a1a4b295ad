"""Data outside the workspace through the unmodified SDK, offline: an https `uri_file` input mirrored with
`amlemu data mirror` is read by the job; one that is not mirrored is refused at submit, naming the command."""

import subprocess
import sys
import uuid

import pytest
from azure.ai.ml import Input, command
from azure.ai.ml.entities import Environment
from azure.core.exceptions import HttpResponseError

from emulator.cli.stack import ROOT
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def _job(url: str):
    return command(command="cat ${{inputs.rows}}", inputs={"rows": Input(type="uri_file", path=url)},
                   environment=Environment(image="python:3.11-slim"))


def test_a_mirrored_https_file_is_what_the_job_reads(ml_client, stack, job_dir, tmp_path):
    url = f"https://data.example.com/sets/{uuid.uuid4().hex[:6]}/rows.csv"
    rows = tmp_path / "rows.csv"
    rows.write_text("sepal,petal\n5.1,1.4\n")
    with pytest.raises(HttpResponseError) as refused:  # not mirrored yet, and this stack fetches nothing
        ml_client.jobs.create_or_update(_job(url))
    assert f"amlemu data mirror '{url}'" in str(refused.value)
    mirrored = subprocess.run([sys.executable, "-c", "from emulator.cli.main import main; main()",
                               "data", "mirror", url, str(rows)], cwd=ROOT, capture_output=True, text=True)
    assert mirrored.returncode == 0, mirrored.stderr
    job = ml_client.jobs.create_or_update(_job(url))
    status = wait_until(lambda: (s := ml_client.jobs.get(job.name).status) in ("Completed", "Failed", "Canceled")
                        and s, timeout=300, interval=1.0, message=f"job {job.name} to end")
    log = (job_dir(job.name) / "user_logs" / "std_log.txt").read_text()
    assert status == "Completed", log[-2000:]
    assert "sepal,petal\n5.1,1.4" in log
    assert str(ml_client.jobs.get(job.name).inputs["rows"].path) == url
