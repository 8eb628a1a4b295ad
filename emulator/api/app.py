"""create_app: the control plane's FastAPI application, built from Settings."""

import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from emulator import tokens
from emulator.api import errors
from emulator.api.deps import Context
from emulator.api.routes import (
    assets,
    batch_endpoints,
    batch_jobs,
    blobs,
    computes,
    datastores,
    deployments,
    emulator,
    execution,
    history,
    identity,
    jobs,
    locations,
    metrics,
    node_files,
    online_endpoints,
    registries,
    registry_resources,
    role_assignments,
    run_artifacts,
    schedules,
    studio,
    subscriptions,
    timeline,
    tracking,
    workspaces,
)
from emulator.services.facade import Services
from emulator.settings import Settings
from emulator.store.changes import Listener, mark_changed
from emulator.store.db import Store
from emulator.store.tables import (
    CapacityState,
    Compute,
    Job,
    Node,
    OnlineDeployment,
    OnlineEndpoint,
    QuotaOverride,
    Schedule,
    Workspace,
)

log = logging.getLogger("amlemu.api")

# ARM matches path segments case-insensitively; routes are declared in these spellings.
CANONICAL_SEGMENTS = {s.lower(): s for s in (
    "subscriptions", "resourceGroups", "providers", "Microsoft.MachineLearningServices", "workspaces",
    "computes", "locations", "vmSizes", "usages", "computeOperationsStatus", "listNodes", "metadata",
    "endpoints", "msi", "token", "Microsoft.Resources", "deployments", "operations", "codes", "environments",
    "versions", "startPendingUpload", "datastores", "listSecrets", "jobs", "cancel", "cancelStatus", "history",
    "runs", "details", "rundata", "discovery", "data", "dataversion", "batchGetResolvedUris",
    "onlineEndpoints", "listKeys", "regenerateKeys", "getLogs", "models", "registries", "registrymanagement",
    "mferp", "managementfrontend", "components", "tempdatarefs", "datarefs", "import", "schedules", "diagnose",
    "resyncKeys", "batchEndpoints", "quotas", "updateQuotas", "Microsoft.Authorization", "roleAssignments",
    "roleDefinitions", "execution", "experiments", "localrun")}
# Segments after these name a resource: a user's name keeps its casing even if it spells a keyword.
NAME_SLOTS = {"subscriptions", "resourcegroups", "workspaces", "computes", "locations", "deployments",
              "computeoperationsstatus", "codes", "environments", "versions", "datastores", "jobs", "runs",
              "onlineendpoints", "models", "registries", "components", "tempdatarefs", "datarefs", "schedules",
              "batchendpoints", "roleassignments", "roledefinitions", "experiments"}
KNOWN_API_VERSIONS = {"2019-05-01", "2019-08-01", "2023-04-01", "2023-04-01-preview", "2023-08-01-preview",
                      "2023-10-01", "2024-01-01-preview", "2024-04-01", "2024-04-01-preview", "2024-10-01",
                      "2025-01-01-preview", "2025-12-01", "2021-10-01-dataplanepreview", "2020-09-01-dataplanepreview",
                      "v1.0"}
# The SDK builds a datastore's blob URLs itself, host-style: https://<account>.blob.<storage suffix>/<container>/...
_BLOB_HOST = re.compile(rb"^([a-z0-9-]+)\.blob\.", re.IGNORECASE)


def _blob_host_account(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"host":
            match = _BLOB_HOST.match(value)
            return match[1].decode().lower() if match else None
    return None


class ArmPaths:
    """Canonicalises literal path segments and notes api-versions the emulator has not seen before.

    Host-style blob requests become the path-style /blob/<account>/... they mean, so one set of routes (and
    one SAS check) serves both."""

    def __init__(self, app: ASGIApp):
        self.app = app
        self.seen_versions: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        account = _blob_host_account(scope) if scope["type"] == "http" else None
        if account:
            scope["path"] = f"/blob/{account}{scope['path']}"
        # Blob names are case-sensitive user data: /blob/... paths are served as sent.
        if scope["type"] == "http" and scope["path"][:6].lower() == "/blob/":
            scope["path"] = "/blob/" + scope["path"][6:]
        elif scope["type"] == "http":
            segments = scope["path"].split("/")
            scope["path"] = "/".join(
                s if i and segments[i - 1].lower() in NAME_SLOTS else CANONICAL_SEGMENTS.get(s.lower(), s)
                for i, s in enumerate(segments))
            self._note_version(scope.get("query_string", b"").decode("latin-1"))
        await self.app(scope, receive, send)

    def _note_version(self, query: str) -> None:
        for part in query.split("&"):
            name, _, value = part.partition("=")
            if name == "api-version" and value not in KNOWN_API_VERSIONS | self.seen_versions \
                    and len(self.seen_versions) < 100:
                self.seen_versions.add(value)
                log.info("api-version %s is not one amlemu was written against; serving it anyway", value)


# What the controller acts on, and what the scoring router's table is read from (scoring/table.py).
CONTROLLER_TABLES = frozenset(t.__tablename__ for t in (Workspace, Compute, Node, Job, OnlineEndpoint,
                                                         OnlineDeployment, Schedule, QuotaOverride,
                                                         CapacityState))
ROUTING_TABLES = frozenset(t.__tablename__ for t in (OnlineEndpoint, OnlineDeployment))


def _now() -> datetime:
    return datetime.now(UTC)


def _tell(settings: Settings, wake: Callable[[], None]) -> Listener:
    """What a request committed goes to those who act on it: the scoring router, whose table is marked stale
    (the next scoring request rereads it), and the controller, nudged (best effort: its next pass finds the
    work all the same)."""
    def told(tables: frozenset[str]) -> None:
        if tables & ROUTING_TABLES:
            mark_changed(settings.routes_changed)
        if tables & CONTROLLER_TABLES:
            wake()
    return told


def create_app(settings: Settings, store: Store | None = None, wake: Callable[[], None] = lambda: None) -> FastAPI:
    """`wake` tells the controller there is work (a submission, a cancel) so it need not wait for its next pass:
    called after each request that changed what the controller acts on."""
    store = store or Store(settings.db_url)
    secret = tokens.load_secret(settings.data_dir / "token.key")
    services = Services.build(settings, store, secret, _now)
    services.workspaces.prepare()
    store.after_commit(_tell(settings, wake))
    app = FastAPI(title="amlemu control plane", version="0.1.0",
                  description="Azure Machine Learning REST API, served locally.")
    app.state.context = Context(settings=settings, secret=secret, services=services, clock=_now)
    for router in (identity.router, workspaces.router, computes.router, locations.router, deployments.router,
                   assets.router, blobs.router, datastores.router, jobs.router, history.router, online_endpoints.router,
                   registries.router, registry_resources.router, emulator.router, studio.router, tracking.router,
                   run_artifacts.router, schedules.router, batch_endpoints.router, batch_jobs.router, timeline.router, metrics.router,
                   role_assignments.router, subscriptions.router, execution.router, node_files.router):
        app.include_router(router)
    errors.install(app)
    app.add_middleware(ArmPaths)
    return app
