"""The scoring router: every endpoint's scoring URL, `POST /endpoints/<name>/score`.

It checks the key (or AMLToken, or AAD token), honours the `azureml-model-deployment` header, else picks a
deployment by traffic weight, round-robins over that deployment's ready instances, and forwards the request
with a minimal HTTP client (scoring/forward.py); a copy goes to a mirrored deployment when mirror traffic says so. An instance that
refuses the connection (it is going away) is skipped for the next one, so rollouts fail no request. A plain
ASGI app, to keep the added latency low; the routing table is refreshed from the store in the background, so
the router keeps serving while the api or the controller restart.
"""

import asyncio
import hmac
import itertools
import json
import logging
import random
import time
from collections.abc import Callable

from starlette.types import Receive, Scope, Send

from emulator import tokens
from emulator.domain import roles
from emulator.domain.serving import endpoints as rules
from emulator.domain.serving import model_server
from emulator.errors import Unauthorized
from emulator.scoring import forward, pod_hops, table, traffic
from emulator.scoring.metrics import ScoringMetrics
from emulator.settings import Settings
from emulator.store import changes
from emulator.store.db import Store

log = logging.getLogger("amlemu.scoring")
DEPLOYMENT_HEADER = b"azureml-model-deployment"  # raw ASGI headers are bytes
SERVER_KEY = model_server.KEY_HEADER.encode()  # added to each request forwarded: model servers refuse any without it
FORWARDED = {b"content-type", b"accept", b"x-ms-client-request-id", b"x-request-id"}


class Reply(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message
        self.unobserved: tuple[str, str, float] | None = None  # a deployment's refusal, counted once it is final


class Router:
    def __init__(self, settings: Settings, store: Store, secret: bytes, draw: Callable[[], float] | None = None):
        self.settings, self.store, self.secret = settings, store, secret
        self.draw = draw or random.Random().random
        self.routes: dict[str, table.Endpoint] = {}
        self.turns: dict[tuple[str, str], itertools.count] = {}
        self.pool = pod_hops.Hops(settings.data_dir)  # to model servers: containers, or pods on Kubernetes
        self._refresher: asyncio.Task | None = None
        self._publisher: asyncio.Task | None = None
        self._mirrors: set[asyncio.Task] = set()
        self.mirrors_dropped = 0  # copies not sent because scoring_max_mirrors were in flight
        self._refreshed = 0.0
        self._seen = 0  # the api's change mark the table is at least as new as
        self._reading = asyncio.Lock()
        self.metrics = ScoringMetrics()
        self.traffic = traffic.Publisher(self.metrics.registry, settings.scoring_traffic)  # for the Studio's endpoint page

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        await self.refresh()
        self._refresher = asyncio.create_task(self._refresh_forever())
        self._publisher = asyncio.create_task(self._publish_forever())

    async def stop(self) -> None:
        for task in (self._refresher, self._publisher):
            if task:
                task.cancel()
        self.pool.close()

    async def refresh(self) -> None:
        async with self._reading:
            started, seen = time.monotonic(), changes.changed_at(self.settings.routes_changed)
            self.routes = await asyncio.to_thread(table.load, self.store, self.secret)
            self._refreshed, self._seen = started, seen  # the table is the store as of then

    async def refresh_since(self, moment: float) -> None:
        """A table read after `moment`: the one being read now, if it began later, else a new read."""
        async with self._reading:
            if self._refreshed > moment:
                return
        await self.refresh()

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.scoring_refresh_seconds)
            try:
                await self.refresh()
            except Exception:  # noqa: BLE001 (a locked or restarting store: serve the last table meanwhile)
                log.exception("refreshing the routing table failed")

    async def _publish_forever(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.traffic.publish)
            except OSError:  # a full or read-only disk: the page says "no data" meanwhile
                log.exception("writing the traffic summary failed")
            await asyncio.sleep(traffic.PUBLISH_SECONDS)

    # ---------------------------------------------------------------- ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            status, headers, body = await self._handle(scope, receive)
        except Reply as reply:
            status, headers, body = reply.status, *_message(reply.message)
        except Exception:  # noqa: BLE001 (the stack goes to the log, never into the answer)
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            status, headers, body = 500, *_message("The scoring router failed to handle the request.")
        await send({"type": "http.response.start", "status": status,
                    "headers": headers + [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _handle(self, scope: Scope, receive: Receive) -> tuple[int, list, bytes]:
        parts = scope["path"].strip("/").split("/")
        if parts == ["health"]:
            return 200, [(b"content-type", b"text/plain")], b"ok"
        if parts == ["metrics"]:
            self._management(dict(scope["headers"]).get(b"authorization", b"").decode("latin-1"))
            return 200, [(b"content-type", self.metrics.content_type.encode())], self.metrics.exposition()
        if len(parts) != 3 or parts[0] != "endpoints" or parts[2] not in ("score", "swagger.json"):
            raise Reply(404, f"No scoring route at {scope['path']}: use /endpoints/<endpoint>/score.")
        arrived = time.monotonic()
        if changes.changed_at(self.settings.routes_changed) > self._seen:  # a stat: microseconds
            # The api changed keys, traffic or deployments and told its client so: never route on the old table.
            await self.refresh_since(arrived)
        body = await _read(scope, receive, self.settings.scoring_max_request_bytes)
        try:
            return await self._route(scope, parts, body)
        except Reply as refused:
            # Changed a moment ago, perhaps (an endpoint created, traffic moved, a key regenerated, an instance
            # ready): make sure the table is newer than the request before refusing. A timeout is final.
            if refused.status == 408 or self._refreshed > arrived:
                self._observe(refused)
                raise
        await self.refresh_since(arrived)
        try:
            return await self._route(scope, parts, body)
        except Reply as refused:
            self._observe(refused)
            raise

    def _observe(self, refused: Reply) -> None:
        """A refusal by a deployment, counted once: not the first try of a request tried again on a newer table."""
        if refused.unobserved:
            self.metrics.observe(*refused.unobserved[:2], refused.status, refused.unobserved[2])

    async def _route(self, scope: Scope, parts: list[str], body: bytes) -> tuple[int, list, bytes]:
        route = self.routes.get(parts[1].lower())
        if route is None:
            raise Reply(404, f"Online endpoint '{parts[1]}' does not exist.")
        headers = dict(scope["headers"])
        self._authorize(route, headers.get(b"authorization", b"").decode("latin-1"))
        deployment = self._deployment(route, headers.get(DEPLOYMENT_HEADER, b"").decode("latin-1").strip())
        forwarded = [(k, v) for k, v in scope["headers"] if k in FORWARDED]
        method = "GET" if parts[2] == "swagger.json" else scope["method"]
        mirror = rules.mirrored(route.mirror, self.draw()) if route.mirror and parts[2] == "score" else None
        if mirror and (shadow := route.deployment(mirror)):
            self._mirror(route, shadow, method, parts[2], forwarded, body)
        return await self._forward(route, deployment, method, parts[2], forwarded, body)

    def _authorize(self, route: table.Endpoint, authorization: str) -> None:
        scheme, _, credential = authorization.partition(" ")
        if scheme.lower() != "bearer" or not credential:
            raise Reply(401, "Authorization is missing: send 'Authorization: Bearer <key or token>' "
                             "(ml_client.online_endpoints.get_keys gives it).")
        if route.auth_mode == "Key":
            valid = any(hmac.compare_digest(credential.encode(), key.encode()) for key in route.keys)
        elif route.auth_mode == "AMLToken":
            valid = tokens.endpoint_of(self.secret, credential) == route.key
        else:
            try:  # the token azure-ai-ml gets for an AADToken endpoint; a management token is refused
                claims = tokens.verify(self.secret, authorization, (tokens.SCORING_AUDIENCE,))
                # a principal's token holding a role over one workspace (`amlemu token`) scores there only
                valid = roles.scope_covers(str(claims.get(tokens.SCOPE_CLAIM) or "/"), route.key)
            except Unauthorized as refused:
                raise Reply(401, f"The AADToken credential is not valid for endpoint '{route.name}': "
                                 f"{refused.message}") from None
        if not valid:
            raise Reply(401, f"The {route.auth_mode} credential is not valid for endpoint '{route.name}'.")

    def _deployment(self, route: table.Endpoint, pinned: str) -> table.Deployment:
        if pinned:
            deployment = route.deployment(pinned)
            if deployment is None:
                raise Reply(404, f"Deployment '{pinned}' (azureml-model-deployment header) does not exist in endpoint "
                                 f"'{route.name}'; it has: {', '.join(d.name for d in route.deployments.values())}.")
            return deployment
        name = rules.pick(route.traffic, self.draw())
        if name is None or (deployment := route.deployment(name)) is None:
            raise Reply(404, f"No valid deployments to route to in endpoint '{route.name}': give a deployment "
                             "traffic, or name one in the azureml-model-deployment header.")
        return deployment

    def _instances(self, route: table.Endpoint, deployment: table.Deployment) -> list[str]:
        """The deployment's ready instances, starting with the next one in turn."""
        addresses = deployment.addresses
        if not addresses:
            raise Reply(503, f"Deployment '{deployment.name}' of endpoint '{route.name}' has no ready instance yet.")
        turn = next(self.turns.setdefault((route.key, deployment.name), itertools.count()))
        start = turn % len(addresses)
        return [*addresses[start:], *addresses[:start]]

    def _management(self, authorization: str) -> None:
        """The metrics ask for the api's management token, as its own /metrics does."""
        try:
            tokens.verify(self.secret, authorization or None, tokens.management_audiences(self.settings.own_urls))
        except Unauthorized as refused:
            raise Reply(401, refused.message) from None

    async def _forward(self, route: table.Endpoint, deployment: table.Deployment, method: str, path: str,
                       headers: list, body: bytes) -> tuple[int, list, bytes]:
        started = time.monotonic()
        try:
            status, out, answer = await self._forward_once(route, deployment, method, path, headers, body)
        except Reply as refused:
            refused.unobserved = (route.name, deployment.name, started)
            raise
        except Exception:
            self.metrics.observe(route.name, deployment.name, 500, started)  # answered 500 (the router's own bug)
            raise
        self.metrics.observe(route.name, deployment.name, status, started)
        return status, out, answer

    async def _forward_once(self, route: table.Endpoint, deployment: table.Deployment, method: str, path: str,
                            headers: list, body: bytes) -> tuple[int, list, bytes]:
        instances = self._instances(route, deployment)
        # Each instance twice: a kept connection the server has just closed fails once, a fresh one does not.
        for address in instances + instances:
            try:
                response = await self.pool.request(address, method, path, [*headers, (SERVER_KEY, deployment.server_key)],
                                                   body, deployment.timeout, deployment.cluster)
            except asyncio.TimeoutError:
                raise Reply(408, f"Deployment '{deployment.name}' did not answer within its request timeout of "
                                 f"{deployment.timeout:g} s (requestSettings.requestTimeout).") from None
            except forward.Unreachable:  # refused or dropped: the instance is going away, try the next
                continue
            out = [(b"content-type", response.headers.get(b"content-type", b"application/json")),
                   (DEPLOYMENT_HEADER, deployment.name.encode())]
            return response.status, out, response.body
        raise Reply(503, f"No instance of deployment '{deployment.name}' answered; try again.")

    def _mirror(self, route: table.Endpoint, deployment: table.Deployment, method: str, path: str, headers: list,
                body: bytes) -> None:
        """A copy of the request; its answer is dropped, as Azure's mirror traffic does."""
        if len(self._mirrors) >= self.settings.scoring_max_mirrors:
            self.mirrors_dropped += 1
            log.warning("mirror copy to deployment '%s' dropped: %d already in flight (%d dropped so far)",
                        deployment.name, len(self._mirrors), self.mirrors_dropped)
            return

        async def send_copy() -> None:
            try:
                await self._forward(route, deployment, method, path, headers, body)
            except Reply as refused:
                self._observe(refused)
        task = asyncio.create_task(send_copy())
        self._mirrors.add(task)
        task.add_done_callback(self._mirrors.discard)


def _message(text: str) -> tuple[list, bytes]:
    return [(b"content-type", b"application/json")], json.dumps({"message": text}).encode()


async def _read(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The request body, refused (413) past `limit` bytes: announced so, before reading any, or on the way."""
    length = dict(scope["headers"]).get(b"content-length", b"")
    if length.isdigit() and int(length) > limit:
        raise _too_large(limit)
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _too_large(limit: int) -> Reply:
    return Reply(413, f"The request body is larger than the scoring limit of {limit} bytes "
                      "(AMLEMU_SCORING_MAX_REQUEST_BYTES).")


def create_router(settings: Settings) -> Router:
    return Router(settings, Store(settings.db_url), tokens.load_secret(settings.data_dir / "token.key"))
