"""Runs in a fresh interpreter with the `amlemu env` variables: a registry of the user's own through the real SDK
(create, models, environments and data in it, share, download, refusals, delete); prints JSON of what it saw.

Usage: python user_registry_probe.py WORK_DIR
"""

import json
import os
import sys
from pathlib import Path

from azure.ai.ml import MLClient
from azure.ai.ml.entities import Data, Environment, Model, Registry, RegistryRegionDetails
from azure.identity import DefaultAzureCredential
from registry_probe import _error  # beside this file, on the path of a script run from there


def _registry(name: str) -> Registry:
    return Registry(name=name, location="eastus", replication_locations=[RegistryRegionDetails(location="eastus")])


def main(work: Path) -> None:
    cred = DefaultAzureCredential()
    sub, rg = os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"]
    ml = MLClient(cred, sub, rg, os.environ["AMLEMU_WORKSPACE"])
    made = ml.registries.begin_create(Registry(name="probe-reg", location="westeurope", replication_locations=[
        RegistryRegionDetails(location="westeurope"), RegistryRegionDetails(location="eastus")])).result()
    reg = MLClient(cred, sub, rg, registry_name="probe-reg")
    (work / "model.pkl").write_text("weights")
    (work / "rows").mkdir()
    (work / "rows" / "a.csv").write_text("x\n1\n")
    reg.models.create_or_update(Model(name="clf", version="1", path=str(work / "model.pkl")))
    reg.models.create_or_update(Model(name="clf", version="2", path=str(work / "model.pkl")))
    reg.environments.create_or_update(Environment(name="env", version="1", image="python:3.11-slim"))
    reg.data.create_or_update(Data(name="rows", version="1", path=str(work / "rows"), type="uri_folder"))
    ml.environments.create_or_update(Environment(name="ws-env", version="1", image="python:3.11-slim"))
    shared = ml.environments.share("ws-env", "1", registry_name="probe-reg", share_with_name="team-env",
                                   share_with_version="1")
    reg.models.download("clf", "1", download_path=str(work / "down"))
    seen = {"regions": [r.location for r in made.replication_locations],
            "listed": [r.name for r in ml.registries.list()],
            "in_subscription": [r.name for r in ml.registries.list(scope="subscription")],
            "latest": reg.models.get("clf", label="latest").version,
            "versions": sorted(m.version for m in reg.models.list(name="clf")),
            "models": [m.name for m in reg.models.list()], "data": [d.name for d in reg.data.list()],
            "environments": sorted(e.name for e in reg.environments.list()), "shared": shared.id,
            "downloaded": sorted(p.relative_to(work / "down").as_posix() for p in (work / "down").rglob("*")
                                 if p.is_file()),
            "unknown_version": _error(lambda: reg.models.get("clf", version="9")),
            "bad_name": _error(lambda: ml.registries.begin_create(_registry("a!")).result()),
            "builtin_name": _error(lambda: ml.registries.begin_create(_registry("azureml")).result())}
    ml.registries.begin_delete(name="probe-reg").result()
    seen["after_delete"] = [r.name for r in ml.registries.list()]
    seen["gone"] = _error(lambda: MLClient(cred, sub, rg, registry_name="probe-reg"))
    print(json.dumps(seen))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
