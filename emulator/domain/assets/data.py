"""Data assets: a version's body (uri_file, uri_folder, mltable at a datastore path) and the ways a job input
names one. Pure: whether the path exists, and which version is latest, the service finds out.

A job input names a data asset as the SDK sends it, an ARM id (`/subscriptions/.../workspaces/<ws>/data/<name>/
versions/<version>`, which the SDK makes of `azureml:<name>:<version>` and of `azureml:<name>@latest`, the
latter with the prefix left on the name: `.../data/azureml:<name>/versions/<version>`), or as a
REST client may write it, `azureml:<name>:<version>` or `azureml:<name>@latest`.
"""

import re
from dataclasses import dataclass

from emulator.domain import payload
from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import datastores
from emulator.errors import ValidationFailed

TARGET = "properties.dataUri"
# The REST API's DataType values; the SDK sends them in these spellings.
URI_FILE, URI_FOLDER, MLTABLE = "uri_file", "uri_folder", "mltable"
DATA_TYPES = (URI_FILE, URI_FOLDER, MLTABLE)
MLTABLE_FILE = "MLTable"  # the file an mltable folder must hold
LATEST = "latest"
_ARM = re.compile(r"^(?:azureml:)?/subscriptions/([^/]+)/resourcegroups/([^/]+)/providers/"
                  r"Microsoft\.MachineLearningServices/workspaces/([^/]+)/data/(?:azureml:)?([^/]+)/versions/([^/]+)$",
                  re.IGNORECASE)
_SHORT = re.compile(r"^azureml:([^/:@]+)(?::([^/:@]+)|@([^/:@]+))$", re.IGNORECASE)


def _data_type(value: object) -> str:
    if not isinstance(value, str) or value.lower() not in DATA_TYPES:
        raise ValidationFailed(f"properties.dataType must be one of {', '.join(DATA_TYPES)}, got {value!r}.",
                               target="properties.dataType")
    return value.lower()


def _data_uri(value: object) -> str:
    """A datastore URI, or (in a registry, which has no datastores) a blob URL of its storage: the owner's
    resolver checks which. Other web URLs (external data) are not emulated as assets."""
    uri = payload.required_string(value, TARGET)
    lowered = uri.lower()
    if not lowered.startswith(("azureml://datastores/", "azureml://subscriptions/", "https://")):
        raise ValidationFailed(f"{TARGET} must be a datastore URI ({datastores.SHORT_FORM} or "
                               f"{datastores.LONG_FORM}), got {uri[:200]!r}: amlemu keeps data in the workspace's "
                               "datastores (the SDK uploads a local path there first).", target=TARGET)
    return uri


def _referenced_uris(value: object) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationFailed("properties.referencedUris must be a list of strings.",
                               target="properties.referencedUris")
    return value


def checked(props: dict, common: dict) -> dict:
    """A data version's spec from its checked `common` properties (description, tags, ...) and the rest."""
    spec = {**common, "dataType": _data_type(props.get("dataType")), "dataUri": _data_uri(props.get("dataUri"))}
    if (uris := _referenced_uris(props.get("referencedUris"))) is not None:
        spec["referencedUris"] = uris
    if props.get("autoDeleteSetting") is not None:
        spec["autoDeleteSetting"] = payload.obj(props["autoDeleteSetting"], "properties.autoDeleteSetting")
    return spec


def missing_files(data_type: str, uri: str, is_file: bool, is_dir: bool, has_mltable: bool) -> str | None:
    """Why the files at `uri` cannot be a `data_type` asset, or None when they can."""
    if data_type == URI_FILE and not is_file:
        return f"no file at {uri}" + (" (it is a folder: register it as uri_folder)" if is_dir else "")
    if data_type != URI_FILE and not is_dir:
        return f"no folder at {uri}" + (" (it is a file: register it as uri_file)" if is_file else "")
    if data_type == MLTABLE and not has_mltable:
        return f"the folder {uri} holds no {MLTABLE_FILE} file, which an mltable asset needs"
    return None


@dataclass(frozen=True)
class DataRef:
    name: str
    version: str | None  # None: the label below
    label: str | None = None


def input_reference(ref: WorkspaceRef, uri: str, target: str) -> DataRef | None:
    """The data asset a job input's uri names, or None when it names none (a datastore URI, ...)."""
    if match := _ARM.fullmatch(uri):
        named = WorkspaceRef(match[1], match[2], match[3])
        if named.key != ref.key:
            raise ValidationFailed(f"{target} names a data asset of workspace '{named.name}' (resource group "
                                   f"'{named.resource_group}'); a job reads the data assets of its own workspace, "
                                   f"'{ref.name}'.", target=target)
        return DataRef(match[4], match[5])
    if match := _SHORT.fullmatch(uri):
        if match[3] is not None and match[3].lower() != LATEST:
            raise ValidationFailed(f"{target}: the only data asset label is '@{LATEST}', got '@{match[3]}'.",
                                   target=target)
        return DataRef(match[1], match[2], None if match[2] else LATEST)
    return None
