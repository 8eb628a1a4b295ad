"""Runs in a fresh interpreter with the `amlemu env` variables: the SDK's own datastore path for job inputs
and outputs (get_datastore_info, then azure-storage-blob on the host-style URL), as jobs.create_or_update
uploads a local input and jobs.download fetches an output; prints JSON.

Usage: python datastore_probe.py SOURCE_DIR DOWNLOAD_DIR
"""

import json
import os
import sys

from azure.ai.ml import MLClient
from azure.ai.ml._artifacts._artifact_utilities import (
    _upload_and_generate_remote_uri,
    download_artifact_from_aml_uri,
    get_datastore_info,
)
from azure.identity import DefaultAzureCredential


def main(source: str, destination: str) -> None:
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                  os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
    info = get_datastore_info(ml.datastores, "workspaceblobstore")
    uri = _upload_and_generate_remote_uri(ml._operation_scope, ml.datastores, source, show_progress=False)
    download_artifact_from_aml_uri(uri, destination, ml.datastores)
    print(json.dumps({"default": ml.datastores.get_default().name,
                      "listed": sorted(d.name for d in ml.datastores.list()),
                      "account_url": info["account_url"], "container": info["container_name"],
                      "credential_is_sas": isinstance(info["credential"], str) and "sig=" in info["credential"],
                      "uri": uri}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
