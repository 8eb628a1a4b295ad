"""A workspace's diagnosis (`workspaces.begin_diagnose`): what the emulator can check of what the workspace
relies on, run when the result is asked for, in Azure's DiagnoseResponseResult shape. Each check says what it
found: `Information` when it holds, `Warning` or `Error` when it does not.

- storage: the workspace's storage account folder takes a write (uploads, job outputs);
- key vault: the key that signs tokens and SAS, and the certificate authority of the HTTPS endpoints, are there;
- other: the controller reconciles (jobs and schedules move on only then) and the MLflow tracking server answers.
"""

import os
import time
import uuid
from pathlib import Path

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access
from emulator.services.blobs import BlobStore
from emulator.settings import Settings
from emulator.tracking.mlflow_server import MlflowServer

CONTROLLER_STALE_SECONDS = 30.0
# Each check's code when it holds, and when it does not.
STORAGE = ("StorageAccountWritable", "StorageAccountNotWritable")
TOKEN_KEY = ("TokenKeyPresent", "TokenKeyMissing")
CA = ("CertificateAuthorityPresent", "CertificateAuthorityMissing")
CONTROLLER = ("ControllerReconciling", "ControllerNotReconciling")
TRACKING = ("TrackingServerReachable", "TrackingServerUnreachable")
RESULT_LISTS = ("userDefinedRouteResults", "networkSecurityRuleResults", "resourceLockResults",
                "dnsResolutionResults", "storageAccountResults", "keyVaultResults", "containerRegistryResults",
                "applicationInsightsResults", "otherResults")


def _result(ok: bool, codes: tuple[str, str], message: str, level: str = "Error") -> dict:
    return {"code": codes[0] if ok else codes[1], "level": "Information" if ok else level, "message": message}


def _storage(settings: Settings, ref: WorkspaceRef) -> dict:
    account = blob_access.workspace_account(ref)
    folder = BlobStore(settings.data_dir).root / account
    probe = folder / f".amlemu-diagnose-{uuid.uuid4().hex}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"diagnose")
        probe.unlink()
    except OSError as exc:
        return _result(False, STORAGE, f"Storage account '{account}' ({folder}) takes no write: "
                                       f"{exc.strerror or exc}.")
    return _result(True, STORAGE, f"Storage account '{account}' takes writes.")


def _file(path: Path, codes: tuple[str, str], what: str) -> dict:
    try:
        ok = path.is_file() and path.stat().st_size > 0 and os.access(path, os.R_OK)
    except OSError:
        ok = False
    return _result(ok, codes, f"{what} ({path.name}) is {'there' if ok else 'missing or unreadable'}.")


def _controller(settings: Settings) -> dict:
    try:
        age = time.time() - settings.controller_alive.stat().st_mtime
    except OSError:
        return _result(False, CONTROLLER, "The controller has not reconciled since it started: jobs and schedules "
                                          "do not move on.", "Warning")
    ok = age <= max(CONTROLLER_STALE_SECONDS, 20 * settings.reconcile_interval_seconds)
    said = f"The controller reconciled {age:.0f} s ago" + ("." if ok else ": jobs and schedules do not move on.")
    return _result(ok, CONTROLLER, said, "Warning")


def _tracking(settings: Settings) -> dict:
    server = MlflowServer(settings.mlflow_url)
    try:
        answered = server.answers()
    finally:
        server.close()
    return _result(answered, TRACKING,
                   f"The MLflow tracking server ({settings.mlflow_url}) {'answers' if answered else 'does not answer'}.",
                   "Warning")


def diagnose(settings: Settings, ref: WorkspaceRef) -> dict:
    results = {name: [] for name in RESULT_LISTS}
    results["storageAccountResults"].append(_storage(settings, ref))
    results["keyVaultResults"] += [_file(settings.data_dir / "token.key", TOKEN_KEY, "The token key"),
                                   _file(settings.ca_dir / "ca.crt", CA,
                                         "The certificate authority")]
    results["otherResults"] += [_controller(settings), _tracking(settings)]
    return {"value": results}
