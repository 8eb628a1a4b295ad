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
from emulator.api.routes import (assets, blobs, computes, datastores, deployments, emulator, history, identity, jobs,
                                 locations, online_endpoints, workspaces)
from emulator.services import account_migration
from emulator.services import workspaces as workspace_service
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.api")

# ARM matches path segments case-insensitively; routes are declared in these spellings.
CANONICAL_SEGMENTS = {s.lower(): s for s in (
    "subscriptions", "resourceGroups", "providers", "Microsoft.MachineLearningServices", "workspaces",
    "computes", "locations", "vmSizes", "usages", "computeOperationsStatus", "listNodes", "metadata",
    "endpoints", "msi", "token", "Microsoft.Resources", "deployments", "operations", "codes", "environments",
    "versions", "startPendingUpload", "datastores", "listSecrets", "jobs", "cancel", "cancelStatus", "history",
    "runs", "details", "rundata", "discovery", "data", "dataversion", "batchGetResolvedUris",
    "onlineEndpoints", "listKeys", "regenerateKeys", "getLogs", "models")}
# Segments after these name a resource: a user's name keeps its casing even if it spells a keyword.
NAME_SLOTS = {"subscriptions", "resourcegroups", "workspaces", "computes", "locations", "deployments",
              "computeoperationsstatus", "codes", "environments", "versions", "datastores", "jobs", "runs",
              "onlineendpoints", "models"}
KNOWN_API_VERSIONS = {"2019-05-01", "2019-08-01", "2023-04-01", "2023-04-01-preview", "2023-08-01-preview",
                      "2023-10-01", "2024-01-01-preview", "2024-04-01", "2024-04-01-preview", "2024-10-01",
                      "2025-01-01-preview", "2025-12-01"}
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


def create_app(settings: Settings, store: Store | None = None, wake: Callable[[], None] = lambda: None) -> FastAPI:
    """`wake` tells the controller there is work (a submission, a cancel) so it need not wait for its next pass."""
    store = store or Store(settings.db_url)
    secret = tokens.load_secret(settings.data_dir / "token.key")
    with store.transaction() as repo:
        workspace_service.ensure_default(repo, settings, datetime.now(UTC))
        account_migration.migrate(repo, settings.data_dir)  # data of earlier versions: one account per workspace
    app = FastAPI(title="amlemu control plane", version="0.1.0",
                  description="Azure Machine Learning REST API, served locally.")
    app.state.context = Context(settings=settings, store=store, secret=secret, wake=wake)
    for router in (identity.router, workspaces.router, computes.router, locations.router, deployments.router,
                   assets.router, blobs.router, datastores.router, jobs.router, history.router, online_endpoints.router,
                   emulator.router):
        app.include_router(router)
    errors.install(app)
    app.add_middleware(ArmPaths)
    return app
