"""Unauthenticated bootstrap routes: cloud metadata, the emulated managed identity, health."""

import hmac
from typing import Annotated

from fastapi import APIRouter, Header, Query

from emulator import tokens
from emulator.api.deps import Ctx
from emulator.errors import BadRequest, Unauthorized

router = APIRouter()
CLOUD_NAME = "AzureMLEmulator"


@router.get("/metadata/endpoints")
def cloud_metadata(ctx: Ctx) -> list[dict]:
    base = f"{ctx.settings.public_url}/"
    return [{"name": CLOUD_NAME, "portal": "https://portal.azure.com", "resourceManager": base,
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
             "vmImageAliasDoc": "", "logAnalyticsResourceId": "https://api.loganalytics.io"}]


@router.get("/msi/token")
def managed_identity_token(
    ctx: Ctx,
    resource: Annotated[str | None, Query()] = None,
    x_identity_header: Annotated[str | None, Header()] = None,
) -> dict:
    if not x_identity_header or not hmac.compare_digest(x_identity_header, tokens.identity_header(ctx.secret)):
        raise Unauthorized("The X-IDENTITY-HEADER is missing or wrong: set IDENTITY_HEADER from `amlemu env`.",
                           target="X-IDENTITY-HEADER")
    if not resource:
        raise BadRequest("The 'resource' query parameter is required.", target="resource")
    token, expires = tokens.issue(ctx.secret, resource)
    return {"access_token": token, "expires_on": str(expires), "resource": resource, "token_type": "Bearer",
            "client_id": tokens.OBJECT_ID}


@router.get("/_emulator/health")
def health() -> dict:
    return {"status": "ok"}
