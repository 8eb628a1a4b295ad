"""Bearer tokens of the emulated managed identity: JWTs signed with a secret kept in the data volume.

The SDK decodes them unverified (aud, tid, oid); the management API verifies the signature.
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


def issue(secret: bytes, audience: str, now: float | None = None) -> tuple[str, int]:
    issued = int(now if now is not None else time.time())
    expires = issued + LIFETIME_SECONDS
    claims = {"aud": audience.rstrip("/"), "iss": "https://sts.amlemu.local/", "iat": issued, "nbf": issued,
              "exp": expires, "tid": TENANT_ID, "oid": OBJECT_ID, "sub": OBJECT_ID,
              "upn": "amlemu-user@amlemu.local", "name": "amlemu user", "uti": uuid.uuid4().hex}
    return jwt.encode(claims, secret, algorithm="HS256"), expires


def verify(secret: bytes, authorization: str | None) -> dict:
    if not authorization:
        raise Unauthorized("Authentication failed. The 'Authorization' header is missing. "
                           "Run `eval \"$(amlemu env)\"` and use DefaultAzureCredential.")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("Authentication failed. The 'Authorization' header must be 'Bearer <token>'.",
                           code="InvalidAuthenticationToken")
    try:
        return jwt.decode(token, secret, algorithms=["HS256"], options={"verify_aud": False})
    except jwt.PyJWTError as exc:
        raise Unauthorized(f"The access token is invalid: {exc}. Get one from the emulator's identity endpoint "
                           "(IDENTITY_ENDPOINT from `amlemu env`).", code="InvalidAuthenticationToken") from exc
