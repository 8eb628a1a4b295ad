"""What tests/operations_page.py cannot read off the SDK's source or the route table, kept by hand, each entry
with its reason: REST calls the SDK makes through other libraries (azure-storage-blob, azure-mgmt-resource) or to
URLs it is handed at run time, limitations of operations whose calls are served, operations that run in the SDK
alone; and the page's prose."""

from dataclasses import dataclass

from tests.sdk_source import RestCall

PROVIDER = "/providers/Microsoft.MachineLearningServices"
RG_PATH = f"/subscriptions/{{subscriptionId}}/resourceGroups/{{resourceGroupName}}{PROVIDER}"
WS_PATH = RG_PATH + "/workspaces/{workspaceName}"
BLOB = "https://{account}.blob.{storageSuffix}"  # a datastore's blob URLs, host-style as the SDK builds them


@dataclass(frozen=True)
class Hand:
    calls: tuple[tuple[RestCall, bool | None], ...]  # each call, and whether it is served: None = the route table says
    why: str


def _calls(*texts: str, served: bool | None = None) -> tuple[tuple[RestCall, bool | None], ...]:
    """Calls written `METHOD path`, `{ws}` standing for the workspace's path."""
    return tuple((RestCall(path.replace("{ws}", WS_PATH), method), served)
                 for method, path in (text.split(" ", 1) for text in texts))


_UPLOAD = _calls(f"HEAD {BLOB}/{{container}}/{{blob}}", f"PUT {BLOB}/{{container}}/{{blob}}")
_DOWNLOAD = _calls(f"GET {BLOB}/{{container}}", f"GET {BLOB}/{{container}}/{{blob}}")
_BLOBS = "files go through azure-storage-blob, whose requests the SDK's source does not spell"

# Reads of the workspace and its datastores serve nearly every operation: alone they make nothing partial.
CONTEXT_CALLS = frozenset({"GET {ws}", "GET {ws}/datastores", "GET {ws}/datastores/{name}",
                           "POST {ws}/datastores/{name}/listSecrets"})

HAND_CALLS: dict[tuple[str, str], Hand] = {
    ("_code", "create_or_update"): Hand(_UPLOAD, "the snapshot is uploaded: " + _BLOBS),
    ("_code", "download"): Hand(_DOWNLOAD, _BLOBS),
    ("models", "create_or_update"): Hand(_UPLOAD, "local model files are uploaded: " + _BLOBS),
    ("models", "download"): Hand(_DOWNLOAD, _BLOBS),
    ("data", "create_or_update"): Hand(_UPLOAD, "local files are uploaded: " + _BLOBS),
    ("jobs", "download"): Hand(_DOWNLOAD, "outputs and logs: " + _BLOBS),
    ("jobs", "stream"): Hand(_calls(f"GET {BLOB}/{{container}}/{{blob}}"),
                             "the log files are read from the URLs the run's details hand out"),
    ("workspaces", "begin_create"): Hand(_calls(
        "PUT /subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}/providers/Microsoft.Resources"
        "/deployments/{deploymentName}",
        "GET /subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}/deployments/{deploymentName}"
        "/operations"), "the workspace is created by deploying the SDK's ARM template through azure-mgmt-resource"),
    ("online_endpoints", "invoke"): Hand(_calls("POST {scoringUri}", served=True),
                                         "the request goes to the endpoint's scoring URI, which amlemu's scoring "
                                         "proxy serves (not the control plane's route table)"),
    ("batch_endpoints", "invoke"): Hand(_calls("POST {ws}/batchEndpoints/{endpointName}/jobs"),
                                        "the job is posted to the endpoint's scoring URI, which amlemu sets to this "
                                        "path of its own"),
}

# Operations whose calls are served (or run elsewhere) but which do not work as on Azure, with why.
LIMITS: dict[tuple[str, str], tuple[str, str]] = {
    ("compute", "begin_attach"): ("partial", "attaches Kubernetes (README, \"Kubernetes compute\"), a VM, Synapse "
                                            "Spark ...: amlemu attaches Kubernetes compute and answers 400 for the "
                                            "other attached types"),
    ("data", "mount"): ("not yet", "mounts with azureml-dataprep-rslex's FUSE driver (not installed with azure-ai-ml), "
                                   "or on a compute instance through `updateDataMounts`, which amlemu does not serve"),
    ("datastores", "mount"): ("not yet", "mounts with azureml-dataprep-rslex's FUSE driver (not installed with "
                                         "azure-ai-ml), or on a compute instance through `updateDataMounts`"),
    ("data", "import_data"): ("not yet", "submits an import job (a copy from a database or S3 by Azure's data "
                                         "import service), a job type amlemu does not run"),
    ("indexes", "build_index"): ("not yet", "submits a pipeline of Azure's retrieval-augmented-generation components "
                                            "from the `azureml` registry, where amlemu holds only curated "
                                            "environments"),
}

# Operations that make no REST call at all.
CLIENT_SIDE: dict[tuple[str, str], str] = {
    ("components", "prepare_for_sign"): "runs in the SDK: it hashes the component's code files locally",
}

INTRO = """# Supported operations

Every public method of the operation groups of `MLClient` in azure-ai-ml {version} (the version installed with
amlemu's tests), the REST calls it makes, and whether amlemu serves them: **{total} operations, {supported}
supported, {partial} partial, {not_yet} not yet**. Generated by `{command}`; a unit test
(tests/unit/test_operations_page.py) fails when this page is stale.

How it is made:

- **REST calls** are read off the SDK's own source (tests/sdk_rest_calls.py): from the public method through its
  helpers down to the generated REST clients' `build_*_request` functions (method and URL template), and to the
  requests the SDK builds itself. A method's calls are those any of its branches can make, so an operation may list
  calls only some uses make. Calls it makes through another group's operation (`jobs.create_or_update` gets the
  compute with `compute.get`) are named in the note as "through", not repeated. Calls made through other libraries
  (blob uploads and downloads, the ARM template deployment of a workspace) or to URLs handed out at run time (a
  scoring URI) are kept by hand in tests/operations_notes.py, each with its reason in the note.
- **Served** means a route of the emulator's control plane (`create_app()`'s route table) matches the call's method
  and path, ARM-style (literal segments ignoring case) and not one whose handler only answers "amlemu does not
  support ... yet". ✗ marks a call no route serves.
- **Status**: *supported* when every call is served; *not yet* when none is (reads of the workspace and its
  datastores, which nearly every operation makes, do not count); *partial* otherwise, the note naming what is not
  served. An operation that only calls other groups' operations takes their status. A few operations whose calls
  are served but which do not work as on Azure carry a status and reason kept by hand (tests/operations_notes.py).
- **†** marks the operations the end-to-end read-back sweep drives through the real SDK against a running stack
  (tests/e2e/test_readback_sweep.py, listed in tests/sdk_surface.py and README's table).
- Registry-scoped calls (`MLClient(..., registry_name=...)`) are listed where the SDK builds them itself; the
  generated clients' registry operations, chosen at run time, are not.

Paths are shortened:

{legend}
"""
EXTRAS = """## The emulator's own endpoints

Besides the Azure ML API, amlemu serves its own controls under `/_emulator` (also reachable through the `amlemu`
CLI), its Studio pages under `/studio`, Prometheus metrics on `/metrics`, the cloud metadata on `/metadata/endpoints`
and the managed-identity token endpoint on `/msi/token`:"""
