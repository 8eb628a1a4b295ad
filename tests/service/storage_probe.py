"""Runs in a fresh interpreter with the `amlemu env` variables: reads back, through the SDK's own parsers, every
storage URL the api hands out for code, models, data and datastores, and downloads each; prints JSON of what
the SDK saw, and of every host name the process looked up (nothing may leave the machine).

Usage: python storage_probe.py WORK_DIR
"""

import hashlib
import json
import os
import socket
import sys
from pathlib import Path

LOOKED_UP: set[str] = set()
_getaddrinfo = socket.getaddrinfo


def _recording(host, *args, **kwargs):
    LOOKED_UP.add(host.decode() if isinstance(host, bytes) else str(host))
    return _getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _recording

from azure.ai.ml import MLClient  # noqa: E402  (after the lookup recorder, so every lookup is seen)
from azure.ai.ml._artifacts._artifact_utilities import download_artifact_from_aml_uri  # noqa: E402
from azure.ai.ml.entities import Data, Model  # noqa: E402
from azure.ai.ml.entities._assets import Code  # noqa: E402
from azure.identity import DefaultAzureCredential  # noqa: E402


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def main(work: Path) -> None:
    source = work / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "train.py").write_text("print('train')\n")
    (source / "pkg" / "weights.bin").write_bytes(os.urandom(3000))
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                  os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
    seen = {"source": _digest(source)}
    code = ml._code.create_or_update(Code(name="probe-code", version="1", path=str(source)))
    seen["code_path"] = ml._code.get("probe-code", "1").path
    ml._code.download("probe-code", "1", work / "code")
    seen["code"] = _digest(work / "code")
    seen["code_created_path"] = code.path
    ml.models.create_or_update(Model(name="probe-model", version="1", path=str(source)))
    ml.models.download("probe-model", "1", download_path=str(work / "model"))
    seen["model"] = _digest(work / "model" / "probe-model" / "src")
    data = ml.data.create_or_update(Data(name="probe-data", version="1", type="uri_folder", path=str(source)))
    download_artifact_from_aml_uri(ml.data.get("probe-data", version="1").path, str(work / "data"), ml.datastores)
    seen["data"], seen["data_path"] = _digest(work / "data"), data.path
    store = ml.datastores.get("workspaceblobstore")
    seen["datastore"] = {"account_name": store.account_name, "endpoint": store.endpoint,
                         "protocol": store.protocol}
    seen["looked_up"] = sorted(LOOKED_UP)
    print(json.dumps(seen))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
