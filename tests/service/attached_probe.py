"""Runs in a fresh interpreter with the `amlemu env` variables: attaches a stand-in host as a VirtualMachineCompute
through the SDK (begin_attach with an SSH key file), reads it back, lists it, tries a wrong user and a malformed key,
then detaches it; prints JSON of what the SDK saw.

Usage: python attached_probe.py ADDRESS USER KEY_FILE BAD_KEY_FILE
"""

import json
import os
import sys

from azure.ai.ml import MLClient
from azure.ai.ml.entities import VirtualMachineCompute, VirtualMachineSshSettings
from azure.core.exceptions import HttpResponseError
from azure.identity import DefaultAzureCredential


def vm(name: str, address: str, user: str, key_file: str) -> VirtualMachineCompute:
    sub, group = os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"]
    return VirtualMachineCompute(
        name=name, resource_id=f"/subscriptions/{sub}/resourceGroups/{group}/providers/Microsoft.Compute/"
                               f"virtualMachines/{address}",
        ssh_settings=VirtualMachineSshSettings(admin_username=user, ssh_port=22, ssh_private_key_file=key_file))


def refused(ml: MLClient, compute: VirtualMachineCompute) -> dict:
    try:
        ml.compute.begin_create_or_update(compute).result()
    except HttpResponseError as exc:
        return {"status": exc.status_code, "target": exc.response.json()["error"].get("target")}
    return {"status": "accepted"}


def main(address: str, user: str, key_file: str, bad_key_file: str) -> None:
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                  os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
    attached = ml.compute.begin_attach(vm("box", address, user, key_file)).result()
    got = ml.compute.get("box")
    seen = {"attached": type(attached).__name__, "type": got.type, "state": got.provisioning_state,
            "resource_id": got.resource_id, "user": got.ssh_settings.admin_username,
            "port": got.ssh_settings.ssh_port, "password": got.ssh_settings.admin_password,
            "key_file": got.ssh_settings.ssh_private_key_file,
            "listed": [c.name for c in ml.compute.list()],
            "wrong_user": refused(ml, vm("wrong-user", address, "nobody", key_file)),
            "malformed_key": refused(ml, vm("malformed", address, user, bad_key_file))}
    ml.compute.begin_delete("box", action="Detach")  # no controller here: it starts, the controller finishes it
    seen["after_detach"] = ml.compute.get("box").provisioning_state
    seen["all"] = sorted(c.name for c in ml.compute.list())
    print(json.dumps(seen))


if __name__ == "__main__":
    main(*sys.argv[1:5])
