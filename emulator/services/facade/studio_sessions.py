"""Who may look at the Studio's pages. A browser sends no bearer token: `amlemu studio` asks, with its token, for a
one-time login link; the browser trades it for a session cookie (HttpOnly, Secure, SameSite=Strict, signed and
expiring). A job's Web View link carries its own signature instead (tokens.link_signature), good for that job only.
The cookie opens pages and nothing else: no route that changes state reads it."""

import threading
from urllib.parse import quote

from emulator import tokens
from emulator.errors import Unauthorized
from emulator.services.facade.base import Service

LOGIN_HINT = "Run `amlemu studio` to open a session in your browser (it logs in with the emulated identity)."


class StudioSessions(Service):
    def __init__(self, settings, store, secret, clock):
        super().__init__(settings, store, secret, clock)
        self.used: dict[str, float] = {}  # ticket nonce -> when it expires: each ticket opens one session
        self.lock = threading.Lock()

    def login_url(self, next_page: str = "/studio") -> str:
        ticket = tokens.studio_ticket(self.secret, self.clock().timestamp())
        return f"{self.settings.public_url}/studio/login?ticket={ticket}&next={quote(next_page, safe='/')}"

    def open(self, ticket: str | None) -> str:
        """The session cookie's value for a ticket not used before; Unauthorized otherwise."""
        now = self.clock().timestamp()
        nonce = tokens.studio_ticket_nonce(self.secret, ticket, now)
        with self.lock:
            self.used = {n: t for n, t in self.used.items() if t > now - tokens.TICKET_SECONDS}
            if nonce is None or nonce in self.used:
                raise Unauthorized("This login link is not valid: it has been used, has expired, or was not made "
                                   f"by this emulator. {LOGIN_HINT}")
            self.used[nonce] = now
        return tokens.studio_session(self.secret, now)

    def check(self, cookie: str | None, resource: str | None, signature: str | None) -> None:
        """Unauthorized unless the session cookie is valid, or `signature` signs `resource` (a job's page)."""
        if tokens.studio_session_valid(self.secret, cookie, self.clock().timestamp()):
            return
        if resource and tokens.link_signed(self.secret, resource, signature):
            return
        raise Unauthorized(f"This page needs a Studio session. {LOGIN_HINT}")
