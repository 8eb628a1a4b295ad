"""Runs in a fresh interpreter with the `amlemu env` variables: data assets through the SDK (local paths
uploaded, a datastore URI, explicit and auto versions, get, list, @latest, archive/restore, download by the artifact utility: SDK 1.35 has no data.download) and a
job naming them as inputs (submitted only: no controller runs); prints JSON of what the SDK saw.

Usage: python data_probe.py WORK_DIR
"""

import json
import os
import sys
from pathlib import Path

from azure.ai.ml import Input, MLClient, command
from azure.ai.ml._artifacts._artifact_utilities import download_artifact_from_aml_uri
from azure.ai.ml.entities import Data, Environment
from azure.core.exceptions import HttpResponseError
from azure.identity import DefaultAzureCredential

MLTABLE = "paths:\n  - file: ./rows.csv\ntransformations:\n  - read_delimited:\n      delimiter: ','\n"


def _files(work: Path) -> tuple[Path, Path, Path]:
    (work / "folder" / "sub").mkdir(parents=True)
    (work / "folder" / "a.csv").write_text("a\n1\n")
    (work / "folder" / "sub" / "b.txt").write_text("bee")
    (work / "table").mkdir()
    (work / "table" / "MLTable").write_text(MLTABLE)
    (work / "table" / "rows.csv").write_text("x,y\n1,2\n")
    (work / "one.csv").write_text("x\n42\n")
    return work / "one.csv", work / "folder", work / "table"


def _assets(ml: MLClient, work: Path) -> dict:
    one, folder, table = _files(work)
    seen = {}
    made = ml.data.create_or_update(Data(name="onefile", version="7", type="uri_file", path=str(one)))
    seen["file"] = {"version": made.version, "type": made.type, "path": made.path}
    auto = [ml.data.create_or_update(Data(name="folder", type="uri_folder", path=str(folder),
                                          description=f"round {i}")).version for i in (1, 2)]
    seen["auto_versions"] = auto
    seen["mltable"] = ml.data.create_or_update(Data(name="table", type="mltable", path=str(table))).path
    uri = ml.data.get("folder", version="1").path
    remote = ml.data.create_or_update(Data(name="remote", version="1", type="uri_folder", path=uri))
    seen["remote"] = {"path": remote.path, "given": uri}
    seen["containers"] = sorted((d.name, d.latest_version) for d in ml.data.list())
    seen["folder_versions"] = sorted(d.version for d in ml.data.list(name="folder"))
    seen["latest"] = ml.data.get("folder", label="latest").version
    ml.data.archive("folder", version="2")
    seen["after_archive"] = sorted(d.version for d in ml.data.list(name="folder"))
    ml.data.restore("folder", version="2")
    seen["after_restore"] = sorted(d.version for d in ml.data.list(name="folder"))
    ml.data.archive("remote")
    seen["archived_containers"] = sorted(d.name for d in ml.data.list())
    ml.data.restore("remote")
    # SDK 1.35 has no data.download; its artifact download is what reads a data asset's files back
    download_artifact_from_aml_uri(ml.data.get("folder", version="1").path, str(work / "dl"), ml.datastores)
    seen["downloaded"] = sorted(p.relative_to(work / "dl").as_posix() for p in (work / "dl").rglob("*")
                                if p.is_file())
    try:
        ml.data.create_or_update(Data(name="ghost", version="1", type="uri_folder",
                                      path="azureml://datastores/workspaceblobstore/paths/nothing/here/"))
        seen["ghost"] = None
    except HttpResponseError as exc:
        seen["ghost"] = str(exc.message)
    return seen


def _job(ml: MLClient, inputs: dict) -> dict:
    job = ml.jobs.create_or_update(command(command="ls ${{inputs.data}}", inputs=inputs,
                                           environment=Environment(image="python:3.11-slim"),
                                           instance_type="Standard_DS3_v2"))
    return {name: str(value.path) for name, value in ml.jobs.get(job.name).inputs.items()}


def _jobs(ml: MLClient) -> dict:
    seen = {"latest_input": _job(ml, {"data": Input(type="uri_folder", path="azureml:folder@latest")}),
            "versioned_input": _job(ml, {"data": Input(type="uri_file", path="azureml:onefile:7")})}
    try:
        _job(ml, {"data": Input(type="uri_folder", path="azureml:folder:99")})
        seen["unknown_version"] = None
    except HttpResponseError as exc:
        seen["unknown_version"] = str(exc.message)
    return seen


def main(work: str) -> None:
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                  os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
    print(json.dumps({**_assets(ml, Path(work)), **_jobs(ml)}))


if __name__ == "__main__":
    main(sys.argv[1])
