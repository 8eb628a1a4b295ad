"""Unauthenticated bootstrap routes: cloud metadata, the emulated managed identity, health."""

import hmac
from typing import Annotated

from fastapi import APIRouter, Header, Query

from emulator import tokens
from emulator.api.deps import Context, Ctx
from emulator.domain.ids import CLOUD_NAME
from emulator.errors import BadRequest, Unauthorized

router = APIRouter()
MAX_IDENTITY_HEADER = 256  # the real value is 32 hex digits


# ARM's three shapes: before 2019-05-01 the first one's few endpoints, then a list of clouds, from 2022-09-01 one cloud
LIST_SINCE, SINGLE_CLOUD_SINCE = "2019-05-01", "2022-09-01"


@router.get("/metadata/endpoints")
def cloud_metadata(ctx: Ctx, api_version: Annotated[str | None, Query(alias="api-version")] = None) -> list | dict:
    """The azure-ai-ml SDK reads the list (2019-05-01); `az cloud register --endpoint-resource-manager` the one cloud
    (2022-09-01), or in Azure CLI 2.72 and earlier the first shape (2015-01-01)."""
    cloud = _cloud(ctx)
    if not api_version or LIST_SINCE <= api_version < SINGLE_CLOUD_SINCE:
        return [cloud]
    if api_version >= SINGLE_CLOUD_SINCE:
        return cloud
    return {"galleryEndpoint": cloud["gallery"], "graphEndpoint": cloud["graph"], "portalEndpoint": cloud["portal"],
            "authentication": {k: cloud["authentication"][k] for k in ("loginEndpoint", "audiences")}}


def _cloud(ctx: Context) -> dict:
    base = f"{ctx.settings.public_url}/"
    return {"name": CLOUD_NAME, "portal": "https://portal.azure.com", "resourceManager": base,
            "authentication": {"loginEndpoint": "https://login.microsoftonline.com/", "audiences": [base],
                               "tenant": "common", "identityProvider": "AAD"},
            "suffixes": {"storage": f"{ctx.settings.public_host}:{ctx.settings.public_port}",
                         "acrLoginServer": "azurecr.io", "keyVaultDns": "vault.azure.net"},
            "graphAudience": "https://graph.windows.net/", "graph": "https://graph.windows.net/",
            "batch": "https://batch.core.windows.net/", "media": "https://rest.media.azure.net",
            "sqlManagement": "https://management.core.windows.net:8443/",
            "microsoftGraphResourceId": "https://graph.microsoft.com/",
            "appInsightsResourceId": "https://api.applicationinsights.io",
            "appInsightsTelemetryChannelResourceId": "https://dc.applicationinsights.azure.com/v2/track",
            "activeDirectoryDataLake": "https://datalake.azure.net/", "gallery": "https://gallery.azure.com/",
            "vmImageAliasDoc": "", "logAnalyticsResourceId": "https://api.loganalytics.io"}


@router.get("/msi/token")
def managed_identity_token(
    ctx: Ctx,
    resource: Annotated[str | None, Query()] = None,
    x_identity_header: Annotated[str | None, Header()] = None,
) -> dict:
    _check_identity_header(ctx, x_identity_header)
    if not resource:
        raise BadRequest("The 'resource' query parameter is required.", target="resource")
    token, expires = tokens.issue(ctx.secret, resource)
    return {"access_token": token, "expires_on": str(expires), "resource": resource, "token_type": "Bearer",
            "client_id": tokens.OBJECT_ID}


def _check_identity_header(ctx: Ctx, value: str | None) -> None:
    if value and (len(value) > MAX_IDENTITY_HEADER or not value.isascii() or not value.isprintable()):
        raise BadRequest(f"The X-IDENTITY-HEADER must be printable ASCII of at most {MAX_IDENTITY_HEADER} "
                         "characters: set IDENTITY_HEADER from `amlemu env`.", target="X-IDENTITY-HEADER")
    # Compared as bytes: compare_digest refuses str with non-ASCII characters (a TypeError, a 500).
    if not value or not hmac.compare_digest(value.encode(), tokens.identity_header(ctx.secret).encode()):
        raise Unauthorized("The X-IDENTITY-HEADER is missing or wrong: set IDENTITY_HEADER from `amlemu env`.",
                           target="X-IDENTITY-HEADER")


@router.get("/_emulator/health")
def health() -> dict:
    """The api is up (liveness: what `amlemu` commands check before they talk to it)."""
    return {"status": "ok"}


@router.get("/_emulator/ready")
def ready(ctx: Ctx) -> dict:
    """All it serves can be served: MLflow tracking too (a 503 naming it while its server starts). A stack is up,
    for `amlemu up` and the pytest plugin, once this answers."""
    ctx.services.tracking.ready()
    return {"status": "ready"}
