"""Bearer tokens of the emulated managed identity: JWTs signed with a secret kept in the data volume.

The SDK decodes them unverified (aud, tid, oid); whoever accepts one verifies its signature and its audience:
the management API takes tokens for ARM (the cloud metadata's resourceManager, the emulator's own URL, which
is what azure-ai-ml asks for, or Azure's own ARM audiences); the scoring router takes tokens for Azure ML's
data plane, `https://ml.azure.com`, the scope azure-ai-ml asks for an AADToken endpoint's key.
"""

import hmac
import os
import secrets
import time
import uuid
from pathlib import Path

import jwt

from emulator.errors import Unauthorized

TENANT_ID = "72f988bf-0000-0000-0000-00000000a4e1"
OBJECT_ID = "00000000-0000-0000-0000-0000000000e1"
LIFETIME_SECONDS = 24 * 3600
# ARM accepts these besides the cloud's resourceManager (its 401 names them): Azure CLI and older SDKs ask for them.
ARM_AUDIENCES = ("https://management.core.windows.net", "https://management.azure.com")
# What azure-ai-ml asks for an AADToken endpoint's key (constants AAD_TOKEN_RESOURCE_ENDPOINT) and for batch
# endpoints (the aml resource id derived from the cloud's portal URL): a scoring token, never a management one.
SCORING_AUDIENCE = "https://ml.azure.com"
ENDPOINT_TOKEN_AUDIENCE = "amlemu-scoring"  # an AMLToken endpoint's own token (POST .../token)
SCORING_AUDIENCES = (SCORING_AUDIENCE, ENDPOINT_TOKEN_AUDIENCE)
ENDPOINT_TOKEN_LIFETIME_SECONDS = 3600


def load_secret(path: Path) -> bytes:
    """The stack's secret, made by whichever service starts first: written aside and linked into place, so two
    starting at once cannot each keep a secret of their own (the api, the controller and the router must agree)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}")
        draft.write_bytes(secrets.token_bytes(32))
        draft.chmod(0o600)
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_bytes()


def identity_header(secret: bytes) -> str:
    """The value IDENTITY_HEADER must carry: derived from the token secret, printed by `amlemu env`."""
    return hmac.new(secret, b"identity-header", "sha256").hexdigest()[:32]


def node_token(secret: bytes, node_id: str) -> str:
    """A detached node's own credential for its files on the api (services/node_files.py): issued by the
    controller into the node's environment, which its jobs never see."""
    return hmac.new(secret, f"node:{node_id}".encode(), "sha256").hexdigest()


def node_token_valid(secret: bytes, node_id: str, authorization: str | None) -> bool:
    scheme, _, value = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(node_token(secret, node_id).encode(),
                                                              value.encode(errors="replace"))


def link_signature(secret: bytes, resource_id: str) -> str:
    """What a page link carries instead of a bearer token (a browser sends none): only a caller the api answered
    with the link can open the page."""
    return hmac.new(secret, f"page:{resource_id.lower()}".encode(), "sha256").hexdigest()[:32]


def link_signed(secret: bytes, resource_id: str, signature: str | None) -> bool:
    # as bytes: compare_digest refuses a str with characters beyond ASCII, which a caller may send
    return signature is not None and hmac.compare_digest(link_signature(secret, resource_id).encode(),
                                                         signature.encode(errors="replace"))


def issue(secret: bytes, audience: str, now: float | None = None) -> tuple[str, int]:
    issued = int(now if now is not None else time.time())
    expires = issued + LIFETIME_SECONDS
    claims = {"aud": audience.rstrip("/"), "iss": "https://sts.amlemu.local/", "iat": issued, "nbf": issued,
              "exp": expires, "tid": TENANT_ID, "oid": OBJECT_ID, "sub": OBJECT_ID,
              "upn": "amlemu-user@amlemu.local", "name": "amlemu user", "uti": uuid.uuid4().hex}
    return jwt.encode(claims, secret, algorithm="HS256"), expires


ROLE_CLAIM, SCOPE_CLAIM = "amlemu_role", "amlemu_scope"  # absent: the emulated identity, Owner everywhere


def principal_object_id(principal: str) -> str:
    """A named principal's object id: the same name always gets the same id, as a user keeps theirs in Entra."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"amlemu-principal:{principal}"))


def issue_for_role(secret: bytes, audience: str, principal: str, role: str, scope: str,
                   now: float | None = None) -> tuple[str, int]:
    """A management token for `principal`, holding `role` over `scope` (a workspace's ARM id, or '/' for all)."""
    issued = int(now if now is not None else time.time())
    expires = issued + LIFETIME_SECONDS
    object_id = principal_object_id(principal)
    claims = {"aud": audience.rstrip("/"), "iss": "https://sts.amlemu.local/", "iat": issued, "nbf": issued,
              "exp": expires, "tid": TENANT_ID, "oid": object_id, "sub": object_id,
              "upn": f"{principal}@amlemu.local", "name": principal, "uti": uuid.uuid4().hex,
              ROLE_CLAIM: role, SCOPE_CLAIM: scope}
    return jwt.encode(claims, secret, algorithm="HS256"), expires


def issue_endpoint_token(secret: bytes, endpoint_key: str, issued: int) -> tuple[str, int]:
    """An AMLToken endpoint's scoring token: good for that endpoint's scoring URL only."""
    expires = issued + ENDPOINT_TOKEN_LIFETIME_SECONDS
    claims = {"aud": ENDPOINT_TOKEN_AUDIENCE, "endpoint": endpoint_key, "iat": issued, "exp": expires}
    return jwt.encode(claims, secret, algorithm="HS256"), expires


RUN_AUDIENCE = "amlemu-run"  # a job's own token (MLFLOW_TRACKING_TOKEN, AZUREML_RUN_TOKEN): its workspace's tracking
RUN_TOKEN_LIFETIME_SECONDS = 30 * 24 * 3600  # as long as a job may run; Azure's run tokens outlive their runs too


def issue_run_token(secret: bytes, workspace_key: str, job_name: str, issued: int) -> str:
    """A job's token: good for its workspace's MLflow tracking and its own artifacts, nothing else (no management
    route takes its audience)."""
    claims = {"aud": RUN_AUDIENCE, "ws": workspace_key.lower(), "run": job_name, "iat": issued,
              "exp": issued + RUN_TOKEN_LIFETIME_SECONDS}
    return jwt.encode(claims, secret, algorithm="HS256")


def run_of(secret: bytes, authorization: str | None) -> dict | None:
    """The claims of a job's run token in a bearer header, if it is one of ours and still valid."""
    scheme, _, value = (authorization or "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    try:
        return jwt.decode(value, secret, algorithms=["HS256"], audience=RUN_AUDIENCE)
    except jwt.PyJWTError:
        return None


def workspace_caller(secret: bytes, authorization: str | None, workspace_key: str,
                     audiences: tuple[str, ...]) -> dict | None:
    """Who may use a workspace's tracking and run artifacts: a job of that workspace (its run token's claims), or
    else a valid management token for `audiences` (None); anything else is Unauthorized."""
    claims = run_of(secret, authorization)
    if claims is not None and claims.get("ws") == workspace_key.lower():
        return claims
    verify(secret, authorization, audiences)
    return None


def endpoint_of(secret: bytes, value: str) -> str | None:
    """The endpoint key a scoring token was issued for, if it is one of ours and still valid."""
    try:
        return jwt.decode(value, secret, algorithms=["HS256"], audience=ENDPOINT_TOKEN_AUDIENCE).get("endpoint")
    except jwt.PyJWTError:
        return None


def management_audiences(own_urls: list[str]) -> tuple[str, ...]:
    """The emulator's own URLs (the public one first: the one the cloud metadata names) and ARM's."""
    return (*(url.rstrip("/") for url in own_urls), *ARM_AUDIENCES)


def registry_audiences(own_urls: list[str]) -> tuple[str, ...]:
    """Registries' discovery and data plane take Azure ML's data-plane tokens too: azure-ai-ml's share() discovers
    the registry with a client asking for `https://ml.azure.com`."""
    return (*management_audiences(own_urls), SCORING_AUDIENCE)


def verify(secret: bytes, authorization: str | None, audiences: tuple[str, ...]) -> dict:
    """The claims of a valid bearer token for one of `audiences` (compared without a trailing slash)."""
    if not authorization:
        raise Unauthorized("Authentication failed. The 'Authorization' header is missing. "
                           "Run `eval \"$(amlemu env)\"` and use DefaultAzureCredential.")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("Authentication failed. The 'Authorization' header must be 'Bearer <token>'.",
                           code="InvalidAuthenticationToken")
    try:
        claims = jwt.decode(token, secret, algorithms=["HS256"], options={"verify_aud": False})
    except jwt.PyJWTError as exc:
        raise Unauthorized(f"The access token is invalid: {exc}. Get one from the emulator's identity endpoint "
                           "(IDENTITY_ENDPOINT from `amlemu env`).", code="InvalidAuthenticationToken") from exc
    audience = claims.get("aud") if isinstance(claims.get("aud"), str) else ""
    if audience.rstrip("/") not in audiences:
        raise Unauthorized(_wrong_audience(audience, audiences), code="InvalidAuthenticationTokenAudience")
    return claims


def _wrong_audience(audience: str, audiences: tuple[str, ...]) -> str:
    allowed = "','".join(audiences)
    message = (f"The access token has been obtained for wrong audience or resource '{audience}'. "
               f"It should exactly match with one of the allowed audiences '{allowed}'.")
    if SCORING_AUDIENCE in audiences and not set(ARM_AUDIENCES) & set(audiences):
        return (message + " A management token is not accepted on a scoring URL: "
                "ml_client.online_endpoints.get_keys gives the endpoint's token.")
    if audience.rstrip("/") in SCORING_AUDIENCES:
        return (message + " It is a scoring token (an online endpoint's): it is accepted only on scoring URLs; "
                f"the management API needs a token for '{audiences[0]}' (the cloud metadata's resourceManager).")
    return message


# The Studio's browser session (`amlemu studio`): a one-time login ticket the CLI gets with its bearer token, traded
# by the browser for a cookie. Both are "<expires>.<nonce>.<mac>", signed with the stack's secret.
SESSION_COOKIE = "amlemu_studio"
SESSION_SECONDS = 12 * 3600
TICKET_SECONDS = 120


def _signed_value(secret: bytes, kind: str, lifetime: int, now: float) -> str:
    body = f"{int(now) + lifetime}.{secrets.token_urlsafe(16)}"
    return f"{body}.{hmac.new(secret, f'{kind}:{body}'.encode(), 'sha256').hexdigest()[:32]}"


def _checked_value(secret: bytes, kind: str, value: str | None, now: float) -> str | None:
    """The nonce of a value we signed for `kind` that has not expired; None for anything else."""
    expires, _, rest = (value or "").partition(".")
    nonce, _, mac = rest.partition(".")
    want = hmac.new(secret, f"{kind}:{expires}.{nonce}".encode(), "sha256").hexdigest()[:32]
    if not (expires.isdigit() and nonce and hmac.compare_digest(want.encode(), mac.encode(errors="replace"))):
        return None
    return nonce if int(expires) > now else None


def studio_ticket(secret: bytes, now: float) -> str:
    return _signed_value(secret, "studio-ticket", TICKET_SECONDS, now)


def studio_ticket_nonce(secret: bytes, ticket: str | None, now: float) -> str | None:
    return _checked_value(secret, "studio-ticket", ticket, now)


def studio_session(secret: bytes, now: float) -> str:
    return _signed_value(secret, "studio-session", SESSION_SECONDS, now)


def studio_session_valid(secret: bytes, cookie: str | None, now: float) -> bool:
    return _checked_value(secret, "studio-session", cookie, now) is not None
